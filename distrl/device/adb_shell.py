"""``AdbShell``: one device's adb, the one boundary around adbutils: shell commands, other services
(``reboot:``) and waits on the device's state, each call in a worker thread under its timeout, every
adbutils and socket error translated.

adbutils is blocking, so every adb call runs in a worker thread behind a ``CapacityLimiter``, under the
operation's timeout, and with a socket timeout on every read so that a thread left behind by a
cancelled or timed-out call ends on its own soon after. Such a thread may still deliver its command
meanwhile (the device answers late, or the thread had not sent it yet), so the shell keeps the threads
its calls abandoned (``threads.Threads``), and every call (and whoever calls ``settle``, as the
console's snapshot load of ``AdbDevice.reset`` does) first waits until they have ended, each for at
most its socket timeout since it was abandoned: nothing a timed-out ``act`` sent can land on the phone
after the next ``reset`` has loaded its snapshot. The wait counts against the operation that waits.

Commands go through adbutils' ``open_transport`` rather than its helpers (``shell``, ``click``,
``swipe``, ``keyevent``, ``send_keys``): the wire is the same (``input tap X Y`` …), but the helpers
read with a 10-minute timeout while switching transport, cannot take one for ``click`` and friends,
and read output in a quadratic loop.

Commands use shell protocol v2 (``shell,v2,raw:``) where the device advertises ``shell_v2`` (Android 7
and later, and the sim): the exit status is known, stdout is kept apart from stderr (a warning never
corrupts a PNG), and a connection lost half-way (the device crashed) is told from a command that
printed nothing. Older devices get plain ``shell:``.

Every adbutils and socket error is translated in ``AdbShell._translate``: lost or unknown devices become
``DeviceOffline``, stalls ``DeviceTimeout``, the rest ``DeviceError``, each with ``host``, ``device``
and ``operation``.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import adbutils
import anyio
from anyio.lowlevel import RunVar

from distrl.device.protocol import Gate
from distrl.device.threads import Threads
from distrl.errors import DeviceError, DeviceOffline, DeviceTimeout

__all__ = ["MAX_SHELL_BYTES", "AdbShell", "ShellOutput", "adb_limiter", "not_ready"]

T = TypeVar("T")

MAX_SHELL_BYTES = 64 * 1024 * 1024
"""Most bytes one shell command may answer (a 4K PNG screenshot is far below)."""

_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("distrl.device.adb_limiter")
_OFFLINE_WORDS = ("not found", "offline", "unauthorized", "no devices", "closed", "connect")


def not_ready(serials: list[str] | tuple[str, ...], *, timeout_s: float = 10.0) -> dict[str, str]:
    """The ``serials`` the adb server does not list as ready, each with why: its state (``offline``,
    ``unauthorized``), ``not attached``, or that the adb server cannot be asked. Blocking (one request
    to the adb server)."""
    try:
        listed = {info.serial: info.state for info in adbutils.AdbClient(socket_timeout=timeout_s).list()}
    except (adbutils.AdbError, OSError) as exc:
        return {serial: f"the adb server cannot be asked ({exc})" for serial in serials}
    return {
        serial: listed.get(serial, "not attached") for serial in serials if listed.get(serial) != "device"
    }


def adb_limiter() -> anyio.CapacityLimiter:
    """This event loop's default limiter for adb threads (32 at once)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(32)
        _LIMITER.set(limiter)
        return limiter


@dataclass(frozen=True, slots=True)
class ShellOutput:
    """What a shell command gave: its exit status (None over shell v1), stdout, stderr."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes


class AdbShell:
    """The adb services of the device ``serial``, as its ``gate`` names it in errors."""

    def __init__(
        self,
        serial: str,
        *,
        gate: Gate,
        socket_timeout_s: float,
        adb_host: str = "127.0.0.1",
        adb_port: int | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        """``socket_timeout_s`` bounds the reads adbutils does on its own (the server's version)."""
        self._serial = serial
        self._gate = gate
        self._client = adbutils.AdbClient(host=adb_host, port=adb_port, socket_timeout=socket_timeout_s)
        self._adb = self._client.device(serial)
        self._shell_v2: bool | None = None  # whether the device speaks shell protocol v2 (asked once)
        self._threads = Threads(serial, lambda: limiter or adb_limiter())

    def forget_protocol(self) -> None:
        """Ask the device again which shell protocol it speaks: it has rebooted, a new system may not."""
        self._shell_v2 = None

    async def settle(self) -> None:
        """Until the threads of earlier abandoned calls have ended (``Threads.settle``)."""
        await self._threads.settle()

    async def output(self, operation: str, command: str, timeout_s: float) -> bytes:
        """``command``'s stdout; a ``DeviceError`` when its exit status is not 0."""
        output = await self.run(operation, command, timeout_s)
        if output.exit_code not in (None, 0):
            text = (output.stderr or output.stdout).decode("utf-8", "replace").strip()
            raise self._gate.error(
                DeviceError, operation, f"{command!r} exited with status {output.exit_code}: {text:.200}"
            )
        return output.stdout

    async def run(self, operation: str, command: str, timeout_s: float) -> ShellOutput:
        """Run ``command`` in the device's shell: protocol v2 where the device speaks it, so that its
        exit status is known and a connection lost half-way is told from a command that printed
        nothing; plain ``shell:`` (no exit status) on devices older than Android 7."""
        if self._shell_v2 is None:
            features = await self._call(operation, timeout_s, self._features_sync, timeout_s)
            self._shell_v2 = "shell_v2" in features.split(",")
        if self._shell_v2:
            return await self._call(operation, timeout_s, self._shell_v2_sync, command, timeout_s)
        stdout = await self._call(operation, timeout_s, self._service_sync, "shell:" + command, timeout_s)
        return ShellOutput(None, stdout, b"")

    async def service(self, operation: str, service: str, timeout_s: float) -> bytes:
        """Open ``service`` on the device (``reboot:``) and read until it closes."""
        return await self._call(operation, timeout_s, self._service_sync, service, timeout_s)

    async def wait_for(self, operation: str, state: str, timeout_s: float) -> None:
        """Until the adb server has the device in ``state`` (``device``, ``disconnect``)."""
        await self._call(operation, timeout_s, self._wait_for_sync, state, timeout_s)

    async def _call(self, operation: str, timeout_s: float, func: Callable[..., T], *args: object) -> T:
        """``func(*args)`` in a worker thread (``Threads.run``: after the threads of earlier abandoned
        calls have ended, each read bounded by ``timeout_s``), its errors translated."""
        try:
            return await self._threads.run(timeout_s, func, *args)
        except (adbutils.AdbError, OSError, EOFError, subprocess.SubprocessError) as exc:
            raise self._translate(exc, operation, timeout_s) from exc

    def _translate(self, exc: BaseException, operation: str, timeout_s: float) -> DeviceError:
        """The ``DeviceError`` for an adbutils or socket error: the one place where they are mapped."""
        problem = f"adb {operation}: {type(exc).__name__}: {exc}"
        if isinstance(exc, adbutils.AdbTimeout | TimeoutError | subprocess.TimeoutExpired):
            return self._gate.error(DeviceTimeout, operation, problem, timeout_s=timeout_s)
        if isinstance(exc, adbutils.AdbError) and not any(w in str(exc).lower() for w in _OFFLINE_WORDS):
            return self._gate.error(DeviceError, operation, problem)
        return self._gate.error(DeviceOffline, operation, problem)

    # The methods below run in worker threads; each socket read is bounded by ``timeout_s``.
    def _wait_for_sync(self, state: str, timeout_s: float) -> None:
        self._client.wait_for(self._serial, "any", state, timeout_s)

    def _features_sync(self, timeout_s: float) -> str:
        with self._adb.open_transport("features", timeout=timeout_s) as conn:
            features: str = conn.read_string_block()
            return features

    def _service_sync(self, service: str, timeout_s: float) -> bytes:
        with self._adb.open_transport(timeout=timeout_s) as conn:
            conn.send_command(service)
            conn.check_okay()
            return _read_all(conn.conn)

    def _shell_v2_sync(self, command: str, timeout_s: float) -> ShellOutput:
        """``shell,v2,raw:<command>``, its packets (id byte, u32 LE length, data) taken apart."""
        data = self._service_sync("shell,v2,raw:" + command, timeout_s)
        stdout: list[bytes] = []
        stderr: list[bytes] = []
        at = 0
        while at + 5 <= len(data):
            kind, size = data[at], int.from_bytes(data[at + 1 : at + 5], "little")
            payload = data[at + 5 : at + 5 + size]
            at += 5 + size
            if kind == 1:
                stdout.append(payload)
            elif kind == 2:
                stderr.append(payload)
            elif kind == 3 and len(payload) == 1:
                return ShellOutput(payload[0], b"".join(stdout), b"".join(stderr))
        raise adbutils.AdbError("the shell stream closed before the exit status (connection closed)")


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the peer closes, at most ``MAX_SHELL_BYTES`` (linear, unlike adbutils')."""
    chunks: list[bytes] = []
    total = 0
    while chunk := sock.recv(256 * 1024):
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_SHELL_BYTES:
            raise adbutils.AdbError(f"shell output is larger than {MAX_SHELL_BYTES} bytes")
    return b"".join(chunks)
