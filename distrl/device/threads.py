"""``Threads``: a device's blocking calls, each in a worker thread, and the threads that outlive them.

A blocking call (adbutils) cannot be interrupted: a caller cancelled, or out of time, leaves its thread to
finish on its own, within the socket timeout it was given. Such a thread may still deliver its command
meanwhile, so ``Threads`` keeps the threads its calls abandoned, and every later call (and whatever else
touches the device, through ``settle``) first waits until they have ended, each for at most its socket
timeout since it was abandoned: nothing a timed-out call sent can land on the device after the next one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio

__all__ = ["Threads"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Threads:
    """The blocking calls to one device (named ``name`` in warnings), each in a worker thread of the
    limiter ``limiter()`` returns (asked at each call: a limiter belongs to an event loop)."""

    def __init__(self, name: str, limiter: Callable[[], anyio.CapacityLimiter]) -> None:
        self._name = name
        self._limiter = limiter
        self._stragglers: list[tuple[_Call, float]] = []  # abandoned calls still running, and until when

    async def run(self, timeout_s: float, func: Callable[..., T], *args: object) -> T:
        """``func(*args)`` in a worker thread, once the threads of earlier abandoned calls have ended
        (``settle``); its errors propagate. ``func`` must bound every read it makes by ``timeout_s``: a
        cancelled call leaves the thread to finish on its own within it, and the next call waits for it."""
        await self.settle()
        call = _Call()

        def run() -> T:
            if not call.begin():
                raise RuntimeError("a device call abandoned before it started")  # nobody awaits it
            try:
                return func(*args)
            finally:
                call.done.set()

        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=self._limiter())
        finally:
            if call.abandon():
                self._stragglers.append((call, anyio.current_time() + timeout_s))

    async def settle(self) -> None:
        """Wait until the threads of abandoned calls have ended, each at most until its socket timeout
        has passed since it was abandoned (then it is let go, with a warning)."""
        while self._stragglers:
            call, until = self._stragglers[0]
            left_s = until - anyio.current_time()
            if left_s > 0 and not call.done.is_set():
                await anyio.to_thread.run_sync(call.done.wait, left_s, abandon_on_cancel=True)
            if not call.done.is_set():
                log.warning("%s: an abandoned device call runs on past its socket timeout", self._name)
            self._stragglers.pop(0)


class _Call:
    """Where one call's worker thread is: not started, running, ``done``; or dropped, when its caller
    gave up before it started (it will not run then)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        """Set when the thread has finished."""
        self._lock = threading.Lock()
        self._started = False
        self._dropped = False

    def begin(self) -> bool:
        """In the worker thread, first: whether to run (False once the caller gave up)."""
        with self._lock:
            self._started = not self._dropped
            return self._started

    def abandon(self) -> bool:
        """The caller is done with the call: whether its thread runs on without it."""
        with self._lock:
            self._dropped = not self._started
            return self._started and not self.done.is_set()
