"""The training loop: arrivals into the learner, updates in a thread, and the publish and checkpoint cadence.

Trajectories arrive on a bounded memory object stream from the ledger. ``run`` (async mode) adds them to
the learner and updates whenever ``learner.min_new_trajectories`` new ones have arrived; the update runs
in a thread so that the event loop stays free. Every ``run.publish_every`` updates the new weights go to
the publisher, which returns at once: no update waits for a worker. Checkpoints are written every
``run.checkpoint_every`` updates or ``run.checkpoint_every_s`` seconds, and by ``finish`` when the run
stops. ``train_round`` is sync mode's share: the round's updates, then a publication.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from distrl.config import LearnerSettings, RunSettings
from distrl.fleet.publisher import Publisher, snapshot
from distrl.records import Trajectory

if TYPE_CHECKING:
    from distrl.learner.checkpoint import Checkpoints
    from distrl.learner.core import Learner, UpdateReport
    from distrl.learner.replay import ReplayStats

__all__ = ["Trainer"]

log = logging.getLogger(__name__)


class Trainer:
    """Feeds the learner what arrives, updates it, publishes and checkpoints."""

    def __init__(
        self,
        learner: Learner,
        arrivals: MemoryObjectReceiveStream[Trajectory],
        *,
        settings: LearnerSettings,
        run: RunSettings,
        publisher: Publisher,
        checkpoints: Checkpoints,
        on_update: Callable[[UpdateReport, ReplayStats], None],
        progress: Callable[[], dict[str, int]] = dict,
        beside: Callable[[], dict[str, bytes]] = dict,
    ) -> None:
        self._learner = learner
        self._progress = progress
        """The run's counters a checkpoint keeps (``Learner.progress``)."""
        self._beside = beside
        """Files a checkpoint keeps beside the learner's, by name (the curriculum's), made on the event
        loop when the checkpoint is taken."""
        self._arrivals = arrivals
        self._settings = settings
        self._run = run
        self._publisher = publisher
        self._checkpoints = checkpoints
        self._on_update = on_update
        self._fresh = 0
        """Trajectories added since the last update."""
        self._received = 0
        self.stale = 0
        """Trajectories the learner refused as too old on arrival."""
        self._warned_stale = False
        self._checkpointed_added = -1
        """``ReplayStats.added`` at the last checkpoint."""
        self._checkpointed_at = time.monotonic()
        self.last: UpdateReport | None = None
        """The latest update's report (its losses and entropy for the progress line)."""
        self._failed = ""
        """Why an update failed, if one did: then no checkpoint is written over the last good one."""

    @property
    def updates(self) -> int:
        return self._learner.updates

    async def run(self) -> None:
        """Async mode: update whenever enough new trajectories have arrived, until cancelled."""
        ready = True
        while True:
            self._take_arrived()
            if not ready or self._fresh < self._settings.min_new_trajectories:
                try:
                    self._add(await self._arrivals.receive())
                except anyio.EndOfStream:
                    return
                ready = True
                continue
            self._fresh = 0
            ready = await self._update()  # False: the buffer has nothing to train on yet

    async def train_round(self) -> None:
        """Sync mode, after a round's barrier: one update per ``min_new_trajectories`` new trajectories
        (at least one), then a publication if the last update did not make one."""
        new = self._take_arrived()
        per_update = max(1, self._settings.min_new_trajectories)
        before = self._learner.updates
        for _ in range(max(1, math.ceil(new / per_update))):
            if not await self._update():
                break
        self._fresh = 0
        if self._learner.updates != before and self._learner.updates % self._run.publish_every:
            await self._publish()  # every round ends with a broadcast

    async def finish(self) -> None:
        """The run is over: add what arrived meanwhile and write the last checkpoint (shielded), unless an
        update failed: then the last good checkpoint stays the latest. The learner's other ranks stop."""
        with anyio.CancelScope(shield=True):
            try:
                self._take_arrived()
                if self._failed:
                    latest = self._checkpoints.latest()
                    log.error(
                        "no checkpoint written after a failed update; the last good one is %s",
                        latest or "none (there is none)",
                    )
                    return
                await self._checkpoint()
            finally:
                await anyio.to_thread.run_sync(self._learner.close)  # the learner's other ranks stop

    def _take_arrived(self) -> int:
        """Add every trajectory waiting in the stream, without waiting; how many there were."""
        count = 0
        while True:
            try:
                trajectory = self._arrivals.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return count
            self._add(trajectory)
            count += 1

    def _add(self, trajectory: Trajectory) -> None:
        self._received += 1
        self._fresh += 1
        if not self._learner.add(trajectory) and trajectory.steps and not trajectory.cut_short:
            self.stale += 1
            self._warn_if_stale()

    async def _update(self) -> bool:
        try:
            report = await anyio.to_thread.run_sync(self._learner.update)
        except Exception as exc:
            self._failed = str(exc) or type(exc).__name__
            raise
        if report is None:
            return False
        learner = self._learner
        self.last = report
        self._on_update(report, learner.stats())
        if learner.updates % self._run.publish_every == 0:
            await self._publish()
        every, every_s = self._run.checkpoint_every, self._run.checkpoint_every_s
        if (every and learner.updates % every == 0) or (
            every_s and time.monotonic() - self._checkpointed_at >= every_s
        ):
            await self._checkpoint()
        return True

    async def _publish(self) -> None:
        """Hand the learner's weights to the publisher as the next version (the copy runs in a thread)."""
        learner = self._learner
        tensors = await anyio.to_thread.run_sync(
            lambda: snapshot(learner.policy.adapter.state(), self._run.publish_dtype)
        )
        self._publisher.publish(learner.version, tensors)

    def _warn_if_stale(self) -> None:
        """Say so, once, when the learner refuses a quarter or more of what arrives as too old."""
        if self._warned_stale or self._received < 20 or 4 * self.stale < self._received:
            return
        self._warned_stale = True
        log.warning(
            "%d of %d trajectories arrived more than run.max_policy_lag = %d versions old and were not"
            " trained on; raise max_policy_lag, or learner.min_new_trajectories to update less often",
            self.stale,
            self._received,
            self._run.max_policy_lag,
        )

    async def _checkpoint(self) -> None:
        learner, checkpoints = self._learner, self._checkpoints
        latest = checkpoints.latest()
        added = learner.stats().added
        if latest is not None and latest.name == f"step-{learner.updates:09d}":
            if added == self._checkpointed_added:
                return  # nothing new since the last one
            # same update, more trajectories in the buffer (the run's last ones): write it again; until
            # the new one is in place, the checkpoint before it is the latest
            await anyio.to_thread.run_sync(shutil.rmtree, latest)
        self._checkpointed_added, self._checkpointed_at = added, time.monotonic()
        learner.progress = self._progress()
        files = self._beside()

        def fill(folder: Path) -> None:
            learner.save(folder)
            for name, data in files.items():
                (folder / name).write_bytes(data)

        folder = await anyio.to_thread.run_sync(lambda: checkpoints.write(learner.updates, fill))
        log.info("checkpoint: %s", folder)
