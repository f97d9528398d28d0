"""The device side of the adb transport protocol: a simulated phone's ``adbd`` on a TCP port.

The real adb server dials it (``adb connect``, its emulator scan, or ``host:emulator:<port>``) and
speaks the transport protocol of ``docs/reference/android.md``: 24-byte headers of six little-endian u32
(``command, arg0, arg1, length, byte sum, command ^ 0xffffffff``), then the payload. The server sends
``CNXN`` first; we answer with our own (version ``0x01000001``, 1 MiB payloads, a ``device::`` banner
with ``features=shell_v2,cmd``) and never ask for ``AUTH``. Streams are ``OPEN`` → ``OKAY`` →
``WRTE``/``OKAY`` (one write outstanding per stream and direction) → ``CLSE``.

Services: ``shell:<cmd>`` and ``exec:<cmd>`` (raw bytes), ``shell,v2,...:<cmd>`` (shell protocol v2
packets: id byte, u32 length, data; stdout is id 1, the exit status id 3) and ``reboot:``; anything
else is refused with ``CLSE``, ``reboot:bootloader``, ``reboot:recovery`` and the other boot targets
the simulated phone does not have included. A connection holds at most ``MAX_STREAMS`` open streams;
an ``OPEN`` past them is refused with ``CLSE`` too. Commands run through ``shell.run_shell`` in a
worker thread, one at a time per phone, after the latency model's delay (device-side: after the
``OKAY``, before the output).

Faults drawn per operation (``latency.FaultModel``):

- ``HANG``: the command never answers; the client's timeout fires.
- ``CRASH``: every connection drops, new ones are closed at once for a boot time (the latency
  model's ``BOOT``), then the phone is back in its boot state. The adb server forgets an emulator
  whose connection drops, so the adbd registers again (``host:emulator``, as an emulator does on
  start); a phone attached with ``adb connect`` is redialled by the server itself. ``reboot:``
  (``adb reboot``) does the same.
- ``OFFLINE``: every connection drops; the adbd registers again and takes the server's ``CNXN`` but
  never answers it, so ``adb devices`` shows ``offline`` and commands fail with "device offline",
  as for a wedged emulator. ``recover()`` (console ``avd snapshot load``) answers the waiting
  ``CNXN``; a reboot (console ``crash``) also ends it.
- ``WHITE_FRAME``: the screenshot is all white (``phone.white`` for that one capture).

Bytes the protocol does not allow (bad magic, an oversized payload, an unknown command) close that
connection only; we always send the byte sum and never check the one we receive.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from anyio.abc import Listener, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from distrl.errors import WireError
from distrl.sim.latency import Fault, FaultModel, LatencyModel, Op
from distrl.sim.phone import Phone
from distrl.sim.shell import ShellResult, run_shell, shell_ops

__all__ = [
    "Adbd",
    "Packet",
    "CNXN",
    "OPEN",
    "OKAY",
    "WRTE",
    "CLSE",
    "AUTH",
    "VERSION",
    "MAX_PAYLOAD",
    "MAX_STREAMS",
]

logger = logging.getLogger(__name__)

CNXN, AUTH, OPEN, OKAY, WRTE, CLSE = 0x4E584E43, 0x48545541, 0x4E45504F, 0x59414B4F, 0x45545257, 0x45534C43
_KNOWN = {CNXN, AUTH, OPEN, OKAY, WRTE, CLSE, 0x534C5453}  # and STLS, which we ignore
VERSION = 0x01000001
"""Protocol version we speak (skip-checksum, Android 9 and later)."""
MAX_PAYLOAD = 1024 * 1024
"""Largest payload we send or accept, bytes."""
FEATURES = "shell_v2,cmd"
HANDSHAKE_S = 30.0
"""How long a new connection may take to send its ``CNXN``, seconds."""
ACK_S = 60.0
"""How long the host may take to acknowledge a ``WRTE``, seconds."""
MAX_STREAMS = 64
"""Most streams one connection may have open at once (the adb server opens one per command)."""

_GONE = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)
"""What a connection the peer dropped raises."""
_HEADER = struct.Struct("<6I")
_V2_STDOUT, _V2_EXIT = 1, 3
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Packet:
    """One transport message."""

    command: int
    arg0: int
    arg1: int
    data: bytes = b""

    def encode(self) -> bytes:
        """The header (with the payload's byte sum and the magic) followed by the payload."""
        check = sum(self.data) & 0xFFFFFFFF
        header = _HEADER.pack(
            self.command, self.arg0, self.arg1, len(self.data), check, self.command ^ 0xFFFFFFFF
        )
        return header + self.data

    @classmethod
    async def read(cls, stream: BufferedByteReceiveStream) -> Packet:
        """The next packet; ``WireError`` for a header the protocol does not allow."""
        command, arg0, arg1, length, _check, magic = _HEADER.unpack(
            await stream.receive_exactly(_HEADER.size)
        )
        if magic != command ^ 0xFFFFFFFF or command not in _KNOWN:
            problem = f"bad adb header: command {command:#010x}, magic {magic:#010x}"
            raise WireError(problem, reason=problem)
        if length > MAX_PAYLOAD:
            problem = f"adb payload of {length} bytes is over the limit of {MAX_PAYLOAD}"
            raise WireError(problem, reason=problem)
        return cls(command, arg0, arg1, await stream.receive_exactly(length) if length else b"")


class _State(enum.Enum):
    UP = "up"
    BOOTING = "booting"
    OFFLINE = "offline"


class Adbd:
    """One phone's adbd. ``serve`` runs it on a listener; ``crash``/``go_offline``/``recover``/``reboot``
    change its condition; ``call`` runs a function on the phone in a worker thread, one at a time."""

    def __init__(
        self,
        phone: Phone,
        *,
        latency: LatencyModel | None = None,
        faults: FaultModel | None = None,
        register: Callable[[bool], Awaitable[None]] | None = None,
    ) -> None:
        self.phone = phone
        self.latency = latency
        self.faults = faults
        self._register = register
        self._limiter = anyio.CapacityLimiter(1)
        self._state = _State.UP
        self._up = anyio.Event()
        self._up.set()
        self._connections: set[anyio.CancelScope] = set()
        self._tg: TaskGroup | None = None
        p = phone.props
        self.banner = (
            f"device::ro.product.name={p.get('ro.product.name', 'sim')};ro.product.model="
            f"{p.get('ro.product.model', 'sim')};ro.product.device={p.get('ro.product.device', 'sim')};"
            f"features={FEATURES};"
        ).encode()

    @property
    def state(self) -> str:
        """``"up"``, ``"booting"`` (after a crash or reboot) or ``"offline"``."""
        return self._state.value

    async def call(self, function: Callable[[], T]) -> T:
        """``function()`` in a worker thread, never two at once for this phone."""
        return await anyio.to_thread.run_sync(function, limiter=self._limiter)

    async def serve(
        self,
        listener: Listener[SocketStream],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept the adb server's connections on ``listener`` until cancelled."""
        async with listener, anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await listener.serve(self._connection, task_group=tg)

    # -- condition ------------------------------------------------------------------------------------

    def crash(self) -> None:
        """Drop every connection and refuse new ones for a boot time; then up again in boot state."""
        if self._state is _State.BOOTING:
            return
        self._go_down(_State.BOOTING)
        self._spawn(self._boot)

    def reboot(self) -> None:
        """``adb reboot``: the same as a crash, the phone is back in its boot state after booting."""
        self.crash()

    def go_offline(self) -> None:
        """Drop every connection; answer no ``CNXN`` until ``recover``; ``adb devices``: ``offline``."""
        self._go_down(_State.OFFLINE)
        self._spawn(self._announce_quietly)

    def recover(self) -> None:
        """Back up from ``offline`` (a snapshot was loaded); connections waiting for ``CNXN`` get it."""
        if self._state is _State.OFFLINE:
            self._state = _State.UP
            self._up.set()
            self._spawn(self._announce_quietly)

    def _go_down(self, state: _State) -> None:
        logger.info("sim adbd: %s", state.value)
        if self._state is _State.UP:
            self._up = anyio.Event()
        self._state = state
        for scope in list(self._connections):
            scope.cancel()

    def _spawn(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._tg is None:
            raise RuntimeError("the adbd is not serving")
        self._tg.start_soon(job)

    async def _boot(self) -> None:
        await self.call(self.phone.reboot)
        await anyio.sleep(self.latency.wall(Op.BOOT) if self.latency else 0.0)
        if self._state is _State.BOOTING:
            self._state = _State.UP
            self._up.set()
            await self._announce_quietly()

    async def announce(self) -> None:
        """Tell the adb server we are here, as an emulator does (``host:emulator:<port>``), if we know
        one. With no connection of ours, whatever the server lists under our serial is stale: the
        registration then waits until the server has let it go."""
        if self._register is not None:
            await self._register(not self._connections)
            logger.debug("sim adbd: announced to the adb server")

    async def _announce_quietly(self) -> None:
        try:
            await self.announce()
        except (OSError, TimeoutError) as exc:
            logger.warning("sim adbd: could not register with the adb server: %s", exc)

    # -- connections ------------------------------------------------------------------------------------

    async def _connection(self, stream: SocketStream) -> None:
        logger.debug("sim adbd: a connection while %s", self._state.value)
        async with stream:
            if self._state is _State.BOOTING:
                return  # booting: the connection is closed at once
            with anyio.CancelScope() as scope:
                self._connections.add(scope)
                try:
                    await _Connection(self, stream).run()
                except* (WireError, TimeoutError) as group:
                    logger.warning("sim adbd: closing a connection: %s", group.exceptions[0])
                except* _GONE:
                    logger.debug("sim adbd: the adb server closed a connection")
                finally:
                    self._connections.discard(scope)

    async def wait_up(self) -> None:
        """Return once the adbd is up (at once if it is)."""
        while self._state is not _State.UP:
            await self._up.wait()

    async def run_command(self, command: str) -> ShellResult:
        """Run a shell command with its latency and faults (a hang, crash or offline never returns)."""
        fault: Fault | None = None
        delay = 0.0
        for op in shell_ops(command):
            fault = fault or (self.faults.draw(op) if self.faults else None)
            delay += self.latency.wall(op) if self.latency else 0.0
        if fault in (Fault.CRASH, Fault.OFFLINE):
            self.crash() if fault is Fault.CRASH else self.go_offline()
        if fault in (Fault.HANG, Fault.CRASH, Fault.OFFLINE):
            await anyio.sleep_forever()
        await anyio.sleep(delay)
        return await self.call(lambda: _run(self.phone, command, white=fault is Fault.WHITE_FRAME))


def _run(phone: Phone, command: str, *, white: bool) -> ShellResult:
    before = phone.white
    phone.white = before or white
    try:
        return run_shell(phone, command)
    finally:
        phone.white = before


class _Stream:
    """One open stream: our id, the host's id, and the acknowledgement of our last ``WRTE``."""

    def __init__(self, connection: _Connection, local: int, remote: int) -> None:
        self.connection = connection
        self.local = local
        self.remote = remote
        self.scope = anyio.CancelScope()
        self.acked = anyio.Event()
        self.acked.set()

    async def write(self, data: bytes) -> None:
        """Send ``data`` in ``WRTE``s of at most the agreed size, each acknowledged before the next."""
        step = self.connection.max_data
        for start in range(0, len(data), step):
            self.acked = anyio.Event()
            await self.connection.send(Packet(WRTE, self.local, self.remote, data[start : start + step]))
            with anyio.fail_after(ACK_S):
                await self.acked.wait()


class _Connection:
    """One TCP connection from the adb server: the handshake, then packets to streams."""

    def __init__(self, adbd: Adbd, stream: SocketStream) -> None:
        self.adbd = adbd
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)
        self.max_data = MAX_PAYLOAD
        self.streams: dict[int, _Stream] = {}
        self.next_id = 1
        self.send_lock = anyio.Lock()

    async def send(self, packet: Packet) -> None:
        async with self.send_lock:
            await self.stream.send(packet.encode())

    async def run(self) -> None:
        with anyio.fail_after(HANDSHAKE_S):
            packet = await Packet.read(self.reader)
            while packet.command != CNXN:  # anything before CNXN is ignored
                packet = await Packet.read(self.reader)
        await self.adbd.wait_up()
        await self._hello(packet)
        async with anyio.create_task_group() as tg:
            while True:
                packet = await Packet.read(self.reader)
                await self._dispatch(packet, tg)

    async def _hello(self, packet: Packet) -> None:
        if packet.arg0 < 0x01000000 or packet.arg1 < 4096:
            problem = f"host CNXN with version {packet.arg0:#x} and max payload {packet.arg1}"
            raise WireError(problem, reason=problem)
        self.max_data = min(MAX_PAYLOAD, packet.arg1)
        await self.send(Packet(CNXN, VERSION, MAX_PAYLOAD, self.adbd.banner))

    async def _dispatch(self, packet: Packet, tg: TaskGroup) -> None:
        if packet.command == CNXN:
            await self._hello(packet)
        elif packet.command == OPEN and packet.arg0 != 0:
            await self._open(packet.arg0, packet.data.rstrip(b"\0").decode("utf-8", "replace"), tg)
        elif packet.command == OKAY and (stream := self.streams.get(packet.arg1)) is not None:
            stream.acked.set()
        elif packet.command == WRTE and (stream := self.streams.get(packet.arg1)) is not None:
            await self.send(Packet(OKAY, stream.local, stream.remote))  # stdin is read and dropped
        elif packet.command == CLSE and (stream := self.streams.pop(packet.arg1, None)) is not None:
            stream.scope.cancel()

    async def _open(self, remote: int, destination: str, tg: TaskGroup) -> None:
        service = _service(self.adbd, destination)
        if service is None or len(self.streams) >= MAX_STREAMS:
            why = "unknown service" if service is None else f"{MAX_STREAMS} streams open already"
            logger.info("sim adbd: refusing service %r: %s", destination, why)
            await self.send(Packet(CLSE, 0, remote))
            return
        stream = _Stream(self, self.next_id, remote)
        self.next_id += 1
        self.streams[stream.local] = stream
        await self.send(Packet(OKAY, stream.local, remote))
        tg.start_soon(self._serve_stream, stream, service)

    async def _serve_stream(self, stream: _Stream, service: Callable[[_Stream], Awaitable[None]]) -> None:
        with stream.scope:
            try:
                await service(stream)
            except TimeoutError:
                logger.warning("sim adbd: the adb server did not acknowledge a write in %s s", ACK_S)
        if self.streams.pop(stream.local, None) is not None:
            await self.send(Packet(CLSE, stream.local, stream.remote))


def _service(adbd: Adbd, destination: str) -> Callable[[_Stream], Awaitable[None]] | None:
    """The function serving ``destination``, or None to refuse it."""
    name, _, command = destination.partition(":")
    kind, *args = name.split(",")
    if kind in ("shell", "exec") and command:
        v2 = kind == "shell" and "v2" in args

        async def shell(stream: _Stream) -> None:
            result = await adbd.run_command(command)
            await stream.write(_v2(result) if v2 else result.output)

        return shell
    if kind == "reboot" and not args and not command:  # not a boot target: the sim has only Android

        async def reboot(stream: _Stream) -> None:
            adbd.reboot()

        return reboot
    return None


def _v2(result: ShellResult) -> bytes:
    """``result`` as shell protocol v2 packets: stdout in pieces, then the exit status."""
    step = MAX_PAYLOAD
    packets = [
        struct.pack("<BI", _V2_STDOUT, len(piece)) + piece
        for piece in (result.output[i : i + step] for i in range(0, len(result.output), step))
    ]
    return b"".join(packets) + struct.pack("<BIB", _V2_EXIT, 1, result.exit_code & 0xFF)
