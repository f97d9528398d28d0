"""Simulated phones as emulators the real adb server sees: ``serve_phones``.

Phone ``k`` listens as an emulator does, on loopback only: its console on ``base_port + 2k`` and its
adbd on ``base_port + 2k + 1``, so the adb server names it ``emulator-<console port>``. With
``register_with`` set to the adb server's port, each phone announces itself with the smart-socket
request ``host:emulator:<adbd port>`` (what a starting emulator does) and is listed at once, without
waiting for the server's port scan; a phone announces itself again after a crash or reboot.

``serve_phones`` binds every port before it starts anything, so a port in use fails the whole call
with one ``OSError`` naming the port; readiness is ``task_status.started(list of ServedPhone)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Listener, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from distrl.sim.adbd import Adbd
from distrl.sim.console import DEFAULT_TOKEN_FILE, SNAPSHOT_FILE, Console
from distrl.sim.latency import FaultModel, FaultRates, LatencyModel, LatencyProfile
from distrl.sim.phone import Phone, PhoneConfig

__all__ = ["ServedPhone", "serve_phones", "register_emulator", "REGISTER_S"]

logger = logging.getLogger(__name__)

REGISTER_S = 5.0
"""Limit on announcing a phone to the adb server, seconds."""


@dataclass(frozen=True, slots=True)
class ServedPhone:
    """One phone being served, as ``serve_phones`` reports it."""

    serial: str
    """The adb serial, ``emulator-<console port>``."""
    console_port: int
    adb_port: int
    phone: Phone
    """The phone itself (for checks in the same process; use ``adbd.call`` to touch it safely)."""
    adbd: Adbd


async def register_emulator(
    adb_server_port: int, adb_port: int, *, after_drop: bool = False, timeout_s: float = REGISTER_S
) -> None:
    """Ask the adb server on ``adb_server_port`` to attach the emulator whose adbd is on ``adb_port``.

    The server ignores a request for an emulator it still lists, so: if it lists this one and
    ``after_drop`` is false, there is nothing to do; if ``after_drop`` is true (we have just dropped
    its connections), we first wait until the server has let the old attachment go, which takes it
    about 250 ms. Raises ``OSError`` when the server cannot be reached, ``TimeoutError`` past
    ``timeout_s``.
    """
    serial = f"emulator-{adb_port - 1}"
    with anyio.fail_after(timeout_s):
        async with await _smart_socket(adb_server_port, "host:track-devices") as stream:
            reader = BufferedByteReceiveStream(stream)
            while True:
                block = await reader.receive_exactly(int(await reader.receive_exactly(4), 16))
                listed = {line.split("\t")[0] for line in block.decode().splitlines()}
                if serial not in listed:
                    break
                if not after_drop:
                    return
        async with await _smart_socket(adb_server_port, f"host:emulator:{adb_port}", reply=False) as stream:
            # The server sends no reply: it dials the adbd, then closes this connection.
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while await stream.receive():
                    pass


async def _smart_socket(port: int, request: str, *, reply: bool = True) -> SocketStream:
    """A connection to the adb server on ``port`` that sent ``request`` (and read its ``OKAY``)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    try:
        data = request.encode()
        await stream.send(b"%04x%s" % (len(data), data))
        status = await BufferedByteReceiveStream(stream).receive_exactly(4) if reply else b"OKAY"
        if status != b"OKAY":
            raise OSError(f"the adb server answered {request!r} with {status!r}")  # noqa: TRY301
    except BaseException:
        await stream.aclose()
        raise
    return stream


async def serve_phones(
    count: int,
    *,
    base_port: int = 5554,
    phone_config: PhoneConfig | None = None,
    latency: LatencyProfile | None = None,
    time_scale: float = 1.0,
    faults: FaultRates | None = None,
    token_file: Path = DEFAULT_TOKEN_FILE,
    register_with: int | None = None,
    boot_s: float = 0.0,
    snapshot_dir: Path | None = None,
    read_only: bool = False,
    start_snapshot: str = "",
    task_status: anyio.abc.TaskStatus[list[ServedPhone]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``count`` phones as emulators until cancelled.

    Phone ``k`` gets ``phone_config`` with seed ``seed + k``, and latency and fault models seeded from
    the same. ``latency`` (default: off) is scaled by ``time_scale``; ``faults`` default to none.

    As an emulator that has just started: for ``boot_s`` seconds each phone is listed by adb but still
    booting (``sys.boot_completed`` empty, no package manager). Snapshots live in ``snapshot_dir`` when
    given (``read_only``: none is saved); ``start_snapshot``, when it is there, is the state each phone
    boots into.
    """
    if count < 1:
        raise ValueError(f"serve at least one phone, not {count}")
    if not 1024 <= base_port <= 65535 - 2 * count:
        raise ValueError(f"base port {base_port} leaves no room for {count} phone(s)")
    config = phone_config or PhoneConfig()
    listeners = await _bind([base_port + i for i in range(2 * count)])
    unregistered: OSError | None = None
    try:
        async with anyio.create_task_group() as tg:
            served: list[ServedPhone] = []
            for k in range(count):
                phone_k = await anyio.to_thread.run_sync(
                    Phone, dataclasses.replace(config, seed=config.seed + k)
                )
                seed = f"{config.seed}/{k}"
                adbd = Adbd(
                    phone_k,
                    latency=LatencyModel(latency or LatencyProfile.off(), seed=seed, time_scale=time_scale),
                    faults=FaultModel(faults or FaultRates(), seed=seed),
                    register=_registrar(register_with, base_port + 2 * k + 1),
                )
                pair = (listeners[2 * k], listeners[2 * k + 1])
                start = (
                    snapshot_dir / start_snapshot / SNAPSHOT_FILE if snapshot_dir and start_snapshot else None
                )
                if start is not None and start.is_file():
                    phone_k.restore(start.read_bytes())
                elif start_snapshot:
                    logger.info("sim: no snapshot %r to start from: a cold boot", start_snapshot)
                if boot_s > 0:
                    phone_k.booted = False
                    tg.start_soon(_finish_boot, phone_k, boot_s)
                console = functools.partial(
                    Console, adbd, token_file=token_file, snapshot_dir=snapshot_dir, read_only=read_only
                )
                served.append(await tg.start(_serve_one, adbd, console, pair, base_port + 2 * k))
            try:
                for item in served:
                    await item.adbd.announce()
            except OSError as exc:  # TimeoutError too; raised below, outside the task group
                unregistered = OSError(
                    exc.errno, f"could not register with the adb server on port {register_with}: {exc}"
                )
                tg.cancel_scope.cancel()
            else:
                task_status.started(served)
    finally:
        with anyio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()
    if unregistered is not None:
        raise unregistered


async def _finish_boot(phone: Phone, boot_s: float) -> None:
    await anyio.sleep(boot_s)
    phone.booted = True


async def _serve_one(
    adbd: Adbd,
    make_console: Callable[..., Console],
    listeners: tuple[Listener[SocketStream], Listener[SocketStream]],
    console_port: int,
    *,
    task_status: anyio.abc.TaskStatus[ServedPhone],
) -> None:
    """One phone's adbd and console, until cancelled or killed from its console."""
    async with anyio.create_task_group() as tg:
        console = make_console(name=f"distrl_sim_{console_port}", on_kill=tg.cancel_scope.cancel)
        await tg.start(adbd.serve, listeners[1])
        await tg.start(console.serve, listeners[0])
        serial = f"emulator-{console_port}"
        task_status.started(ServedPhone(serial, console_port, console_port + 1, adbd.phone, adbd))


def _registrar(adb_server_port: int | None, adb_port: int) -> Callable[[bool], Awaitable[None]] | None:
    if adb_server_port is None:
        return None
    return lambda after_drop: register_emulator(adb_server_port, adb_port, after_drop=after_drop)


async def _bind(ports: list[int]) -> list[Listener[SocketStream]]:
    """A loopback listener on each of ``ports``, or ``OSError`` naming the first that is taken."""
    listeners: list[Listener[SocketStream]] = []
    try:
        for port in ports:
            try:
                listeners.append(await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port))
            except OSError as exc:
                why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
                raise OSError(exc.errno, f"port {port} on 127.0.0.1 {why}") from exc
    except OSError:
        for listener in listeners:
            await listener.aclose()
        raise
    return listeners
