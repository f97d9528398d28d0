"""What the user sees of a run: a progress line every few seconds, and TensorBoard scalars.

``Gauges`` reads the run's numbers (``RunStats``) from the parts that own them: the sampler's tasks handed
out and failed, the ledger's arrivals, the hosts' restarts, the sessions' retired devices, the judge's
queue, the publisher's pushes and the trainer's updates. ``Curves`` is the run's TensorBoard: ``update``
writes the ``learner/`` and ``replay/`` scalars of each update, ``sample`` one episode in ``SAMPLE_EVERY``
under ``episodes/`` (its final screen, its steps as text). ``Board.tick`` takes a fresh snapshot, derives
the step rate since the last tick (the last, ``close``'s: over the whole run), logs the progress line,
hands the snapshot to the caller's ``on_progress`` and writes the ``collect/``, ``fleet/``, ``weights/``
and (with a judge) ``judge/`` scalars (verdicts, requests, retries, latency, tokens).

The curves take what the ledger and the trainer hand them and the board reads the parts, so every part is
built before the board, and the board last.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from PIL import Image

from distrl.fleet.ledger import RunStats
from distrl.fleet.stop import Stop
from distrl.records import Trajectory

if TYPE_CHECKING:
    from distrl.fleet.host import HostSupervisor
    from distrl.fleet.ledger import Ledger
    from distrl.fleet.publisher import Publisher
    from distrl.fleet.scoring import Judging
    from distrl.fleet.session import Sessions
    from distrl.fleet.training import Trainer
    from distrl.learner.core import UpdateReport
    from distrl.learner.replay import ReplayStats
    from distrl.tasks import TaskSampler

__all__ = ["PROGRESS_EVERY_S", "Board", "Curves", "Gauges"]

log = logging.getLogger(__name__)

SAMPLE_EVERY = 50
"""One episode in this many (the first included) goes to TensorBoard as an image and text."""
PROGRESS_EVERY_S = 5.0

_LEARNER_SCALARS = (
    "actor_loss",
    "critic_loss",
    "entropy",
    "mean_rho",
    "clipped_share",
    "mean_advantage",
    "mean_value",
    "mean_priority",
    "kl",
    "wall_s",
)


STRIP_WIDTH = 160
"""Width in pixels of each screen in a sample episode's strip."""


def _strip(trajectory: Trajectory, most: int = 8) -> Image.Image:
    """The episode's first ``most`` screens side by side, each with its step's tap or swipe drawn (a red
    dot where the finger went down, a blue one where it came up)."""
    from PIL import ImageDraw

    from distrl.records import Action

    tiles = []
    for step in trajectory.steps[:most]:
        with Image.open(io.BytesIO(step.observation.screenshot)) as image:
            scale = STRIP_WIDTH / image.width
            tile = image.convert("RGB").resize((STRIP_WIDTH, max(1, round(image.height * scale))))
        action = step.action
        if isinstance(action, Action) and action.touch is not None and action.lift is not None:
            draw = ImageDraw.Draw(tile)
            for (y, x), colour in ((action.lift, (0, 120, 255)), (action.touch, (255, 0, 80))):
                cx, cy = x * tile.width, y * tile.height
                draw.ellipse((cx - 6, cy - 6, cx + 6, cy + 6), fill=colour, outline=(255, 255, 255), width=2)
        tiles.append(tile)
    strip = Image.new("RGB", (sum(t.width + 4 for t in tiles), max(t.height for t in tiles)), (255, 255, 255))
    left = 0
    for tile in tiles:
        strip.paste(tile, (left, 0))
        left += tile.width + 4
    return strip


@dataclasses.dataclass(frozen=True, kw_only=True)
class Gauges:
    """The parts a run's numbers are read from; called, the numbers now (``RunStats``), each read from the
    part that owns it. ``collect`` has no publisher and no trainer."""

    stop: Stop
    sampler: TaskSampler
    sessions: Sessions
    ledger: Ledger
    hosts: HostSupervisor
    host_count: int
    """The inventory's hosts."""
    judging: Judging | None = None
    publisher: Publisher | None = None
    trainer: Trainer | None = None
    goal: int = 0
    """The episode budget (0: none)."""
    deadline_s: float = 0.0
    """The time budget (0: none)."""

    def __call__(self) -> RunStats:
        ledger, hosts, judging = self.ledger, self.hosts, self.judging
        publisher, trainer = self.publisher, self.trainer
        last = trainer.last if trainer else None
        lag_p50, host_lag_p50 = ledger.lag_p50()
        return RunStats(
            handed_out=self.sampler.handed_out,
            completed=ledger.completed,
            failed=self.sampler.failed.copy(),
            requeued=self.sampler.requeued,
            successes=ledger.successes,
            steps=ledger.steps,
            steps_streamed=ledger.steps_streamed,
            device_errors=ledger.device_errors,
            cut_short=ledger.cut_short,
            unscored=ledger.unscored,
            judging=judging.waiting if judging else 0,
            judge=judging.judge.stats.scalars() if judging else {},
            judge_unreachable=judging.unreachable if judging else "",
            actor_loss=last.actor_loss if last and last.trained_steps else None,
            entropy=last.entropy if last else None,
            goal_episodes=self.goal,
            deadline_s=self.deadline_s,
            restarts=hosts.restarts,
            stale=trainer.stale if trainer else 0,
            training=trainer is not None,
            updates=trainer.updates if trainer else 0,
            weight_bytes=publisher.bytes if publisher else 0,
            weight_pushes=publisher.pushes if publisher else 0,
            started=ledger.started,
            policy_version=publisher.version if publisher else 0,
            lag_p50=lag_p50,
            host_lag_p50=host_lag_p50,
            hosts_up=len(hosts.up_until_stop),  # the stop's shutdown does not count
            hosts=self.host_count,
            given_up=dict(hosts.given_up),
            retired=self.sessions.retired,
            ended=self.stop.reason,
            recent=ledger.recent.copy(),
            recent_greedy=ledger.recent_greedy.copy(),
        )


class Curves:
    """The run's TensorBoard in ``folder``: what the ledger (``sample``) and the trainer (``update``)
    hand it, and the board's snapshots (``write``). ``env_steps_before`` and ``episodes_before``: the
    runs this one resumes, whose curves it goes on from."""

    def __init__(
        self,
        folder: Path,
        *,
        devices: int,
        push_s: Callable[[], float | None] = lambda: None,
        env_steps_before: int = 0,
        episodes_before: int = 0,
    ) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self._writer: Any = SummaryWriter(log_dir=str(folder))
        self._devices = max(1, devices)
        self._push_s = push_s
        """Seconds the latest weight push took (None before the first)."""
        self._env_steps_before = env_steps_before
        """Environment steps of the runs this one resumes: the collection scalars' x-axis goes on from it."""
        self._episodes_before = episodes_before
        self._arrived = 0

    def sample(self, trajectory: Trajectory) -> None:
        """Every ``SAMPLE_EVERY``-th arrival (the first included), under ``episodes/`` at the number of
        episodes arrived so far: its steps as text, its screens as a strip with each tap drawn, and its
        final screen."""
        self._arrived += 1
        if (self._arrived - 1) % SAMPLE_EVERY:
            return
        screen = trajectory.final_observation or (
            trajectory.steps[-1].observation if trajectory.steps else None
        )
        outcome = {True: "success", False: "failure", None: "unscored"}[trajectory.success]
        rows = [
            f"**{trajectory.task.goal}** ({trajectory.task.id}): {outcome} ({trajectory.end_reason.value})"
        ]
        if trajectory.verdict:
            rows.append(f"judge: {trajectory.verdict}")
        rows += ["", "| step | output | reward |", "|---|---|---|"]
        rows += [
            f"| {step.index} | {' '.join(step.output.split())[:200].replace('|', '/')} | {step.reward:g} |"
            for step in trajectory.steps
        ]
        step = self._episodes_before + self._arrived
        self._writer.add_text("episodes/steps", "\n".join(rows), step)
        if screen is not None:
            import numpy

            with Image.open(io.BytesIO(screen.screenshot)) as image:
                pixels = numpy.asarray(image.convert("RGB"))
            self._writer.add_image("episodes/final_screen", pixels, step, dataformats="HWC")
        if trajectory.steps:
            import numpy

            strip = numpy.asarray(_strip(trajectory))
            self._writer.add_image("episodes/steps", strip, step, dataformats="HWC")

    def update(self, report: UpdateReport, replay: ReplayStats) -> None:
        step = report.update
        for name in _LEARNER_SCALARS:
            if name == "actor_loss" and not report.trained_steps:
                continue  # the critics' warm-up (or filters that kept nothing): no actor loss to show
            self._writer.add_scalar(f"learner/{name}", getattr(report, name), step)
        for name, value in report.losses.items():  # the algorithm's own named losses and what it reports
            self._writer.add_scalar(f"learner/loss/{name}", value, step)
        for name, value in report.stats.items():
            if name not in _LEARNER_SCALARS:
                self._writer.add_scalar(f"learner/{name}", value, step)
        if report.staleness:
            import torch

            self._writer.add_histogram("learner/staleness", torch.tensor(report.staleness), step)
        self._writer.add_scalar("replay/trajectories", replay.trajectories, step)
        self._writer.add_scalar("replay/dropped_stale", replay.dropped_stale, step)

    def write(self, stats: RunStats, *, final: bool) -> None:
        """``stats`` as scalars (``final``: the snapshot after the shutdown, whose hosts are down and
        in-flight episodes stopped: only the counts of episodes)."""
        # one x-axis for everything collected: environment steps, going on across --resume (the learner's
        # scalars use the update number, which a resumed learner goes on from too)
        writer, x = self._writer, self._env_steps_before + stats.steps_streamed
        if stats.scored:  # no rate before the first scored episode
            writer.add_scalar("collect/success_rate", stats.success_rate, x)
        if stats.recent:
            writer.add_scalar("collect/success_rate_last_100", stats.recent_success_rate, x)
        if stats.recent_greedy:
            writer.add_scalar("collect/greedy_success_rate_last_100", stats.recent_greedy_success_rate, x)
        writer.add_scalar("collect/trajectories", self._episodes_before + stats.completed, x)
        # episodes the stop cut off are not failures
        writer.add_scalar("collect/failed", stats.failures, x)
        writer.add_scalar("collect/stale", stats.stale, x)
        if stats.unscored:
            writer.add_scalar("collect/unscored", stats.unscored, x)
        if stats.judge:
            writer.add_scalar("judge/waiting", stats.judging, x)
            for name, value in stats.judge.items():
                writer.add_scalar(f"judge/{name}", value, x)
        if final:
            writer.flush()
            return
        writer.add_scalar("collect/steps_per_s", stats.steps_per_s, x)
        writer.add_scalar("fleet/hosts_up", stats.hosts_up, x)
        writer.add_scalar("fleet/device_utilisation", stats.in_flight / self._devices, x)
        writer.add_scalar("fleet/restarts", stats.restarts, x)
        writer.add_scalar("weights/bytes", stats.weight_bytes, x)
        push_s = self._push_s()
        if push_s is not None:
            writer.add_scalar("weights/push_s", push_s, x)
        writer.flush()

    def close(self) -> None:
        self._writer.close()


class Board:
    """Progress lines on stderr, and ``snapshot`` (``Gauges``, say) as scalars in ``curves`` (none:
    progress only)."""

    def __init__(
        self,
        snapshot: Callable[[], RunStats],
        *,
        curves: Curves | None = None,
        on_progress: Callable[[RunStats], None] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._curves = curves
        self._on_progress = on_progress
        self._last_steps = 0
        self._last_time = time.monotonic()

    async def run(self, stop: Stop) -> None:
        """A tick every ``PROGRESS_EVERY_S`` until ``stop``."""
        while not stop.is_set():
            with anyio.move_on_after(PROGRESS_EVERY_S):
                await stop.wait()
            self.tick()

    def tick(self, *, final: bool = False) -> RunStats:
        """A fresh snapshot: logged, given to ``on_progress`` and written to TensorBoard (``final``: the
        snapshot after the shutdown, whose hosts are down and in-flight episodes stopped, writes only
        the counts of episodes)."""
        stats = self._snapshot()
        now = time.monotonic()
        if final:  # what the run returns: its rate over the whole run
            stats.steps_per_s = stats.steps_streamed / max(1e-9, stats.elapsed_s)
        else:
            stats.steps_per_s = (stats.steps_streamed - self._last_steps) / max(1e-9, now - self._last_time)
        self._last_steps, self._last_time = stats.steps_streamed, now
        log.info("%s", stats.line())
        if self._on_progress is not None:
            self._on_progress(stats)
        if self._curves is not None:
            self._curves.write(stats, final=final)
        return stats

    def close(self) -> RunStats:
        """The last tick, then the TensorBoard files closed; the run's final numbers."""
        stats = self.tick(final=True)
        if self._curves is not None:
            self._curves.close()
        return stats
