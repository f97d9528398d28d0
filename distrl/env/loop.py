"""``EventLoop``: an anyio event loop in a daemon thread, for synchronous code that drives async devices.

Gymnasium's ``reset`` and ``step`` are synchronous and devices are async, so each environment keeps one
event loop running in a thread of its own and calls into it through a ``BlockingPortal``. The thread is
a daemon, so an environment nobody closed never holds the interpreter at exit (the threads of
``anyio.from_thread.start_blocking_portal`` would: they are joined before ``atexit`` runs).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["EventLoop"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

START_S = 10.0
"""Longest wait for the loop's thread to start."""


class EventLoop:
    """An event loop in a daemon thread; ``call`` awaits a function in it and returns what it returned."""

    def __init__(self, name: str) -> None:
        self._portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=anyio.run, args=(self._serve,), name=name, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_S) or self._portal is None:
            raise RuntimeError(f"the event loop thread {name!r} did not start within {START_S:g} s")

    async def _serve(self) -> None:
        try:
            async with BlockingPortal() as portal:
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()
        finally:
            self._ready.set()

    def call(self, function: Callable[[*_Ts], Awaitable[_T]], *args: *_Ts) -> _T:
        """``await function(*args)`` in the loop; its exception is raised here."""
        if self._portal is None:
            raise RuntimeError("the event loop is stopped")
        return self._portal.call(function, *args)

    def stop(self, timeout_s: float) -> None:
        """Cancel what still runs in the loop, end it, and wait up to ``timeout_s`` for its thread."""
        portal, self._portal = self._portal, None
        if portal is not None:
            portal.call(portal.stop, True)
        self._thread.join(timeout_s)
