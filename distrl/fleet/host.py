"""One supervised host: its worker started, set up, brought to the current weights, and restarted.

``HostSupervisor.supervise`` keeps one host's worker running: its opener (``open_host``: a subprocess or
SSH; or one handed in, such as a ``MemoryHost``'s), handshake, ``Setup`` (devices and the policy
replica), the catch-up push of the current weights, then its sessions, with the link's reader, heartbeats
and weight pusher beside them. A lost link (worker died, connection cut, malformed frame, silence past
``heartbeat_timeout_s``) ends that host's sessions; their tasks go back to the sampler, and the host is
started again after a backoff (1, 2, 4 … 30 s), at most ``run.max_restarts`` times in a row. The run
goes on with the hosts it has and says so.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from distrl.config import HostEntry, Timeouts
from distrl.errors import DeviceError, DistrlError
from distrl.fleet.link import Link, LinkLost
from distrl.fleet.probe import handshake
from distrl.fleet.publisher import Publisher
from distrl.fleet.stop import Stop
from distrl.transport import HostOpener, open_host
from distrl.wire import ErrorReport, Setup, Shutdown

__all__ = ["HostSupervisor"]

log = logging.getLogger(__name__)

LINK_ERRORS = (
    DistrlError,
    LinkLost,
    TimeoutError,
    OSError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)
"""What ends one host's link without ending the run."""


class HostSupervisor:
    """Supervises the run's hosts; knows which are up and how often they were restarted."""

    def __init__(
        self,
        *,
        timeouts: Timeouts,
        max_restarts: int,
        settings_json: str,
        run_folder: Path | None = None,
        stop: Stop,
        play: Callable[[Link], Awaitable[None]],
        publisher: Publisher | None,
        on_step: Callable[[], None],
        opener: HostOpener = open_host,
    ) -> None:
        self._timeouts = timeouts
        self._open = opener
        """How a host's worker is started: ``open_host`` (a subprocess or SSH), or one in its place."""
        self._max_restarts = max_restarts
        self._settings_json = settings_json
        self._run_folder = run_folder
        """The run's folder: a local host's worker writes its emulators' logs under it."""
        self._stop = stop
        self._play = play
        self._publisher = publisher
        self._on_step = on_step
        self.up: set[str] = set()
        self.up_until_stop: set[str] = set()
        """The hosts up, and those the run's stop shut down: what a run's final numbers count as up."""
        self.restarts = 0
        self.given_up: dict[str, str] = {}
        """Hosts past their restart budget, with their last error."""

    async def supervise(self, host: HostEntry) -> None:
        """Keep ``host``'s worker running and its sessions going, restarting it after a loss."""
        failures = 0
        last = ""
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                link, played_out = await self._run_once(host)
                if self._stop.is_set() or played_out:
                    return  # the run is over, or this host has played all it was given
                failures = 0 if time.monotonic() - started > 60 else failures + 1
                last = f"link lost: {link.lost}"
            except LINK_ERRORS as exc:
                failures += 1
                last = str(exc) or type(exc).__name__
                log.warning("host %s: %s", host.name, last)
            if failures > self._max_restarts:
                self.given_up[host.name] = last
                log.error(
                    "host %s: given up after %d failures in a row; the run goes on without it",
                    host.name,
                    failures,
                )
                return
            self.restarts += 1
            with anyio.move_on_after(min(30.0, 2.0 ** (failures - 1))):
                await self._stop.wait()

    async def _run_once(self, host: HostEntry) -> tuple[Link, bool]:
        """One life of the host's worker: its link, lost or not, and whether the host played all it was
        given (its sessions ended with the link up; the worker's exit after ``Shutdown`` then closes the
        link, and that is no loss)."""
        async with self._open(host, self._timeouts) as raw:
            hello = await handshake(raw, self._timeouts, run_folder=self._run_folder)
            missing = hello.compute.get("devices_not_ready")
            if missing and hello.compute.get("devices_working") == 0:
                raise DeviceError(f"host {host.name!r} has no working device: {missing}", host=host.name)
            if missing:  # their sessions fail, rest and retire; the others play on
                log.warning("host %s: device(s) not working: %s", host.name, missing)
            link = Link(raw, self._on_step)
            error: BaseException | None = None
            played_out = False
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.read)
                tg.start_soon(link.keep_alive, self._timeouts)
                try:
                    played_out = await self._serve(link, tg)
                except LINK_ERRORS as exc:  # raised here, not in a child task: no exception group
                    error = exc
                tg.cancel_scope.cancel()
            if error is not None:
                raise error
        return link, played_out

    async def _serve(self, link: Link, tg: anyio.abc.TaskGroup) -> bool:
        """Set the worker up, bring it to the current weights, run its sessions, then say goodbye; whether
        the sessions ended with the link up."""
        timeouts = self._timeouts
        reply = await link.request(
            Setup(id=link.next_id(), settings=self._settings_json), timeouts.worker_start_s
        )
        if isinstance(reply, ErrorReport):
            raise reply.error
        if self._publisher is not None:
            await self._publisher.catch_up(link)
            tg.start_soon(self._publisher.serve, link)
        self.up.add(link.name)
        self.up_until_stop.add(link.name)
        log.info("host %s: up, %d device(s)", link.name, len(link.devices))
        try:
            await self._play(link)
        finally:
            self.up.discard(link.name)
            if not self._stop.is_set():  # lost or done while the run goes
                self.up_until_stop.discard(link.name)
        if link.lost:
            return False
        with anyio.move_on_after(timeouts.cleanup_s), contextlib.suppress(*LINK_ERRORS):
            await link.request(Shutdown(id=link.next_id(), reason="run complete"), timeouts.cleanup_s)
        return True
