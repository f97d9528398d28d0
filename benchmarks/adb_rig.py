"""A private real adb server for the benchmarks that drive devices through adb, and free ports."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class AdbServer:
    """A running adb server: its binary, port, and the environment that points clients at it."""

    binary: str
    port: int
    env: dict[str, str]

    def lists(self, serial: str) -> bool:
        """Whether ``adb devices`` shows ``serial`` ready."""
        listed = subprocess.run(
            [self.binary, "devices"], env=self.env, capture_output=True, text=True, timeout=10
        ).stdout
        return f"{serial}\tdevice" in listed


@contextlib.contextmanager
def private_adb_server() -> Iterator[AdbServer]:
    """The real adb binary (adbutils' own) as a server on a free port, with no emulator port scan and no
    USB; this process's adbutils and its children talk to it (``ANDROID_ADB_SERVER_PORT``)."""
    import adbutils

    binary = str(adbutils.adb_path())
    port = free_ports(1)
    env = dict(
        os.environ, ANDROID_ADB_SERVER_PORT=str(port), ADB_LOCAL_TRANSPORT_MAX_PORT="0", ADB_LIBUSB="0"
    )
    os.environ.update(ANDROID_ADB_SERVER_PORT=str(port), ADBUTILS_ADB_PATH=binary)
    server = subprocess.Popen(
        [binary, "nodaemon", "server"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield AdbServer(binary, port, env)
    finally:
        stop(server)


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """Terminate ``process``, killing it after 5 s."""
    if process is None:
        return
    process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    process.kill()
    process.wait()


def free_ports(count: int, *, start: int = 20_000, stop: int = 60_000) -> int:
    """The first of ``count`` consecutive free loopback ports in ``[start, stop)``, from an even one."""
    for base in range(start, stop - count, max(2, count + count % 2)):
        if all(_free(port) for port in range(base, base + count)):
            return base
    raise RuntimeError(f"no {count} free consecutive ports in {start}-{stop}")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_port(port: int, timeout_s: float = 15.0) -> None:
    """Until something listens on loopback ``port``."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on port {port}")
        time.sleep(0.05)
