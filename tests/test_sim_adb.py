"""Simulated phones through the real adb server: the adb CLI, adbutils, the console, faults, bad packets.

The ``adb_server`` and ``sim_fleet`` fixtures (``conftest.py``) run the adb binary of the adbutils wheel
on a private port and two simulated phones it lists as emulators.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import adbutils
import pytest
from PIL import Image, ImageChops

from distrl.sim.adbd import CLSE, CNXN, MAX_PAYLOAD, MAX_STREAMS, OKAY, OPEN, VERSION, WRTE, Packet
from distrl.sim.console import MAX_SNAPSHOTS
from distrl.sim.latency import FaultModel, FaultRates, LatencyModel, LatencyProfile, Spread
from distrl.sim.server import serve_phones

if TYPE_CHECKING:
    from conftest import SimFleet

pytestmark = pytest.mark.timeout(30)
ROOT = Path(__file__).resolve().parent.parent


def _device(fleet: SimFleet, index: int = 0) -> Any:
    return adbutils.AdbClient(host="127.0.0.1", port=fleet.adb.port).device(fleet.serials[index])


@contextmanager
def _faults(fleet: SimFleet, **rates: float) -> Iterator[None]:
    adbd = fleet.phones[0].adbd
    adbd.faults = FaultModel(FaultRates(**rates), seed=0)
    try:
        yield
    finally:
        adbd.faults = None


# -- the adb CLI --------------------------------------------------------------------------------------


def test_adb_devices_lists_the_phones_as_emulators(sim_fleet: SimFleet) -> None:
    out = sim_fleet.adb.run("devices", "-l").stdout.decode()
    for serial in sim_fleet.serials:
        assert f"{serial} " in out
    line = next(line for line in out.splitlines() if line.startswith(sim_fleet.serials[0]))
    assert line.split()[1:4] == ["device", "product:sdk_gphone64_x86_64", "model:Pixel_6"]
    if sim_fleet.phones[0].console_port == 5554:
        assert sim_fleet.serials == ["emulator-5554", "emulator-5556"]


def test_cli_screencap_over_shell_v2_is_the_screen(sim_fleet: SimFleet) -> None:
    result = sim_fleet.adb.run("-s", sim_fleet.serials[0], "shell", "screencap", "-p")
    assert result.returncode == 0, result.stderr
    captured = Image.open(io.BytesIO(result.stdout))
    phone = sim_fleet.phones[0].phone
    screen = sim_fleet.on_phone(0, lambda: phone.render().copy())
    assert captured.format == "PNG"
    assert captured.size == screen.size == (1080, 2400)
    assert ImageChops.difference(captured.convert("RGB"), screen).getbbox() is None


def test_cli_exec_out_and_exit_statuses(sim_fleet: SimFleet) -> None:
    serial = sim_fleet.serials[1]
    png = sim_fleet.adb.run("-s", serial, "exec-out", "screencap", "-p").stdout
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png)).size == (1080, 2400)
    assert sim_fleet.adb.run("-s", serial, "shell", "exit 3").returncode == 3
    missing = sim_fleet.adb.run("-s", serial, "shell", "no_such_tool", "-x")
    assert missing.returncode == 127
    assert b"no_such_tool: inaccessible or not found" in missing.stdout + missing.stderr
    both = sim_fleet.adb.run("-s", serial, "shell", "echo one && false; echo two")
    assert (both.returncode, both.stdout) == (0, b"one\ntwo\n")


def test_cli_reboot_brings_the_phone_back_in_boot_state(sim_fleet: SimFleet) -> None:
    adb, serial = sim_fleet.adb, sim_fleet.serials[0]
    assert adb.run("-s", serial, "shell", "settings put global wifi_on 0").returncode == 0
    assert adb.run("-s", serial, "reboot").returncode == 0
    adb.run("-s", serial, "wait-for-device", timeout=10)
    sim_fleet.wait_state(serial, "device")
    assert adb.run("-s", serial, "shell", "settings get global wifi_on").stdout == b"1\n"


# -- adbutils -----------------------------------------------------------------------------------------


def _spy(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = getattr(target, name)

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(target, name, spy)
    return calls


def test_adbutils_drives_the_phone(sim_fleet: SimFleet, monkeypatch: pytest.MonkeyPatch) -> None:
    phone = sim_fleet.phones[0].phone
    taps, swipes = _spy(monkeypatch, phone, "tap"), _spy(monkeypatch, phone, "swipe")
    texts, keys = _spy(monkeypatch, phone, "type_text"), _spy(monkeypatch, phone, "key")
    d = _device(sim_fleet)

    assert d.shell("echo hello; echo world") == "hello\nworld"
    assert (d.shell2("false").returncode, d.shell2("echo x").output) == (1, "x\n")
    assert d.shell2("exit 4", v2=True).returncode == 4
    assert d.window_size() == (1080, 2400)
    assert d.getprop("ro.product.model") == "Pixel 6"
    assert d.getprop("ro.build.version.sdk") == "33"

    shot = d.screenshot(error_ok=False)
    assert shot.size == (1080, 2400)

    d.click(100, 200)
    d.click(0.5, 0.25)  # fractions: adbutils asks window_size first
    d.swipe(10, 2000, 10, 500, 0.2)
    d.send_keys("hello world")  # adbutils quotes the spaces
    d.shell("input text hello%sagain")  # DigiRL spells a space %s
    d.keyevent("KEYCODE_BACK")
    d.keyevent(66)
    assert taps == [(100.0, 200.0), (540.0, 600.0)]
    assert swipes == [(10.0, 2000.0, 10.0, 500.0, 200)]
    assert texts == [("hello world",), ("hello again",)]
    assert keys[:2] == [(4,), (66,)]

    for package in ("com.android.settings", "com.google.android.deskclock"):
        activity = phone.activities[package]
        d.app_start(package)
        assert d.app_current().package == package
        d.keyevent("HOME")
        d.app_start(package, activity)
        current = d.app_current()
        full = package + activity if activity.startswith(".") else activity  # as dumpsys spells it
        assert (current.package, current.activity) == (package, full)
    assert d.shell("dumpsys distrl").startswith("{")


# -- the console ----------------------------------------------------------------------------------------


class _Console:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.file = self.sock.makefile("rb")

    def reply(self) -> list[str]:
        """Lines up to and including the one that starts with OK or KO."""
        lines = []
        while True:
            raw = self.file.readline()
            assert raw.endswith(b"\r\n"), raw
            lines.append(raw.decode().rstrip("\r\n"))
            if lines[-1].startswith(("OK", "KO")):
                return lines

    def ask(self, command: str) -> list[str]:
        self.sock.sendall(command.encode() + b"\r\n")
        return self.reply()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def test_console_auth_and_snapshot_round_trip(sim_fleet: SimFleet) -> None:
    adb, serial, served = sim_fleet.adb, sim_fleet.serials[0], sim_fleet.phones[0]
    console = _Console(served.console_port)
    try:
        greeting = console.reply()
        assert greeting[0] == "Android Console: Authentication required"
        assert any(str(sim_fleet.token_file) in line for line in greeting)
        assert console.ask("avd snapshot list")[-1].startswith("KO")  # not before auth
        assert console.ask("auth not-the-token")[-1].startswith("KO: authentication token does not match")
        assert console.ask(f"auth {sim_fleet.token}")[-1] == "OK"
        assert console.ask("ping") == ["I am alive!", "OK"]
        assert console.ask("avd status") == ["virtual device is running", "OK"]
        assert console.ask("avd snapshot save before") == ["OK"]
        adb.run("-s", serial, "shell", "settings put system font_scale 1.3")
        assert adb.run("-s", serial, "shell", "settings get system font_scale").stdout == b"1.3\n"
        assert console.ask("avd snapshot load before") == ["OK"]
        assert adb.run("-s", serial, "shell", "settings get system font_scale").stdout == b"1.0\n"
        listing = "\n".join(console.ask("avd snapshot list"))
        assert "default_boot" in listing
        assert "before" in listing
        assert console.ask("avd snapshot delete before") == ["OK"]
        assert console.ask("avd snapshot load before")[-1].startswith("KO: ")
        assert console.ask("avd snapshot")[-1].startswith("KO: ")
        assert console.ask("no such command") == ["KO: unknown command, try 'help'"]
        assert "    avd              control virtual device execution" in console.ask("help")
        console.sock.sendall(b"quit\r\n")
        assert console.file.readline() == b""
    finally:
        console.close()


def test_console_keeps_a_bounded_number_of_snapshots(sim_fleet: SimFleet) -> None:
    console = _Console(sim_fleet.phones[0].console_port)
    try:
        console.reply()
        console.ask(f"auth {sim_fleet.token}")
        for index in range(MAX_SNAPSHOTS - 1):  # default_boot is the first
            assert console.ask(f"avd snapshot save s{index}") == ["OK"]
        assert console.ask("avd snapshot save one_too_many")[-1].startswith("KO: too many snapshots")
        assert console.ask("avd snapshot save s0") == ["OK"]  # replacing one is fine
        assert console.ask("avd snapshot delete s1") == ["OK"]
        assert console.ask("avd snapshot save one_too_many") == ["OK"]
        listing = console.ask("avd snapshot list")
        assert len(listing) == 2 + MAX_SNAPSHOTS + 1  # two heading lines, the snapshots, OK
        assert "one_too_many" in "\n".join(listing)
        assert "s1 " not in "\n".join(listing)
    finally:
        console.close()


def test_console_kill_stops_that_phone_only(sim_fleet: SimFleet) -> None:
    killed, other = sim_fleet.phones
    console = _Console(killed.console_port)
    try:
        console.reply()
        console.ask(f"auth {sim_fleet.token}")
        assert console.ask("kill") == ["OK: killing emulator, bye bye"]
        assert console.file.readline() == b""
    finally:
        console.close()
    sim_fleet.wait_state(killed.serial, None)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", killed.console_port), timeout=5).close()
    assert sim_fleet.adb.run("-s", other.serial, "shell", "echo alive").stdout == b"alive\n"


def test_adb_emu_reaches_the_console(sim_fleet: SimFleet, tmp_path: Path) -> None:
    (tmp_path / ".emulator_console_auth_token").write_text(sim_fleet.token)
    env = dict(sim_fleet.adb.env, HOME=str(tmp_path))
    serial = sim_fleet.serials[1]
    result = subprocess.run(
        [sim_fleet.adb.binary, "-s", serial, "emu", "avd", "name"], env=env, capture_output=True, timeout=10
    )
    assert result.returncode == 0, result
    assert result.stdout.decode().split() == [f"distrl_sim_{sim_fleet.phones[1].console_port}", "OK"]


def test_latency_is_on_the_device_and_per_phone(sim_fleet: SimFleet) -> None:
    slow = sim_fleet.phones[0].adbd
    slow.latency = LatencyModel(LatencyProfile(tap=(Spread(low_s=0.5, high_s=0.5),)), seed=0)
    d0, d1 = _device(sim_fleet, 0), _device(sim_fleet, 1)
    started = time.monotonic()
    tapping = threading.Thread(target=d0.shell, args=("input tap 5 5",))
    tapping.start()
    try:
        assert d1.shell("input tap 5 5; echo other") == "other"  # the other phone does not wait
        assert d0.shell("echo untimed") == "untimed"  # nor do this phone's untimed commands
        assert tapping.is_alive()
    finally:
        tapping.join(timeout=10)
        slow.latency = None
    assert time.monotonic() - started >= 0.5


# -- faults ---------------------------------------------------------------------------------------------


def test_a_hang_times_out_the_client_and_nothing_else(sim_fleet: SimFleet) -> None:
    d = _device(sim_fleet)
    with _faults(sim_fleet, hang=1.0), pytest.raises(adbutils.AdbTimeout):
        d.shell("input tap 5 5", timeout=1)
    assert d.shell("echo alive") == "alive"


def test_a_crash_drops_the_phone_until_it_has_booted(sim_fleet: SimFleet) -> None:
    adb, serial = sim_fleet.adb, sim_fleet.serials[0]
    adb.run("-s", serial, "shell", "settings put global wifi_on 0")
    with _faults(sim_fleet, crash=1.0):
        assert adb.run("-s", serial, "shell", "input keyevent 3").returncode != 0
    sim_fleet.wait_state(serial, "device")
    assert adb.run("-s", serial, "shell", "settings get global wifi_on").stdout == b"1\n"


def test_offline_lasts_until_a_snapshot_is_loaded(sim_fleet: SimFleet) -> None:
    adb, serial = sim_fleet.adb, sim_fleet.serials[0]
    with _faults(sim_fleet, offline=1.0):
        assert adb.run("-s", serial, "shell", "input tap 1 1").returncode != 0
    sim_fleet.wait_state(serial, "offline")
    assert b"offline" in adb.run("-s", serial, "shell", "echo hi").stderr
    console = _Console(sim_fleet.phones[0].console_port)
    try:
        console.reply()
        console.ask(f"auth {sim_fleet.token}")
        assert console.ask("avd status") == ["virtual device is stopped", "OK"]
        assert console.ask("avd snapshot load default_boot") == ["OK"]
    finally:
        console.close()
    sim_fleet.wait_state(serial, "device")
    assert adb.run("-s", serial, "shell", "echo back").stdout == b"back\n"


def test_a_white_frame_is_white_and_the_right_size(sim_fleet: SimFleet) -> None:
    d = _device(sim_fleet)
    with _faults(sim_fleet, white_frame=1.0):
        white = d.screenshot(error_ok=False)
    assert white.size == (1080, 2400)
    assert white.getextrema() == ((255, 255), (255, 255), (255, 255))
    assert d.screenshot(error_ok=False).getextrema() != white.getextrema()


# -- the transport protocol -------------------------------------------------------------------------------


class _Raw:
    """A hand-driven adb transport connection to a phone's adbd."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)

    def send(self, packet: Packet) -> None:
        self.sock.sendall(packet.encode())

    def read(self) -> tuple[Packet, int]:
        """The next packet and the checksum field it came with."""
        header = self._exactly(24)
        command, arg0, arg1, length, check, magic = struct.unpack("<6I", header)
        assert magic == command ^ 0xFFFFFFFF
        return Packet(command, arg0, arg1, self._exactly(length)), check

    def closed(self) -> bool:
        return self.sock.recv(1) == b""

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            assert chunk, "the adbd closed the connection"
            data += chunk
        return data


def test_the_transport_protocol_by_hand(sim_fleet: SimFleet) -> None:
    raw = _Raw(sim_fleet.phones[1].adb_port)
    try:
        raw.send(Packet(OKAY, 9, 9))  # before CNXN: ignored
        raw.send(Packet(CNXN, VERSION, 256 * 1024, b"host::features=shell_v2,cmd\0"))
        hello, check = raw.read()
        assert (hello.command, hello.arg0, hello.arg1) == (CNXN, VERSION, MAX_PAYLOAD)
        assert hello.data.startswith(b"device::ro.product.name=")
        assert hello.data.endswith(b"features=shell_v2,cmd;")
        assert check == sum(hello.data)

        raw.send(Packet(OPEN, 7, 0, b"shell:echo hi\0"))
        ready, _ = raw.read()
        assert (ready.command, ready.arg1) == (OKAY, 7)
        local = ready.arg0
        out, check = raw.read()
        assert (out.command, out.arg0, out.arg1, out.data, check) == (WRTE, local, 7, b"hi\n", sum(b"hi\n"))
        raw.send(Packet(OKAY, 7, local))
        assert raw.read()[0] == Packet(CLSE, local, 7)

        raw.send(Packet(OPEN, 8, 0, b"shell,v2,raw:exit 5\0"))
        local = raw.read()[0].arg0
        assert raw.read()[0] == Packet(WRTE, local, 8, b"\x03\x01\x00\x00\x00\x05")
        raw.send(Packet(OKAY, 8, local))
        assert raw.read()[0] == Packet(CLSE, local, 8)

        raw.send(Packet(OPEN, 9, 0, b"sync:\0"))
        assert raw.read()[0] == Packet(CLSE, 0, 9)
    finally:
        raw.sock.close()


def _hello(raw: _Raw) -> None:
    raw.send(Packet(CNXN, VERSION, MAX_PAYLOAD, b"host::\0"))
    assert raw.read()[0].command == CNXN


def test_a_connection_holds_a_bounded_number_of_streams(sim_fleet: SimFleet) -> None:
    raw = _Raw(sim_fleet.phones[1].adb_port)
    try:
        _hello(raw)
        for remote in range(1, MAX_STREAMS + 1):  # each answers a WRTE that is never acknowledged
            raw.send(Packet(OPEN, remote, 0, b"shell:echo held\0"))
        local: dict[int, int] = {}
        for _ in range(2 * MAX_STREAMS):
            packet = raw.read()[0]
            assert packet.command in (OKAY, WRTE), packet
            local[packet.arg1] = packet.arg0
        assert sorted(local) == list(range(1, MAX_STREAMS + 1))
        raw.send(Packet(OPEN, 1000, 0, b"shell:echo refused\0"))
        assert raw.read()[0] == Packet(CLSE, 0, 1000)
        raw.send(Packet(CLSE, 1, local[1]))  # the host closes one: room for another
        raw.send(Packet(OPEN, 1001, 0, b"shell:echo admitted\0"))
        ready = raw.read()[0]
        assert (ready.command, ready.arg1) == (OKAY, 1001)
        assert raw.read()[0] == Packet(WRTE, ready.arg0, 1001, b"admitted\n")
    finally:
        raw.sock.close()
    assert sim_fleet.adb.run("-s", sim_fleet.serials[1], "shell", "echo fine").stdout == b"fine\n"


@pytest.mark.parametrize("target", ["bootloader", "recovery", "sideload", "fastboot"])
def test_reboot_to_another_target_is_refused(sim_fleet: SimFleet, target: str) -> None:
    served = sim_fleet.phones[1]
    sim_fleet.adb.run("-s", served.serial, "shell", "settings put global wifi_on 0")
    raw = _Raw(served.adb_port)
    try:
        _hello(raw)
        raw.send(Packet(OPEN, 3, 0, f"reboot:{target}\0".encode()))
        assert raw.read()[0] == Packet(CLSE, 0, 3)
    finally:
        raw.sock.close()
    assert served.adbd.state == "up"
    result = sim_fleet.adb.run("-s", served.serial, "shell", "settings get global wifi_on")
    assert result.stdout == b"0\n", "the phone did not reboot"


@pytest.mark.parametrize(
    "garbage",
    [
        b"\0" * 24,  # magic does not match
        struct.pack("<6I", 0x12345678, 0, 0, 0, 0, 0x12345678 ^ 0xFFFFFFFF),  # unknown command
        Packet(CNXN, VERSION, MAX_PAYLOAD, b"host::\0").encode()
        + struct.pack("<6I", WRTE, 1, 1, MAX_PAYLOAD + 1, 0, WRTE ^ 0xFFFFFFFF),  # too long
    ],
    ids=["bad-magic", "unknown-command", "oversized"],
)
def test_malformed_packets_close_only_that_connection(sim_fleet: SimFleet, garbage: bytes) -> None:
    raw = _Raw(sim_fleet.phones[0].adb_port)
    try:
        raw.sock.sendall(garbage)
        while not raw.closed():  # the CNXN answer, if any, comes first
            pass
    finally:
        raw.sock.close()
    result = sim_fleet.adb.run("-s", sim_fleet.serials[0], "shell", "echo fine")
    assert result.stdout == b"fine\n", result


@pytest.mark.parametrize("cut", [0, 30], ids=["between-packets", "mid-packet"])
def test_a_dropped_connection_leaves_the_phone_serving(sim_fleet: SimFleet, cut: int) -> None:
    raw = _Raw(sim_fleet.phones[0].adb_port)
    raw.send(Packet(CNXN, VERSION, MAX_PAYLOAD, b"host::\0"))
    assert raw.read()[0].command == CNXN
    raw.sock.sendall(Packet(OPEN, 1, 0, b"shell:echo never\0").encode()[:cut])
    raw.sock.shutdown(socket.SHUT_WR)
    assert raw.closed()
    raw.sock.close()
    result = sim_fleet.adb.run("-s", sim_fleet.serials[0], "shell", "echo fine")
    assert result.stdout == b"fine\n", result  # and the fixture's teardown finds the fleet unharmed


# -- python -m distrl sim ---------------------------------------------------------------------------------


def _free_base() -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1]) & ~1
        try:
            socks = [socket.create_server(("127.0.0.1", base + i)) for i in range(4)]
        except OSError:
            continue
        for sock in socks:
            sock.close()
        return base
    pytest.fail("no four free consecutive ports")


def test_sim_command_serves_until_ctrl_c(tmp_path: Path) -> None:
    token = tmp_path / "token"
    for _ in range(3):  # the ports found free may be taken by another program before the sim binds them
        base = _free_base()
        command = [sys.executable, "-m", "distrl", "sim", "--devices", "2", "--base-port", str(base)]
        process = subprocess.Popen(
            [*command, "--token-file", str(token), "--no-register"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            # SIGINT at its default, as from a terminal (a test runner started in the background ignores it)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert process.stdout is not None
        assert process.stderr is not None
        lines = [process.stdout.readline().decode().rstrip() for _ in range(2)]
        if lines != ["", ""] or "is in use" not in process.stderr.read().decode():
            break
        process.wait(timeout=10)
    with process:
        try:
            assert lines == [
                f"emulator-{base}  adbd 127.0.0.1:{base + 1}  console {base}",
                f"emulator-{base + 2}  adbd 127.0.0.1:{base + 3}  console {base + 2}",
            ]
            console = _Console(base + 2)
            assert console.reply()[0] == "Android Console: Authentication required"
            assert console.ask(f"auth {token.read_text().strip()}")[-1] == "OK"
            console.close()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) == 0
        finally:
            process.kill()


@pytest.mark.anyio
async def test_no_adb_server_to_register_with_is_one_oserror(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = int(probe.getsockname()[1])
    with pytest.raises(OSError, match=f"could not register with the adb server on port {closed}"):
        await serve_phones(1, base_port=_free_base(), register_with=closed, token_file=tmp_path / "token")


def test_sim_command_port_in_use_is_one_sentence(tmp_path: Path) -> None:
    base = _free_base()
    with socket.create_server(("127.0.0.1", base + 1)):
        result = subprocess.run(
            [sys.executable, "-m", "distrl", "sim", "--base-port", str(base), "--no-register"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=20,
        )
    assert result.returncode == 1
    assert (
        result.stderr == f"distrl: error: cannot serve the phones: port {base + 1} on 127.0.0.1 is in use\n"
    )


def test_sim_command_refuses_a_token_file_or_snapshots_it_cannot_use_before_any_phone_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each console reads the token file as it starts: one it cannot was a traceback of every phone's."""
    from distrl.cli import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "bad").write_bytes(b"\xff\xfe")
    for args, said in [
        (["--token-file", str(tmp_path)], f"--token-file {tmp_path}: Is a directory"),
        (["--token-file", str(tmp_path / "bad")], f"--token-file {tmp_path / 'bad'} is not UTF-8 text"),
        (
            ["--token-file", f"{tmp_path}/file/t"],
            f"--token-file {tmp_path}/file/t: Not a directory",
        ),
        (
            ["--snapshots", str(tmp_path / "file")],
            f"--snapshots: {tmp_path / 'file'} is a file, not a folder",
        ),
        (["--snapshot", "s"], "--snapshot s names a snapshot of --snapshots DIR: give the folder"),
    ]:
        assert main(["sim", "--no-register", "--base-port", str(_free_base()), *args]) == 2, args
        assert capsys.readouterr().err.splitlines() == [f"distrl: error: {said}"], args
