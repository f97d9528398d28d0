"""Shared test settings (anyio on asyncio, bounded hypothesis runs) and fixtures: a real adb server
(``adb_server``), simulated phones it sees as emulators (``sim_fleet``) and a real OpenSSH server on
loopback (``sshd``, from ``distrl.testing.sshd``)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, settings
from support import emulator_ports

from distrl.testing.sshd import sshd

__all__ = ["sshd"]  # a fixture: defined in distrl.testing.sshd, offered to every test module from here

if TYPE_CHECKING:
    from distrl.sim.server import ServedPhone

settings.register_profile("default", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_configure(config: pytest.Config) -> None:
    """Under ``--dist loadgroup`` (tools/test), the tests of a module marked ``xdist_group`` run on one test
    process, which builds the module's costly fixtures once. pytest 9.2's node ids make that mark do
    nothing, silently (pytest-xdist issue 1386): every test process then builds every costly fixture for
    itself, minutes more. Refuse to run so.

    The mark is declared here too, so a run without xdist (``pytest -p no:xdist``) knows it under
    ``--strict-markers``."""
    config.addinivalue_line("markers", "xdist_group(name): run the module's tests on one xdist process")
    if config.getoption("dist", default="no") == "loadgroup" and pytest.version_tuple[:2] >= (9, 2):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} makes pytest-xdist's --dist loadgroup group nothing"
            " (pytest-xdist issue 1386): install the test extra's pytest, below 9.2 (tools/bootstrap does)"
        )


# -- the real adb server and simulated phones (tests/test_sim_adb.py; the AdbDevice contract tests) ------
#
# ``adb_server`` (session): the real adb binary (``$ADBUTILS_ADB_PATH``, ``adb`` on PATH or the one in
# the adbutils wheel, as ``adbutils.adb_path()`` finds it) run as ``adb nodaemon server`` on a private
# free port, with its emulator port scan and USB off, so it meets neither a user's adb nor other tests'
# phones. For the session, ``ANDROID_ADB_SERVER_PORT`` and ``ADBUTILS_ADB_PATH`` point at it, so
# adbutils' auto-start can only ever start this one. Yields an ``AdbServer``: ``.port``, ``.binary``,
# ``.env``, ``.run(*args)`` (the adb CLI against it) and ``.devices()`` (serial -> state).
#
# ``sim_fleet`` (per test): two simulated phones served as emulators (``distrl.sim.server``) in a background
# event loop, registered with ``adb_server`` by ``host:emulator``. They are on the first four of this test
# process's emulator ports (``support.emulator_ports``: 5554-5557, serials ``emulator-5554`` and
# ``emulator-5556``, when pytest runs alone) when those are free, else on four free consecutive ports among
# them (serials ``emulator-<console port>``). Yields a ``SimFleet``: ``.serials``,
# ``.phones`` (``ServedPhone``: serial, console_port, adb_port, phone, adbd), ``.token`` and ``.token_file``
# (the console's), ``.call(fn, *args)`` to run ``fn`` in the fleet's event loop (use it for ``adbd.crash()``
# and the like), ``.on_phone(i, fn)`` to run ``fn()`` on phone ``i`` safely, and ``.wait_state(serial,
# state)`` to wait (bounded) until ``adb devices`` shows ``state``.


_T = TypeVar("_T")
ADB_START_S = 15.0
"""Limit on the adb server coming up, seconds."""


@dataclass(frozen=True)
class AdbServer:
    """A real adb server of our own: its port, its binary and the environment that reaches it."""

    port: int
    binary: str
    env: dict[str, str] = field(repr=False)

    def run(self, *args: str, timeout: float = 10.0) -> subprocess.CompletedProcess[bytes]:
        """``adb ARGS`` against this server (stdin closed, output captured)."""
        return subprocess.run(
            [self.binary, *args], env=self.env, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout
        )

    def devices(self) -> dict[str, str]:
        """``adb devices`` as serial -> state."""
        out = self.run("devices").stdout.decode()
        return dict(line.split("\t", 1) for line in out.splitlines()[1:] if "\t" in line)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _adb_binary() -> str | None:
    with contextlib.suppress(Exception):
        import adbutils

        path = str(adbutils.adb_path())
        if Path(path).is_file():
            return path
    return shutil.which("adb")


@pytest.fixture(scope="session")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbServer]:
    binary = _adb_binary()
    if binary is None:
        pytest.skip("no adb binary (neither adbutils' nor one on PATH)")
    port = _free_port()
    # No emulator port scan, no USB (whose first enumeration holds every answer back for 3 s), and a
    # home of its own for its keys and logs.
    env = dict(
        os.environ, ANDROID_ADB_SERVER_PORT=str(port), ADB_LOCAL_TRANSPORT_MAX_PORT="0", ADB_LIBUSB="0"
    )
    env["HOME"] = str(tmp_path_factory.mktemp("adb_home"))
    server = AdbServer(port, binary, env)
    process = subprocess.Popen(
        [binary, "nodaemon", "server"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {name: os.environ.get(name) for name in ("ANDROID_ADB_SERVER_PORT", "ADBUTILS_ADB_PATH")}
    try:
        deadline = time.monotonic() + ADB_START_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the adb server ({binary}) did not start on port {port}")
            time.sleep(0.02)
        os.environ.update(ANDROID_ADB_SERVER_PORT=str(port), ADBUTILS_ADB_PATH=binary)
        yield server
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.run("kill-server", timeout=5)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@dataclass
class SimFleet:
    """Simulated phones served as emulators in a background event loop (see the notes above)."""

    phones: list[ServedPhone]
    portal: anyio.from_thread.BlockingPortal
    adb: AdbServer
    token_file: Path
    token: str

    @property
    def serials(self) -> list[str]:
        return [phone.serial for phone in self.phones]

    def call(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` in the fleet's event loop (``function`` may be async)."""
        return self.portal.call(function, *args)

    def on_phone(self, index: int, function: Callable[[], _T]) -> _T:
        """``function()`` on phone ``index``'s worker thread, where nothing else touches the phone."""
        adbd = self.phones[index].adbd
        result: _T = self.portal.call(adbd.call, function)
        return result

    def wait_state(self, serial: str, state: str | None, timeout: float = 10.0) -> None:
        """Wait until ``adb devices`` shows ``serial`` in ``state`` (None: not listed at all)."""
        deadline = time.monotonic() + timeout
        while (seen := self.adb.devices().get(serial)) != state:
            if time.monotonic() > deadline:
                pytest.fail(f"{serial} is {seen or 'not listed'} after {timeout} s, expected {state}")
            time.sleep(0.05)


def _first_base_port(attempt: int) -> int:
    """The first of this process's emulator console ports (``support.emulator_ports``: 5554 alone), then a
    random base whose two phones stay among them."""
    mine = emulator_ports()
    return mine[0] if attempt == 0 else mine[0] + 4 * random.randrange(len(mine) // 2)


@pytest.fixture
def sim_fleet(adb_server: AdbServer, tmp_path: Path) -> Iterator[SimFleet]:
    from distrl.sim.server import serve_phones

    token_file = tmp_path / "console_token"
    token_file.write_text("sim-test-token\n")
    with anyio.from_thread.start_blocking_portal("asyncio") as portal:
        for attempt in range(20):
            base = _first_base_port(attempt)
            try:
                serve = functools.partial(
                    serve_phones, 2, base_port=base, token_file=token_file, register_with=adb_server.port
                )
                future, phones = portal.start_task(serve, name="sim fleet")
            except OSError:
                continue
            break
        else:
            pytest.fail("found no four free consecutive ports for two simulated phones")
        fleet = SimFleet(phones, portal, adb_server, token_file, "sim-test-token")
        try:
            for serial in fleet.serials:
                fleet.wait_state(serial, "device")
            yield fleet
        finally:
            future.cancel()
            with contextlib.suppress(concurrent.futures.CancelledError):
                future.result(timeout=10)  # raises what made the fleet fail, if anything did
