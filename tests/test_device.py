"""The ``Device`` contract, passed by ``SimDevice`` and by ``AdbDevice`` (the sim served as an emulator,
driven through the real adb server); then faults, cancellation, and what only one of them has.

Tasks here carry their own setup commands (``Task.setup``), so the contract does not depend on which
templates the suites hold; ``test_reset_runs_a_suite_task_setup`` covers the real suites.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from PIL import Image

from distrl.actions import swipe_action, tap_action, to_gesture
from distrl.config import (
    ScreenSettings,
    Timeouts,
    parse_inventory,
    parse_worker_settings,
    worker_settings_json,
)
from distrl.device import AdbDevice, Device, screen
from distrl.device.console import ConsoleError, EmulatorConsole, read_token
from distrl.device.protocol import Gate
from distrl.device.screen import Frame, capture, decode, is_blank
from distrl.errors import BadScreenshot, DeviceCrashed, DeviceError, DeviceOffline, DeviceTimeout
from distrl.records import Action, ActionType, Observation, Task
from distrl.sim import adbd as sim_adbd
from distrl.sim.device import SimDevice, open_sim, sim_device
from distrl.sim.latency import (
    Fault,
    FaultModel,
    FaultRates,
    LatencyModel,
    LatencyProfile,
    Spread,
    task_slowness,
)
from distrl.sim.phone import LAUNCHER, Phone, PhoneConfig
from distrl.sim.shell import ShellResult
from distrl.sim.shell import run_shell as sim_run_shell
from distrl.sim.suites import tasks as suite_tasks

if TYPE_CHECKING:
    from conftest import AdbServer, SimFleet

pytestmark = pytest.mark.anyio

TIMEOUTS = Timeouts(
    device_boot_s=6.0, device_reset_s=2.0, device_observe_s=1.5, device_act_s=1.5, cleanup_s=1.0
)
CONFIG = PhoneConfig(nuisances=False)
SLACK_S = 0.5
"""How late a timeout may fire on a loaded test machine."""

HOME = Action(type=ActionType.PRESS_HOME)
BACK = Action(type=ActionType.PRESS_BACK)
ENTER = Action(type=ActionType.PRESS_ENTER)


def _task(*commands: str, name: str = "start") -> Task:
    """A task whose start state is ``commands`` run on a clean phone."""
    return Task(id=f"test/{name}", suite="test", goal=f"test {name}", setup=commands)


WIFI_OFF = _task("settings put global wifi_on 0", name="wifi_off")


def _fixed(**seconds: float) -> LatencyProfile:
    """A profile where each named op takes exactly that long and every other op no time."""
    return LatencyProfile(**{op: (Spread(low_s=s, high_s=s),) for op, s in seconds.items()})


# ---------------------------------------------------------------------------------------------- rigs


@dataclass
class Rig:
    """A device under test, and the handles a test needs around it."""

    kind: str
    device: Device
    config: PhoneConfig
    """The phone's configuration: ``Phone(config)`` is the phone as it booted."""
    other: Callable[[Timeouts], Device]
    """Another device with other timeouts: on the same phone (adb), or a like one (sim)."""
    set_latency: Callable[[LatencyProfile | None], None]
    """How long the phone takes from now on (None: no time)."""
    set_faults: Callable[[FaultRates | None], None]
    """Which faults strike the phone from now on (None: none)."""

    @property
    def size(self) -> tuple[int, int]:
        return self.config.width, self.config.height


@pytest.fixture
async def sim_rig() -> AsyncIterator[Rig]:
    device = SimDevice("sim-0", phone_config=CONFIG, timeouts=TIMEOUTS)

    def other(timeouts: Timeouts) -> Device:
        return SimDevice(
            "sim-1", phone_config=CONFIG, timeouts=timeouts, latency=device.latency, faults=device.faults
        )

    def set_latency(profile: LatencyProfile | None) -> None:
        device.latency = LatencyModel(profile, seed=0) if profile else None

    def set_faults(rates: FaultRates | None) -> None:
        device.faults = FaultModel(rates, seed=0) if rates else None

    yield Rig("sim", device, CONFIG, other, set_latency, set_faults)
    await device.aclose()


@pytest.fixture
async def adb_rig(adb_server: AdbServer, sim_fleet: SimFleet) -> AsyncIterator[Rig]:
    served = sim_fleet.phones[0]

    def other(timeouts: Timeouts) -> Device:
        return AdbDevice(
            served.serial,
            timeouts=timeouts,
            adb_port=adb_server.port,
            console_port=served.console_port,
            console_token_file=str(sim_fleet.token_file),
        )

    # The fleet's event loop reads these attributes per command; plain assignments are safe.
    def set_latency(profile: LatencyProfile | None) -> None:
        served.adbd.latency = LatencyModel(profile, seed=0) if profile else None

    def set_faults(rates: FaultRates | None) -> None:
        served.adbd.faults = FaultModel(rates, seed=0) if rates else None

    device = other(TIMEOUTS)
    yield Rig("adb", device, served.phone.config, other, set_latency, set_faults)
    await device.aclose()


@pytest.fixture(params=["sim", "adb"])
def rig(request: pytest.FixtureRequest) -> Rig:
    found: Rig = request.getfixturevalue(f"{request.param}_rig")
    return found


# ---------------------------------------------------------------------------------------------- oracle
#
# What a device does is checked against a phone of the same configuration driven directly: the same
# setup commands, the one screenshot a reset takes, then the same gestures. Its state must be the
# device's, to the last field (the virtual clock and the random stream's position included).


def _reference(rig: Rig, task: Task, rng: int = 0) -> Phone:
    """A phone like the rig's, put through what ``reset(task)`` does: boot, setup, one screenshot.

    ``rng`` is the device's random-stream position before the reset (a restore does not rewind it).
    """
    phone = Phone(rig.config)
    phone.data["rng"] = rng
    for command in task.setup:
        assert sim_run_shell(phone, command).exit_code == 0, command
    phone.screenshot("png")
    return phone


async def _reset(rig: Rig, task: Task) -> Phone:
    """Reset the rig's device to ``task``; the reference phone in the same state."""
    before = await rig.device.state()
    await rig.device.reset(task)
    return _reference(rig, task, int(before["rng"]) if before else 0)


def _apply(phone: Phone, action: Action) -> None:
    """What ``act(action)`` does to the phone."""
    phone.perform(to_gesture(action, phone.width, phone.height))


async def _act(rig: Rig, phone: Phone, action: Action) -> dict[str, Any]:
    """``action`` on the device and on the reference phone; the device's state, checked equal."""
    await rig.device.act(action)
    _apply(phone, action)
    state = await rig.device.state()
    assert state == phone.state()
    return state


# ---------------------------------------------------------------------------------------------- helpers


def _image(observation: Observation) -> Image.Image:
    image = Image.open(io.BytesIO(observation.screenshot))
    assert image.format == observation.image_format.upper()
    image.load()
    return image


def _tap(phone: Phone, element_id: str) -> Action:
    """A tap in the middle of ``element_id`` as it is on ``phone``'s screen now."""
    element = next(e for e in phone.elements() if e.id == element_id)
    x, y = element.box.centre
    return tap_action(int(x), int(y), phone.width, phone.height)


def _apps(config: PhoneConfig) -> list[str]:
    """The installed apps but the launcher, Settings first when it is there."""
    apps = [pkg for pkg in Phone(config).packages if pkg != LAUNCHER]
    return sorted(apps, key=lambda pkg: pkg != "com.android.settings")


def _an_app(config: PhoneConfig) -> str:
    apps = _apps(config)
    assert apps, "the sim has no app but the launcher"
    return apps[0]


def _launch(package: str) -> str:
    return f"monkey -p {package} -c android.intent.category.LAUNCHER 1"


def _top(state: dict[str, Any] | None) -> dict[str, Any]:
    assert state is not None
    top: dict[str, Any] = state["top"]
    return top


# ---------------------------------------------------------------------------------------------- contract


async def test_reset_returns_the_start_screen(rig: Rig) -> None:
    observation = await rig.device.reset(WIFI_OFF)
    image = _image(observation)
    assert image.size == (observation.width, observation.height) == rig.size
    assert not is_blank(image)
    state = await rig.device.state()
    assert state == _reference(rig, WIFI_OFF).state()
    assert state is not None
    assert state["top"] == {"package": LAUNCHER, "screen": "home", "args": {}}
    assert state["settings"]["global"]["wifi_on"] == "0"  # the task's setup ran


async def test_observe_returns_a_decodable_image_of_the_phone_size(rig: Rig) -> None:
    await rig.device.reset(_task())
    observation = await rig.device.observe()
    image = _image(observation)
    assert image.size == rig.size
    assert (observation.width, observation.height) == rig.size
    assert not is_blank(image)
    assert observation.timestamp_s > 0


async def test_a_tap_on_a_launcher_icon_opens_the_app(rig: Rig) -> None:
    package = _an_app(rig.config)
    phone = await _reset(rig, _task())
    state = await _act(rig, phone, _tap(phone, f"launcher/app/{package}"))
    assert _top(state)["package"] == package


async def test_home_keeps_the_app_running_and_back_closes_it(rig: Rig) -> None:
    package = _an_app(rig.config)
    task = _task(_launch(package))
    phone = await _reset(rig, task)
    assert _top(await rig.device.state())["package"] == package
    state = await _act(rig, phone, HOME)
    assert state["top"] == {"package": LAUNCHER, "screen": "home", "args": {}}
    assert package in state["tasks"]  # HOME leaves the app running, as Android does
    phone = await _reset(rig, task)
    for _ in range(3):  # BACK closes a pop-up first, if the app showed one
        state = await _act(rig, phone, BACK)
        if package not in state["tasks"]:
            break
    assert _top(state)["package"] == LAUNCHER
    assert package not in state["tasks"]  # BACK on the app's first screen closes it


def _a_field(config: PhoneConfig, task: Callable[[str], Task]) -> tuple[Task, str]:
    """A start state whose screen has a field that a tap focuses, and the field's id."""
    for package in _apps(config):
        phone = Phone(config)
        phone.launch(package)
        for element in phone.elements():
            if element.kind == "field" and element.on_tap is not None:
                return task(package), element.id
    raise AssertionError("no app of the sim has a field on its first screen")


async def test_typing_goes_into_the_focused_field_and_enter_submits_it(rig: Rig) -> None:
    task, field = _a_field(rig.config, lambda package: _task(_launch(package)))
    phone = await _reset(rig, task)
    await _act(rig, phone, _tap(phone, field))
    focus = phone.top_frame["focus"]
    assert focus is not None
    typed = await _act(rig, phone, Action(type=ActionType.TYPE, text="blue shoes"))
    frame = typed["tasks"][phone.top_package][-1]
    assert frame["fields"][focus] == "blue shoes"  # the space arrived (adb sends it as %s)
    entered = await _act(rig, phone, ENTER)
    assert entered != typed


SWIPE_UP = ((0.5, 0.7), (0.5, 0.3))
"""A swipe up the middle of the screen, as ``(x, y)`` fractions from and to."""


def _swipe_up(config: PhoneConfig) -> Action:
    (x0, y0), (x1, y1) = SWIPE_UP
    w, h = config.width, config.height
    return swipe_action(int(x0 * w), int(y0 * h), int(x1 * w), int(y1 * h), w, h)


def _scrollable(config: PhoneConfig) -> str:
    """An app whose first screen scrolls when swiped up."""
    for package in _apps(config):
        phone = Phone(config)
        phone.launch(package)
        _apply(phone, _swipe_up(config))
        if phone.top_frame["scroll"] > 0:
            return package
    raise AssertionError("no app of the sim scrolls on its first screen when swiped up")


async def test_a_swipe_up_scrolls_the_content(rig: Rig) -> None:
    package = _scrollable(rig.config)
    task = _task(_launch(package))
    phone = await _reset(rig, task)
    state = await _act(rig, phone, _swipe_up(rig.config))
    assert state["tasks"][package][-1]["scroll"] > 0


async def test_status_actions_do_nothing_on_the_device(rig: Rig) -> None:
    await rig.device.reset(_task())
    before = await rig.device.state()
    await rig.device.act(Action(type=ActionType.STATUS_TASK_COMPLETE))
    await rig.device.act(Action(type=ActionType.STATUS_TASK_IMPOSSIBLE))
    assert await rig.device.state() == before


async def test_reset_after_changes_restores_the_clean_state(rig: Rig) -> None:
    first = await rig.device.reset(WIFI_OFF)
    clean = await rig.device.state()
    apps = _apps(rig.config)
    await rig.device.reset(_task("settings put global wifi_on 1", "settings put system font_scale 2.0"))
    if apps:
        await rig.device.act(_tap(Phone(rig.config), f"launcher/app/{apps[0]}"))
    await rig.device.act(BACK)
    await rig.device.act(Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.5), lift=(0.1, 0.5)))
    changed = await rig.device.state()
    assert changed != clean
    again = await rig.device.reset(WIFI_OFF)
    restored = await rig.device.state()
    assert restored is not None
    assert clean is not None
    assert changed is not None
    assert restored["rng"] >= changed["rng"]  # chance goes on; everything else is back
    assert {**restored, "rng": 0} == {**clean, "rng": 0}
    assert again.screenshot == first.screenshot


async def test_shell_answers_with_the_output_and_exit_status(rig: Rig) -> None:
    await rig.device.reset(_task("settings put global airplane_mode_on 1"))
    answer = await rig.device.shell("settings get global airplane_mode_on")
    assert (answer.status, answer.output.strip()) == (0, "1")
    await rig.device.reset(_task())
    assert (await rig.device.shell("settings get global airplane_mode_on")).output.strip() == "0"
    missing = await rig.device.shell("am start -n com.example.missing/.Main")
    assert missing.status not in (0, None)  # a failing command is an answer, not an error


async def test_a_failing_setup_command_raises_a_device_error(rig: Rig) -> None:
    with pytest.raises(DeviceError, match=r"com\.example\.missing") as caught:
        await rig.device.reset(_task("am start -n com.example.missing/.Main"))
    assert caught.value.operation == "reset"
    assert caught.value.device == rig.device.name
    await rig.device.reset(_task())  # the device is fine


async def test_operations_after_aclose_raise_device_offline(rig: Rig) -> None:
    await rig.device.reset(_task())
    await rig.device.aclose()
    await rig.device.aclose()  # idempotent
    with pytest.raises(DeviceOffline):
        await rig.device.reset(_task())
    with pytest.raises(DeviceOffline):
        await rig.device.observe()
    with pytest.raises(DeviceOffline):
        await rig.device.act(HOME)
    with pytest.raises(DeviceOffline):
        await rig.device.act(Action(type=ActionType.STATUS_TASK_COMPLETE))
    with pytest.raises(DeviceOffline):
        await rig.device.state()


async def test_timeouts_fire(rig: Rig) -> None:
    await rig.device.reset(_task())
    rig.set_latency(_fixed(screenshot=1.0, key=1.0, tap=1.0, reset=1.0))
    short = Timeouts(device_boot_s=0.2, device_reset_s=0.2, device_observe_s=0.2, device_act_s=0.2)
    slow = rig.other(short)
    operations: list[Callable[[], Any]] = [slow.observe, lambda: slow.act(HOME)]
    if rig.kind == "sim":
        operations.append(lambda: slow.reset(_task()))
    for operation in operations:
        start = anyio.current_time()
        with pytest.raises(DeviceTimeout) as caught:
            await operation()
        assert anyio.current_time() - start < 0.2 + SLACK_S
        assert caught.value.timeout_s is not None
    await slow.aclose()
    rig.set_latency(None)
    await rig.device.reset(_task())  # the phone is fine


async def test_a_cancelled_observe_leaves_the_device_working(rig: Rig) -> None:
    await rig.device.reset(_task())
    rig.set_latency(_fixed(screenshot=0.3))
    for delay in (0.0, 0.01, 0.1):
        with anyio.move_on_after(delay) as scope:
            await rig.device.observe()
        assert scope.cancelled_caught
    rig.set_latency(None)
    with anyio.move_on_after(0.001):  # cancelled while the screen is encoded
        await rig.device.observe()
    _image(await rig.device.observe())
    await rig.device.act(HOME)
    assert _top(await rig.device.state())["package"] == LAUNCHER


# ---------------------------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("fault", "error"),
    [(Fault.HANG, DeviceTimeout), (Fault.CRASH, DeviceOffline), (Fault.OFFLINE, DeviceOffline)],
)
async def test_each_fault_surfaces_as_its_error_in_time_and_reset_recovers(
    rig: Rig, fault: Fault, error: type[DeviceError]
) -> None:
    await rig.device.reset(WIFI_OFF)
    rig.set_latency(_fixed(boot=1.0))
    rig.set_faults(FaultRates(**{fault.value: 1.0}))
    for operation in (rig.device.observe, lambda: rig.device.act(HOME)):
        start = anyio.current_time()
        with pytest.raises(error):
            await operation()
        assert anyio.current_time() - start < TIMEOUTS.device_observe_s + SLACK_S
    rig.set_faults(None)
    if fault is not Fault.HANG:
        with pytest.raises(DeviceOffline):  # down until reset
            await rig.device.observe()
    start = anyio.current_time()
    observation = await rig.device.reset(WIFI_OFF)
    took = anyio.current_time() - start
    _image(observation)
    assert _top(await rig.device.state())["package"] == LAUNCHER
    if rig.kind == "sim":
        assert (took >= 1.0) == (fault is Fault.CRASH)  # only a crash reboots


async def test_a_crashed_sim_raises_device_crashed_until_reset(sim_rig: Rig) -> None:
    await sim_rig.device.reset(_task())
    sim_rig.set_faults(FaultRates(crash=1.0))
    with pytest.raises(DeviceCrashed, match="crashed"):
        await sim_rig.device.act(HOME)
    sim_rig.set_faults(None)
    with pytest.raises(DeviceCrashed):
        await sim_rig.device.state()
    await sim_rig.device.reset(_task())
    assert await sim_rig.device.state() is not None


async def test_white_frames_are_retried_then_raise_bad_screenshot(rig: Rig) -> None:
    await rig.device.reset(_task())
    rig.set_faults(FaultRates(white_frame=1.0))
    start = anyio.current_time()
    with pytest.raises(BadScreenshot) as caught:
        await rig.device.observe()
    assert anyio.current_time() - start < TIMEOUTS.device_observe_s + SLACK_S
    assert caught.value.reason == "white"
    assert caught.value.attempts == 6  # the first capture and DigiRL's 5 retries
    rig.set_faults(FaultRates(white_frame=0.5))
    for _ in range(5):
        assert not is_blank(_image(await rig.device.observe()))
    rig.set_faults(None)
    _image(await rig.device.reset(_task()))


# ---------------------------------------------------------------------------------------------- adb only


@pytest.fixture
def screencap_output(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Answers the sim's adbd gives instead of running a command, by command line."""
    canned: dict[str, bytes] = {}

    def run_shell(phone: Phone, command: str) -> ShellResult:
        if command in canned:
            return ShellResult(canned[command], 0)
        return sim_run_shell(phone, command)

    monkeypatch.setattr(sim_adbd, "run_shell", run_shell)
    return canned


async def test_a_corrupt_png_raises_bad_screenshot_never_a_black_image(
    adb_rig: Rig, screencap_output: dict[str, bytes]
) -> None:
    good = (await adb_rig.device.reset(_task())).screenshot
    screencap_output["screencap -p"] = good[: len(good) // 2]
    with pytest.raises(BadScreenshot, match="corrupt PNG") as caught:
        await adb_rig.device.observe()
    assert caught.value.reason == "corrupt"
    screencap_output["screencap -p"] = b"screencap: error\n"
    with pytest.raises(BadScreenshot, match="not a PNG"):
        await adb_rig.device.observe()
    del screencap_output["screencap -p"]
    assert (await adb_rig.device.observe()).screenshot == good


async def test_state_is_none_where_the_device_cannot_report_it(
    adb_rig: Rig, screencap_output: dict[str, bytes]
) -> None:
    screencap_output["dumpsys distrl"] = b"Can't find service: distrl\n"  # a real emulator's answer
    assert await adb_rig.device.state() is None


async def test_a_command_left_behind_never_lands_after_the_next_reset(adb_rig: Rig) -> None:
    """An ``act`` given up on leaves its adb thread waiting for the answer while the device runs the
    command late; the next ``reset`` waits for that thread, so the tap lands before the snapshot load,
    not on the restored phone."""
    package = _an_app(adb_rig.config)
    phone = await _reset(adb_rig, _task())
    adb_rig.set_latency(_fixed(tap=0.5))
    with anyio.move_on_after(0.1) as scope:
        await adb_rig.device.act(_tap(phone, f"launcher/app/{package}"))
    assert scope.cancelled_caught
    adb_rig.set_latency(None)
    start = anyio.current_time()
    await adb_rig.device.reset(_task())
    assert anyio.current_time() - start >= 0.3  # the tap's thread had about 0.4 s to go
    await anyio.sleep(0.6)  # well after the tap would have landed
    assert _top(await adb_rig.device.state())["package"] == LAUNCHER


async def test_a_phone_without_a_console_is_reset_by_clearing_the_tasks_apps(
    adb_server: AdbServer, sim_fleet: SimFleet
) -> None:
    """Reached over TCP (``adb connect``), the served phone has no emulator console, as a USB phone:
    its reset force-stops and clears the task's apps and goes HOME, and does not reboot."""
    served = sim_fleet.phones[0]
    address = f"127.0.0.1:{served.adb_port}"
    connected = adb_server.run("connect", address)
    assert b"connected" in connected.stdout, connected
    sim_fleet.wait_state(address, "device")
    phone = AdbDevice(address, timeouts=TIMEOUTS, adb_port=adb_server.port)
    assert phone.console_port is None
    chrome = "com.android.chrome"
    browse = Task(
        id="browse",
        suite="t",
        goal="g",
        apps=(chrome,),
        setup=(
            "settings put global airplane_mode_on 1",
            "am start -a android.intent.action.VIEW -d https://www.newegg.com",
        ),
    )
    await phone.reset(browse)
    state = await phone.state()
    assert state is not None
    assert state["top"]["package"] == chrome
    assert state["apps"][chrome]["history"]  # the visit is in the browser's data
    again = Task(
        id="t",
        suite="t",
        goal="g",
        apps=(chrome, "com.example.not.installed"),
        setup=("settings put global wifi_on 0",),
    )
    await phone.reset(again)
    state = await phone.state()
    assert state is not None
    assert state["top"]["package"] == LAUNCHER  # HOME
    assert not state["apps"][chrome]["history"]  # cleared
    assert chrome not in state["tasks"]  # stopped
    assert state["settings"]["global"]["wifi_on"] == "0"  # then the task's setup
    assert state["settings"]["global"]["airplane_mode_on"] == "1"  # not rebooted, no snapshot loaded
    await phone.aclose()


async def test_reset_reboots_when_the_snapshot_cannot_be_loaded(
    adb_server: AdbServer, sim_fleet: SimFleet
) -> None:
    served = sim_fleet.phones[0]
    device = AdbDevice(
        served.serial,
        timeouts=TIMEOUTS,
        adb_port=adb_server.port,
        console_token_file=str(sim_fleet.token_file),
        snapshot="no_such_snapshot",
    )
    async with device:
        await device.reset(_task("settings put global wifi_on 0"))
        await device.act(HOME)
        await device.reset(WIFI_OFF)  # KO from the console: reboot, then the setup
        state = await device.state()
        assert state is not None
        assert state["settings"]["global"]["wifi_on"] == "0"
        assert state["settings"]["system"]["font_scale"] == "1.0"
        assert state["top"]["package"] == LAUNCHER


async def test_the_console_client_authenticates_and_reports_ko(sim_fleet: SimFleet) -> None:
    served = sim_fleet.phones[0]
    token = await read_token(str(sim_fleet.token_file))
    assert token
    with anyio.fail_after(5):
        async with EmulatorConsole.connect(served.console_port, token=token) as console:
            listing = await console.command("avd snapshot list")
            assert any("default_boot" in line for line in listing)
            with pytest.raises(ConsoleError, match="KO"):
                await console.command("avd snapshot load no_such_snapshot")
            assert await console.command("ping") == ["I am alive!"]
        with pytest.raises(ConsoleError, match="KO: authentication"):
            async with EmulatorConsole.connect(served.console_port, token="wrong"):
                pass
        with pytest.raises(ConsoleError, match="token file is missing"):
            async with EmulatorConsole.connect(served.console_port, token=None):
                pass


# ---------------------------------------------------------------------------------------------- units


def test_decode_refuses_what_is_not_a_whole_png() -> None:
    image = Image.new("RGB", (40, 80), (10, 20, 30))
    image.putpixel((3, 3), (200, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    data = out.getvalue()
    assert decode(data).size == (40, 80)
    for bad in (b"", b"garbage", data[: len(data) - 20], data[:8] + b"\0" * 40):
        with pytest.raises(ValueError, match="PNG"):
            decode(bad)


async def test_capture_retries_white_frames_then_gives_up() -> None:
    gate = Gate(host="h", device="d")
    frames: list[Frame | None] = [None, None, (b"png", 3, 2)]
    tries: list[int] = []

    async def grab(attempt: int) -> Frame | None:
        tries.append(attempt)
        return frames[attempt - 1]

    observation = await capture(grab, gate=gate, operation="observe", image_format="png", retries=2)
    assert (observation.screenshot, observation.width, observation.height) == (b"png", 3, 2)
    assert tries == [1, 2, 3]
    tries.clear()
    with pytest.raises(BadScreenshot, match="2 white frames") as caught:
        await capture(grab, gate=gate, operation="observe", image_format="png", retries=1)
    assert (caught.value.reason, caught.value.attempts, caught.value.device, tries) == (
        "white",
        2,
        "d",
        [1, 2],
    )


def test_the_sim_and_the_devices_encode_screens_one_way() -> None:
    phone = Phone(CONFIG)
    for image_format in screen.IMAGE_FORMATS:
        assert phone.screenshot(image_format, 70) == screen.encode(phone.render(), image_format, 70)


def test_is_blank_means_every_pixel_the_same() -> None:
    assert is_blank(Image.new("RGB", (30, 30), (255, 255, 255)))
    assert is_blank(Image.new("L", (30, 30), 0))
    speck = Image.new("RGB", (30, 30), (255, 255, 255))
    speck.putpixel((29, 29), (255, 255, 254))
    assert not is_blank(speck)


async def test_a_sim_task_runs_as_slow_as_its_slowness(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(anyio, "sleep", record)
    fixed = _fixed(screenshot=0.5, reset=0.25, key=0.125)
    waits = {}
    for spread in (1.0, 50.0):
        device = SimDevice(
            "sim-0",
            phone_config=CONFIG,
            timeouts=TIMEOUTS,
            latency=LatencyModel(fixed, seed=0),
            task_spread=spread,
        )
        for task in (WIFI_OFF, _task()):
            slept.clear()
            await device.reset(task)
            await device.act(HOME)
            await device.observe()
            waits[spread, task.id] = list(slept)
        await device.aclose()
    for task in (WIFI_OFF, _task()):
        factor = task_slowness(task.id, 50.0)
        assert waits[1.0, task.id] == pytest.approx([0.25, 0.5, 0.125, 0.5])
        assert waits[50.0, task.id] == pytest.approx([w * factor for w in waits[1.0, task.id]])
    assert task_slowness(WIFI_OFF.id, 50.0) != task_slowness(_task().id, 50.0)
    with pytest.raises(ValueError, match="spread"):
        SimDevice("sim-0", phone_config=CONFIG, timeouts=TIMEOUTS, task_spread=0.5)


def test_sim_device_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="image_format"):
        SimDevice("sim-0", phone_config=CONFIG, timeouts=TIMEOUTS, image_format="gif")
    with pytest.raises(ValueError, match="jpeg_quality"):
        SimDevice("sim-0", phone_config=CONFIG, timeouts=TIMEOUTS, jpeg_quality=0)


async def test_sim_screens_come_in_the_screen_format_and_at_most_its_size() -> None:
    settings = parse_worker_settings('{"sim": {"width": 540, "height": 1200, "latency": "off"}}')
    small = ScreenSettings(image_format="png", max_pixels=54_000)
    async with open_sim("sim-0", settings.sim, screen=small, timeouts=TIMEOUTS, seed=1) as device:
        observation = await device.observe()
    image = _image(observation)
    assert (observation.image_format, image.format) == ("png", "PNG")
    assert (observation.width, observation.height) == image.size == (155, 346)  # 540 × 1200 scaled down
    async with open_sim("sim-0", settings.sim, screen=ScreenSettings(), timeouts=TIMEOUTS, seed=1) as device:
        whole = await device.observe()
    assert (whole.image_format, whole.width, whole.height) == ("jpeg", 540, 1200)  # it fits: as it is


def test_adb_device_derives_the_console_port_from_the_serial() -> None:
    assert AdbDevice("emulator-5556", timeouts=TIMEOUTS).console_port == 5556
    assert AdbDevice("R58M123ABC", timeouts=TIMEOUTS).console_port is None
    assert AdbDevice("R58M123ABC", timeouts=TIMEOUTS, console_port=5560).console_port == 5560
    with pytest.raises(ValueError, match="snapshot"):
        AdbDevice("emulator-5554", timeouts=TIMEOUTS, snapshot="two words")


async def test_reset_runs_a_suite_task_setup() -> None:
    task = next(task for task in suite_tasks("general") if task.setup)  # the suites give tasks their setup
    async with SimDevice("sim-0", phone_config=CONFIG, timeouts=TIMEOUTS) as device:
        _image(await device.reset(task))
        reference = SimDevice("ref", phone_config=CONFIG, timeouts=TIMEOUTS).prepare(task)
        reference.screenshot("jpeg")  # as the reset's first observation did (a capture moves the clock)
        state = await device.state()
        assert state == reference.state()
        assert state != Phone(CONFIG).state()  # the setup changed something


def test_sim_device_follows_the_inventory_sim_section() -> None:
    inventory = parse_inventory(
        '[sim]\nwidth = 540\nheight = 1200\nnuisances = false\nlatency = "off"\n'
        "time_scale = 0.5\nwhite_frame_rate = 0.25\n"
        '[screen]\nimage_format = "png"\njpeg_quality = 60\nmax_pixels = 100000\n'
        '[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    device = open_sim("sim-0", inventory.sim, screen=inventory.screen, timeouts=inventory.timeouts, seed=7)
    assert (device.phone.width, device.phone.height) == (540, 1200)
    assert device.phone.config.seed == 7
    assert not device.phone.config.nuisances
    assert (device.image_format, device.jpeg_quality, device.max_pixels) == ("png", 60, 100_000)
    assert device.latency is not None
    assert device.latency.time_scale == 0.5
    assert device.latency.profile.is_off
    assert device.faults is not None
    assert device.faults.rates.white_frame == 0.25
    defaults = parse_inventory('[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    quiet = sim_device.device("sim-1", parse_worker_settings(worker_settings_json(defaults)), seed=0)
    assert isinstance(quiet, SimDevice)  # the kind, as registered, with its own settings out of the worker's
    assert quiet.faults is None
    assert quiet.latency is not None
    assert not quiet.latency.profile.is_off
