"""Emulators distrl launches: the launcher against a fake ``emulator`` that takes the real command line
and serves a simulated phone, every step seen through the real adb server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
import pytest
from conftest import AdbServer, SimFleet
from support import emulator_ports

from distrl.cli import main
from distrl.config import Devices, ScreenSettings, Timeouts, parse_inventory
from distrl.device.adb import AdbDevice
from distrl.device.emulator import Launcher, state_folder
from distrl.device.screen import screen_options
from distrl.device.sdk import preflight
from distrl.errors import DeviceError, DeviceOffline, EmulatorError
from distrl.fleet import probe_fleet
from distrl.records import Task
from distrl.testing.fake_emulator import install, make_avd

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

AVD = "Pixel_Test"
TIMEOUTS = Timeouts(device_boot_s=60, device_reset_s=20, device_observe_s=20, device_act_s=20)
TASK = Task(id="t", suite="file", goal="look at the home screen", max_steps=1, evaluator="adb")


@dataclass
class Sdk:
    """A fake SDK and AVD home, with what the fake emulator logs of each call."""

    root: Path
    avd_home: Path
    home: Path
    log: Path
    env: dict[str, str]

    def calls(self) -> list[list[str]]:
        """The argument lists of every launch (not ``-list-avds`` or ``-accel-check``)."""
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [line["argv"] for line in lines if "-avd" in line["argv"]]

    def pids(self) -> list[int]:
        lines = [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []
        return [line["pid"] for line in lines if "-avd" in line["argv"]]


@pytest.fixture
def sdk(tmp_path: Path, adb_server: AdbServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sdk]:
    root, avd_home, home = tmp_path / "sdk", tmp_path / "avd", tmp_path / "home"
    install(root)
    make_avd(avd_home, AVD)
    home.mkdir()
    (home / ".emulator_console_auth_token").write_text("fake-emulator-token\n")
    env = {
        "ANDROID_SDK_ROOT": str(root),
        "ANDROID_AVD_HOME": str(avd_home),
        "HOME": str(home),
        "DISTRL_FAKE_KVM": "present",
        "DISTRL_FAKE_EMULATOR_LOG": str(tmp_path / "emulator.jsonl"),
        "DISTRL_FAKE_BOOT_S": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANDROID_HOME", raising=False)
    made = Sdk(root, avd_home, home, tmp_path / "emulator.jsonl", env)
    yield made
    alive = [pid for pid in made.pids() if _alive(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"emulators left running: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead; its parent has not reaped it yet
        return stat.read().split(")")[-1].split()[0] != "Z"


def _free_ports(count: int) -> int:
    """A console port of this process's (``emulator_ports``) whose ``2 * count`` ports from it are free."""
    mine = emulator_ports()
    for first in range(
        mine[-1] + 2 - 2 * count, mine[0] - 1, -2 * count
    ):  # from the top: sim_fleet starts low
        try:
            for port in range(first, first + 2 * count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    pytest.fail(f"no free emulator ports in {mine[0]}-{mine[-1] + 1}")


def _devices(count: int = 1, **settings: object) -> Devices:
    return Devices(avd=AVD, count=count, first_port=_free_ports(count), **settings)  # type: ignore[arg-type]


async def _until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Until ``condition()`` holds: what the test watches (adb's list, a process) sends no event."""
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110
            await anyio.sleep(0.05)


# -- what is known before launching ----------------------------------------------------------------------


@asynccontextmanager
async def _running(devices: Devices, sdk: Sdk) -> AsyncIterator[Launcher]:
    """``devices``' launcher running as a worker with no run folder runs it (its logs in the user's state
    directory); cancelled (every emulator stopped) at the end."""
    launcher = Launcher(devices, TIMEOUTS, env=os.environ)
    async with anyio.create_task_group() as tg:
        await tg.start(launcher.run)
        yield launcher
        tg.cancel_scope.cancel()


async def test_preflight_names_what_is_missing(sdk: Sdk) -> None:
    devices = Devices(avd=AVD)
    assert await preflight(devices, sdk.env) == sdk.root / "emulator" / "emulator"
    no_sdk = {k: v for k, v in sdk.env.items() if k != "ANDROID_SDK_ROOT"}
    with pytest.raises(EmulatorError, match="no Android SDK: set ANDROID_SDK_ROOT"):
        await preflight(devices, no_sdk)
    assert await preflight(replace(devices, sdk_root=str(sdk.root)), no_sdk)  # the inventory's own
    with pytest.raises(EmulatorError, match="has no emulator"):
        await preflight(devices, {**sdk.env, "ANDROID_SDK_ROOT": str(sdk.home)})
    with pytest.raises(EmulatorError, match=rf"no AVD named 'Pixel_9' \(emulator -list-avds: {AVD}\)"):
        await preflight(Devices(avd="Pixel_9"), sdk.env)
    no_kvm = {**sdk.env, "DISTRL_FAKE_KVM": "absent"}
    with pytest.raises(EmulatorError, match=r"no hardware acceleration .*/dev/kvm is not found"):
        await preflight(devices, no_kvm)
    assert await preflight(replace(devices, emulator_flags=("-accel", "off")), no_kvm)


def _no_kvm_host(tmp_path: Path) -> str:
    text = f"""
[[hosts]]
name = "kvm-box"
address = "localhost"
workdir = "{tmp_path}"
env = {{ DISTRL_FAKE_KVM = "absent" }}
devices = {{ avd = "{AVD}", count = 2, first_port = {_free_ports(2)} }}
"""
    (tmp_path / "hosts.toml").write_text(text)
    return text


async def test_probe_names_the_host_whose_emulators_cannot_start(sdk: Sdk, tmp_path: Path) -> None:
    (report,) = await probe_fleet(parse_inventory(_no_kvm_host(tmp_path)))
    assert report.error.startswith("host 'kvm-box': no hardware acceleration"), report.error
    assert "/dev/kvm is not found" in report.error
    assert sdk.calls() == []  # nothing was launched


def test_check_names_the_local_host_whose_emulators_cannot_start(
    sdk: Sdk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_kvm_host(tmp_path)
    assert main(["check", str(tmp_path / "hosts.toml")]) == 2
    assert "host 'kvm-box': no hardware acceleration" in capsys.readouterr().err
    assert sdk.calls() == []  # nothing was launched


# -- launching, booting, snapshots ---------------------------------------------------------------------


async def test_an_emulator_counts_as_booted_once_its_system_is_up(
    sdk: Sdk, adb_server: AdbServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISTRL_FAKE_BOOT_S", "3")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    devices = _devices(snapshot="clean")
    (serial,) = devices.launched
    async with _running(devices, sdk) as launcher:
        instance = launcher.instances[serial]
        await _until(lambda: adb_server.devices().get(serial) == "device")
        listed = time.monotonic()
        booting = adb_server.run("-s", serial, "shell", "getprop", "sys.boot_completed").stdout.strip()
        await instance.up.wait()
        booted = time.monotonic() - listed
        assert adb_server.run("-s", serial, "shell", "getprop", "sys.boot_completed").stdout.strip() == b"1"
    assert booting == b""  # listed by adb, and still booting then
    assert booted > 1.0
    writable, shared = sdk.calls()
    # the AVD had no snapshot "clean": one writable cold boot saved it, then the read-only instance
    assert writable[:4] == ["-avd", AVD, "-port", str(devices.first_port)]
    assert "-no-snapshot-load" in writable
    assert "-read-only" not in writable
    assert shared[4:9] == ["-read-only", "-no-snapshot-save", "-snapshot", "clean", "-no-window"]
    assert (sdk.avd_home / f"{AVD}.avd" / "snapshots" / "clean" / "phone.snapshot").is_file()
    assert not any(_alive(pid) for pid in sdk.pids())  # stopped with the launcher
    state = sdk.home / ".local" / "state" / "distrl"  # no run folder: the user's state directory
    assert (state / "emulators" / f"{serial}.log").read_text().startswith("INFO    | Android emulator")


def test_without_a_run_folder_the_logs_go_to_the_users_state_directory() -> None:
    assert state_folder({"XDG_STATE_HOME": "/var/state", "HOME": "/home/u"}) == Path("/var/state/distrl")
    assert state_folder({"HOME": "/home/u"}) == Path("/home/u/.local/state/distrl")
    # the XDG specification: a relative path is ignored, as an empty one is
    for ignored in ("", "state"):
        assert state_folder({"XDG_STATE_HOME": ignored, "HOME": "/home/u"}) == Path(
            "/home/u/.local/state/distrl"
        )


async def test_resets_load_the_saved_snapshot_and_a_second_launch_saves_none(sdk: Sdk) -> None:
    devices = _devices(count=2, snapshot="clean", memory_mb=2048, cores=2)
    for run in range(2):
        async with _running(devices, sdk) as launcher:
            for serial in devices.launched:
                device = launcher.emulators[serial]
                observation = await device.reset(TASK)
                assert observation.image_format == "png"
                await device.shell("settings put global distrl_mark 7")
                assert (await device.shell("settings get global distrl_mark")).output.strip() == "7"
                await device.reset(TASK)
                assert (await device.shell("settings get global distrl_mark")).output.strip() == "null"
        writable = [call for call in sdk.calls() if "-read-only" not in call]
        assert len(writable) == 1, f"run {run}: {writable}"  # the snapshot is saved once, ever
    for call in sdk.calls():
        assert call[call.index("-memory") + 1] == "2048"
        assert call[call.index("-cores") + 1] == "2"
    assert len(sdk.calls()) == 1 + 2 * 2


async def test_a_killed_emulator_is_relaunched_and_plays_again(sdk: Sdk, adb_server: AdbServer) -> None:
    devices = _devices()
    (serial,) = devices.launched
    async with _running(devices, sdk) as launcher:
        device, instance = launcher.emulators[serial], launcher.instances[serial]
        await device.reset(TASK)
        assert instance.process is not None
        first = instance.process.pid
        os.kill(first, signal.SIGKILL)
        await _until(lambda: instance.launches == 3)  # the snapshot's boot, the first, the relaunch
        observation = await device.reset(TASK)  # waits for the new one to boot
        assert observation.width == 1080
        assert instance.process.pid != first
        assert adb_server.devices().get(serial) == "device"


async def test_an_emulator_that_cannot_boot_is_given_up_after_its_budget(
    sdk: Sdk, monkeypatch: pytest.MonkeyPatch
) -> None:
    (sdk.avd_home / f"{AVD}.avd" / "snapshots" / "default_boot").mkdir(parents=True)  # no snapshot boot
    monkeypatch.setenv("DISTRL_FAKE_EMULATOR_CRASH", "1")
    devices = _devices(max_relaunches=1)
    (serial,) = devices.launched
    async with _running(devices, sdk) as launcher:
        started = time.monotonic()
        with pytest.raises(DeviceOffline) as caught:
            await launcher.emulators[serial].reset(TASK)
    assert "given up after 2 failed launches in a row" in str(caught.value)
    assert "the system image is corrupt" in str(caught.value)  # the emulator's own last words
    assert time.monotonic() - started < 20  # one backoff of 1 s, not device_boot_s
    assert len(sdk.calls()) == 2


def test_no_emulator_outlives_a_killed_worker(sdk: Sdk, tmp_path: Path) -> None:
    """A worker killed with SIGKILL cannot stop its emulators; the kernel does (PR_SET_PDEATHSIG)."""
    devices = _devices(count=2)
    script = textwrap.dedent(f"""
        import anyio, os, pathlib, sys
        from distrl.config import Devices, Timeouts
        from distrl.device.emulator import Launcher

        async def main():
            devices = Devices(avd={AVD!r}, count=2, first_port={devices.first_port})
            timeouts = Timeouts(device_boot_s=60)
            launcher = Launcher(devices, timeouts, env=os.environ, run_folder=pathlib.Path({str(tmp_path)!r}))
            async with anyio.create_task_group() as tg:
                await tg.start(launcher.run)
                for instance in launcher.instances.values():
                    await instance.up.wait()
                print("up", flush=True)
                await anyio.sleep_forever()

        anyio.run(main)
    """)
    worker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=os.environ)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline() == b"up\n"
        running = [pid for pid in sdk.pids() if _alive(pid)]
        assert len(running) == 2
        worker.kill()
        worker.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in running) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in running)
    finally:
        worker.kill()
        worker.wait(timeout=10)


# -- the whole path ------------------------------------------------------------------------------------


def test_run_boots_the_avds_emulators_trains_and_leaves_none_behind(
    sdk: Sdk, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    first = _free_ports(2)
    tasks = tmp_path / "tasks.jsonl"
    check = {"command": "settings get global airplane_mode_on", "equals": "1"}
    tasks.write_text(
        json.dumps(
            {
                "goal": "Turn on airplane mode",
                "setup": ["settings put global airplane_mode_on 1"],
                "check": check,
                "max_steps": 2,
            }
        )
        + "\n"
        + json.dumps({"goal": "Turn off airplane mode", "check": {**check, "equals": "0"}, "max_steps": 2})
        + "\n"
    )
    env = ", ".join(f'{name} = "{value}"' for name, value in sdk.env.items())
    (tmp_path / "hosts.toml").write_text(f"""
[run]
name = "avd"
output_dir = "{tmp_path / "runs"}"
max_trajectories = 6

[tasks]
files = ["tasks.jsonl"]

[learner]
batch_size = 2
min_new_trajectories = 2
micro_batch = 8

[policy]
max_new_tokens = 24

[[hosts]]
name = "kvm-box"
address = "localhost"
workdir = "{tmp_path}"
env = {{ {env} }}
devices = {{ avd = "{AVD}", count = 2, first_port = {first} }}
""")
    assert main(["run", str(tmp_path / "hosts.toml")]) == 0
    out, err = capfd.readouterr()
    assert "6 episodes (" in out, out + err
    assert any((tmp_path / "runs" / "avd").rglob("*.safetensors"))  # trained and checkpointed
    # the emulators' logs are the run's, beside its checkpoints, not in the worker's working folder
    logs = sorted(path.name for path in (tmp_path / "runs" / "avd" / "emulators").iterdir())
    assert logs == [f"emulator-{first}.log", f"emulator-{first + 2}.log"]
    assert not any(tmp_path.rglob("distrl-emulators"))
    launched = sdk.calls()
    ports = [call[call.index("-port") + 1] for call in launched]
    assert ports[0] == str(first)  # the snapshot's boot
    assert sorted(ports[1:3]) == [str(first), str(first + 2)], out + err
    # A loaded machine may have one answer a reset too late: it is relaunched, and says so (CI saw it once)
    relaunched = ports[3:]
    assert set(relaunched) <= {str(first), str(first + 2)}, out + err
    assert err.count("; relaunching in ") == len(relaunched), out + err
    assert not any(_alive(pid) for pid in sdk.pids())
    checks = [
        line["argv"]
        for line in map(json.loads, sdk.log.read_text().splitlines())
        if "-avd" not in line["argv"]
    ]
    assert checks == [["-list-avds"], ["-accel-check"]]  # the hello's preflight, which the launcher takes


# -- attached devices: checked at the handshake, screens re-encoded ------------------------------------


def _start_emulator(sdk: Sdk, port: int, boot_s: float) -> subprocess.Popen[bytes]:
    """The fake emulator started by hand, as a user starts one that distrl only attaches to."""
    binary = sdk.root / "emulator" / "emulator"
    env = {**os.environ, "DISTRL_FAKE_BOOT_S": str(boot_s)}
    command = [str(binary), "-avd", AVD, "-port", str(port), "-read-only", "-no-window"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def two_attached(sdk: Sdk, adb_server: AdbServer) -> Iterator[int]:
    """Two emulators distrl did not launch, on console ports P and P+2: the first still booting (for a
    minute), the second up."""
    port = _free_ports(2)
    started = [_start_emulator(sdk, port, 60), _start_emulator(sdk, port + 2, 0)]
    try:
        deadline = time.monotonic() + 30
        while any(adb_server.devices().get(f"emulator-{p}") != "device" for p in (port, port + 2)):
            assert time.monotonic() < deadline, adb_server.devices()
            time.sleep(0.05)
        yield port
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=10)


def _attached_inventory(tmp_path: Path, sdk: Sdk, ports: list[int], run: str = "") -> str:
    text = f"""
[run]
output_dir = "{tmp_path / "runs"}"
{run}

[tasks]
files = ["tasks.jsonl"]

[[hosts]]
name = "phones"
address = "localhost"
env = {{ HOME = "{sdk.home}" }}
devices = {{ emulator_ports = {ports} }}
"""
    check = {"command": "getprop sys.boot_completed", "equals": "1"}
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"goal": "Wait", "check": check, "max_steps": 1}) + "\n")
    (tmp_path / "hosts.toml").write_text(text)
    return text


async def test_probe_names_the_device_that_is_still_booting(
    sdk: Sdk, two_attached: int, tmp_path: Path
) -> None:
    port = two_attached
    text = _attached_inventory(tmp_path, sdk, [port, port + 2])
    (report,) = await probe_fleet(parse_inventory(text, source=str(tmp_path / "hosts.toml")))
    assert f"emulator-{port}: still booting (sys.boot_completed is not 1)" in report.error
    assert f"emulator-{port + 2}" not in report.error  # booted, and its screenshot came
    (report,) = await probe_fleet(parse_inventory(_attached_inventory(tmp_path, sdk, [port + 2])))
    assert report.ok, report.error


def test_a_run_whose_host_has_no_working_device_stops_and_says_why(
    sdk: Sdk, two_attached: int, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _attached_inventory(tmp_path, sdk, [two_attached], run="max_restarts = 0\nmax_trajectories = 2")
    assert main(["run", str(tmp_path / "hosts.toml")]) == 1
    err = capfd.readouterr().err
    assert f"host 'phones' has no working device: emulator-{two_attached}: still booting" in err, err


async def test_screens_of_adb_devices_come_in_the_screen_format_and_size(sim_fleet: SimFleet) -> None:
    serial = sim_fleet.serials[0]
    small = ScreenSettings(image_format="jpeg", jpeg_quality=70, max_pixels=540 * 1200)
    kwargs = {"timeouts": TIMEOUTS, "console_token_file": str(sim_fleet.token_file)}
    as_captured = await AdbDevice(serial, **kwargs).observe()  # type: ignore[arg-type]
    observation = await AdbDevice(serial, **kwargs, **screen_options(small)).observe()  # type: ignore[arg-type]
    assert as_captured.image_format == "png"
    assert (as_captured.width, as_captured.height) == (1080, 2400)
    assert observation.image_format == "jpeg"
    assert observation.screenshot.startswith(b"\xff\xd8")
    assert (observation.width, observation.height) == (540, 1200)
    assert len(observation.screenshot) * 2 < len(as_captured.screenshot)
    same_size = await AdbDevice(serial, **kwargs, **screen_options(ScreenSettings())).observe()  # type: ignore[arg-type]
    assert (same_size.width, same_size.height) == (1080, 2400)  # at most the default's 1080 × 2400: as it is
    assert same_size.image_format == "jpeg"


async def test_a_port_taken_by_an_emulator_distrl_did_not_launch_is_not_taken_for_its_own(sdk: Sdk) -> None:
    (sdk.avd_home / f"{AVD}.avd" / "snapshots" / "default_boot").mkdir(parents=True)
    devices = _devices(max_relaunches=0)
    (serial,) = devices.launched
    with socket.socket() as other:  # someone else's adbd on the instance's adb port
        other.bind(("127.0.0.1", devices.first_port + 1))
        other.listen()
        async with _running(devices, sdk) as launcher:
            with pytest.raises(DeviceOffline, match=f"port {devices.first_port + 1} is in use"):
                await launcher.emulators[serial].reset(TASK)
    assert sdk.calls() == []  # nothing started on a port in use


async def test_a_task_whose_setup_fails_does_not_cost_the_emulator_a_relaunch(sdk: Sdk) -> None:
    devices = _devices()
    (serial,) = devices.launched
    async with _running(devices, sdk) as launcher:
        device, instance = launcher.emulators[serial], launcher.instances[serial]
        await device.reset(TASK)
        broken = Task(id="b", suite="file", goal="g", setup=("am start -n com.example.missing/.Main",))
        with pytest.raises(DeviceError, match="setup command"):
            await device.reset(broken)
        assert instance.up.is_set()  # the task's fault: the emulator plays on
        await device.reset(TASK)
        assert instance.launches == 2  # the snapshot's boot and this one; no relaunch
