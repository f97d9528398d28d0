"""What the user sees of a run: a progress line every few seconds, and TensorBoard scalars.

``Board.tick`` takes a fresh ``RunStats`` snapshot, derives the step rate since the last tick, logs the
progress line, hands the snapshot to the caller's ``on_progress`` and writes the ``collect/``, ``fleet/``,
``weights/`` and (with a judge) ``judge/`` scalars (verdicts, requests, retries, latency, tokens);
``Board.update`` writes the ``learner/`` and ``replay/`` scalars of each update; ``Board.sample`` one
episode in ``SAMPLE_EVERY`` under ``episodes/`` (its final screen, its steps as text).
"""

from __future__ import annotations

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
    from distrl.learner.core import UpdateReport
    from distrl.learner.replay import ReplayStats

__all__ = ["PROGRESS_EVERY_S", "Board"]

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


class Board:
    """Progress lines on stderr and TensorBoard scalars (``None`` folder: progress only)."""

    def __init__(
        self,
        snapshot: Callable[[], RunStats],
        *,
        folder: Path | None,
        devices: int,
        push_s: Callable[[], float | None] = lambda: None,
        on_progress: Callable[[RunStats], None] | None = None,
        env_steps_before: int = 0,
        episodes_before: int = 0,
    ) -> None:
        self._snapshot = snapshot
        self._env_steps_before = env_steps_before
        """Environment steps of the runs this one resumes: the collection scalars' x-axis goes on from it."""
        self._episodes_before = episodes_before
        self._devices = max(1, devices)
        self._push_s = push_s
        self._on_progress = on_progress
        self._writer: Any = None
        if folder is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(folder))
        self._last_steps = 0
        self._last_time = time.monotonic()
        self._arrived = 0

    def sample(self, trajectory: Trajectory) -> None:
        """Every ``SAMPLE_EVERY``-th arrival (the first included), under ``episodes/`` at the number of
        episodes arrived so far: its steps as text, its screens as a strip with each tap drawn, and its
        final screen."""
        self._arrived += 1
        if self._writer is None or (self._arrived - 1) % SAMPLE_EVERY:
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
        if self._writer is None:
            return
        step = report.update
        for name in _LEARNER_SCALARS:
            if name == "actor_loss" and not report.trained_steps:
                continue  # the critics' warm-up (or filters that kept nothing): no actor loss to show
            self._writer.add_scalar(f"learner/{name}", getattr(report, name), step)
        if report.staleness:
            import torch

            self._writer.add_histogram("learner/staleness", torch.tensor(report.staleness), step)
        self._writer.add_scalar("replay/trajectories", replay.trajectories, step)
        self._writer.add_scalar("replay/dropped_stale", replay.dropped_stale, step)

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
        stats.steps_per_s = (stats.steps_streamed - self._last_steps) / max(1e-9, now - self._last_time)
        self._last_steps, self._last_time = stats.steps_streamed, now
        log.info("%s", stats.line())
        if self._on_progress is not None:
            self._on_progress(stats)
        if self._writer is not None:
            self._scalars(stats, final=final)
        return stats

    def _scalars(self, stats: RunStats, *, final: bool) -> None:
        # one x-axis for everything collected: environment steps, going on across --resume (the learner's
        # scalars use the update number, which a resumed learner goes on from too)
        writer, x = self._writer, self._env_steps_before + stats.steps_streamed
        if stats.scored:  # no rate before the first scored episode
            writer.add_scalar("collect/success_rate", stats.success_rate, x)
        if stats.recent:
            writer.add_scalar("collect/success_rate_last_100", stats.recent_success_rate, x)
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

    def close(self) -> RunStats:
        """The last tick, then the TensorBoard files closed; the run's final numbers."""
        stats = self.tick(final=True)
        if self._writer is not None:
            self._writer.close()
        return stats
