"""The probe: every host of an inventory reached at once, and the handshake every link begins with.

``probe_fleet`` (``python -m distrl probe``) starts the worker agent on every host concurrently, shakes
hands (protocol version, devices, compute), measures heartbeat round trips and shuts each worker down in
order: the cheapest end-to-end check that an inventory really works. ``handshake`` is the first exchange
of every link, the run's included.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import anyio

from distrl import __version__
from distrl.build import build_id
from distrl.config import HostEntry, Inventory, Timeouts, devices_json
from distrl.errors import DistrlError, ProtocolMismatch, TransportError, TransportTimeout, WireError
from distrl.transport import HostLink, open_host
from distrl.wire import PROTOCOL_VERSION, Ack, ErrorReport, Heartbeat, Hello, Message, Shutdown

M = TypeVar("M", bound=Message)


@dataclass(frozen=True, kw_only=True)
class HostReport:
    """What probing one host found."""

    host: str
    devices: tuple[str, ...] = ()
    """Devices the worker reported."""
    compute: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    """What the worker runs on (cpus, python, platform, pid)."""
    startup_s: float = 0.0
    """From starting the worker to its hello."""
    rtt_ms: tuple[float, ...] = ()
    """Heartbeat round-trip times."""
    error: str = ""
    """Why the probe failed; empty when it succeeded."""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def rtt_p50_ms(self) -> float:
        return statistics.median(self.rtt_ms) if self.rtt_ms else 0.0


async def probe_fleet(
    inventory: Inventory,
    *,
    heartbeats: int = 5,
    on_report: Callable[[HostReport], None] | None = None,
) -> list[HostReport]:
    """Probe every host concurrently; one report per host, in inventory order. Never raises for a host."""
    reports: dict[str, HostReport] = {}

    async def one(host: HostEntry) -> None:
        try:
            report = await probe_host(host, inventory.timeouts, heartbeats=heartbeats)
        except DistrlError as exc:
            report = HostReport(host=host.name, error=str(exc))
        reports[host.name] = report
        if on_report is not None:
            on_report(report)

    async with anyio.create_task_group() as tg:
        for host in inventory.hosts:
            tg.start_soon(one, host, name=f"probe {host.name}")
    return [reports[host.name] for host in inventory.hosts]


async def handshake(link: HostLink, timeouts: Timeouts, *, run_folder: Path | None = None) -> Hello:
    """Send the learner's hello to a freshly started worker and return its own (``worker_start_s``). A
    local host's worker is told ``run_folder`` (absolute), the run's, where its emulators write their logs.

    Raises ``ProtocolMismatch`` when the worker speaks another protocol version, the worker's own error
    when it refuses, and ``TransportError`` / ``TransportTimeout`` when it exits or stays silent."""
    host = link.host
    hello = Hello(
        id=0,
        role="learner",
        protocol=PROTOCOL_VERSION,
        distrl_version=__version__,
        host=host.name,
        devices=host.devices.serials,
        compute={},
        device_settings=devices_json(host.devices),
        run_folder=str(run_folder) if run_folder is not None and host.is_local else "",
    )
    await _send(link, hello, phase="hello")
    try:
        reply = await _expect(link, Hello, timeouts.worker_start_s, phase="hello")
    except ProtocolMismatch as exc:  # the worker's own refusal: another distrl there
        raise ProtocolMismatch(
            f"host {host.name!r}: {exc}; install the same distrl on both (`python -m distrl deploy`"
            " installs this one on SSH hosts)",
            ours=exc.theirs,  # the worker's "ours" is the learner's "theirs"
            theirs=exc.ours,
        ) from None
    if reply.protocol != PROTOCOL_VERSION:
        raise ProtocolMismatch(
            f"host {host.name!r}: the worker speaks protocol {reply.protocol}, the learner "
            f"{PROTOCOL_VERSION}; install the same distrl version on both",
            ours=PROTOCOL_VERSION,
            theirs=reply.protocol,
        )
    theirs = f"{reply.distrl_version} (build {reply.compute.get('build', 'unknown')})"
    ours = f"{__version__} (build {build_id()})"
    if theirs != ours:
        raise ProtocolMismatch(
            f"host {host.name!r} runs distrl {theirs}, the learner distrl {ours}: install the same distrl"
            f" on both (for its python, {host.python or 'the default'}; `python -m distrl deploy` installs"
            " this one on SSH hosts)",
            ours=ours,
            theirs=theirs,
        )
    return reply


async def probe_host(host: HostEntry, timeouts: Timeouts, *, heartbeats: int = 5) -> HostReport:
    """Start the worker on ``host``, shake hands, time ``heartbeats`` round trips, shut it down."""
    started = time.perf_counter()
    async with open_host(host, timeouts) as link:
        reply = await handshake(link, timeouts)
        startup_s = time.perf_counter() - started
        rtts = []
        for seq in range(heartbeats):
            sent = time.perf_counter()
            await _send(link, Heartbeat(id=seq + 1, seq=seq, sent_at_s=time.time()), phase="heartbeat")
            echo = await _expect(link, Heartbeat, timeouts.heartbeat_timeout_s, phase="heartbeat")
            if echo.seq != seq:
                raise WireError(f"host {host.name!r}: heartbeat {echo.seq} answered, {seq} expected")
            rtts.append(1000 * (time.perf_counter() - sent))
        await _send(link, Shutdown(id=heartbeats + 1, reason="probe complete"), phase="shutdown")
        await _expect(link, Ack, timeouts.cleanup_s, phase="shutdown")
    missing = str(reply.compute.get("devices_not_ready", ""))
    return HostReport(
        host=host.name,
        devices=reply.devices,
        compute=reply.compute,
        startup_s=startup_s,
        rtt_ms=tuple(rtts),
        error=f"host {host.name!r}: device(s) not working: {missing}" if missing else "",
    )


async def _expect(link: HostLink, kind: type[M], timeout_s: float, *, phase: str) -> M:
    """Receive the next message, which must be a ``kind``; the worker's own errors are re-raised."""
    name = link.host.name
    try:
        with anyio.fail_after(timeout_s):
            message = await link.stream.receive()
    except TimeoutError:
        raise TransportTimeout(
            f"host {name!r}: no answer to {phase} within {timeout_s:g} s",
            host=name,
            phase=phase,
            timeout_s=timeout_s,
        ) from None
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        raise _lost(link, phase) from None
    if isinstance(message, ErrorReport):
        raise message.error
    if not isinstance(message, kind):
        raise WireError(
            f"host {name!r}: expected {kind.__name__} during {phase}, got {type(message).__name__}"
        )
    return message


async def _send(link: HostLink, message: Message, *, phase: str) -> None:
    try:
        await link.stream.send(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        raise _lost(link, phase) from None


def _lost(link: HostLink, phase: str) -> TransportError:
    name = link.host.name
    return TransportError(
        f"host {name!r}: the worker exited during {phase} (see its output above)", host=name, phase=phase
    )
