"""The run's episodes on disk: the ledger offers each trajectory as it is counted, and the recorder
writes it (``distrl.episodes.EpisodeWriter``) in a thread, off the sessions' path.

Its queue is bounded: when the disk falls behind, an episode is dropped (counted), never waited for.
When the run stops, ``drain`` writes what is queued then, the episodes that still waited for the
judge included (for at most ``DRAIN_S``).
"""

from __future__ import annotations

import logging

import anyio

from distrl.episodes import EpisodeWriter
from distrl.records import Trajectory

__all__ = ["Recorder"]

log = logging.getLogger(__name__)

DRAIN_S = 30.0
"""Longest the stop waits for the queued episodes to be written."""


class Recorder:
    """Episodes into ``writer``'s folder, ``capacity`` of them queued at most."""

    def __init__(self, writer: EpisodeWriter, *, capacity: int = 256) -> None:
        self.writer = writer
        self._send, self._receive = anyio.create_memory_object_stream[Trajectory](capacity)
        self.dropped = 0
        """Episodes not written because the queue was full (the disk fell behind)."""
        self.failed = 0
        """Episodes that could not be written (disk full, no permission)."""

    def offer(self, trajectory: Trajectory) -> None:
        """Queue ``trajectory`` for writing; drop it if the queue is full. Never waits."""
        try:
            self._send.send_nowait(trajectory)
        except anyio.WouldBlock:
            self.dropped += 1

    async def run(self) -> None:
        """Write what is offered until cancelled (then ``drain`` writes the rest)."""
        async for trajectory in self._receive:
            # taken off the queue, it is written whatever happens: a stop now must not lose it
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._write, trajectory)

    async def drain(self) -> None:
        """Write what is still queued, for at most ``DRAIN_S``, shielded: once the run has stopped and
        nothing offers any more."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(DRAIN_S):
            while True:
                try:
                    trajectory = self._receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                await anyio.to_thread.run_sync(self._write, trajectory)

    def _write(self, trajectory: Trajectory) -> None:
        try:
            self.writer.write(trajectory)
        except (OSError, ValueError) as exc:
            self.failed += 1
            if self.failed == 1:
                log.warning("episodes: cannot write %s: %s (the run goes on without it)", trajectory.id, exc)
