"""The run's stop: an event every part can wait on, which remembers why it was set first."""

from __future__ import annotations

import anyio

__all__ = ["Stop"]


class Stop:
    """Set once, by whichever part ends the run first: ``goal`` (the ledger has its episodes),
    ``deadline`` (``run.duration_s``), ``hosts`` (every host is done or given up), ``judge`` (it gave
    no verdict for ``judge.unreachable_s``)."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.reason = ""

    def set(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()
