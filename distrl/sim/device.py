"""``SimDevice``: a simulated phone in this process, with realistic latency and injected faults.

A ``SimDevice`` is cheap (a process holds hundreds): the phone is a state machine, its screen is drawn
and encoded in a worker thread behind the process's image limiter, and the time a real emulator would
take is slept with ``anyio.sleep`` as drawn by a ``LatencyModel``. The phone's own virtual clock does
not follow that latency, so what an episode sees is deterministic whatever the latency or
``time_scale``: it depends on the seed and on everything the device did before, not on this episode's
inputs alone, since ``reset`` restores the boot snapshot but the phone's random stream keeps its
position (``Phone.restore``), on purpose, so that pop-ups differ from one episode to the next.

Reset restores the snapshot taken when the phone booted, then runs the task's setup commands
(``Task.setup``) with the sim's Android shell, as ``AdbDevice`` does with an emulator snapshot and
``adb shell``. It lives with the sim, which it implements the ``Device`` protocol for: the device layer
imports nothing of the sim. It is registered as the ``sim`` kind of device (``sim_device``, a
``DeviceKind`` of ``distrl.device.registry`` whose settings are ``[sim]``), which a worker loads only
when its host has simulated phones, and carries the sim's scripted expert (``expert_action``, the
``ExpertDevice`` protocol), so the worker plays the expert without importing the sim. Its screens come
in the worker's screen format (``[screen]``), as every device's do.

Faults (``FaultModel``) strike ``observe`` and ``act``; ``reset`` is the way back and is never struck:

- ``HANG``: the operation never finishes; its timeout raises ``DeviceTimeout``.
- ``CRASH``: ``DeviceCrashed``, and the device stays down until ``reset``, which reboots it (boot
  latency on top of the reset).
- ``OFFLINE``: ``DeviceOffline``, and the device stays unreachable until ``reset``.
- ``WHITE_FRAME``: the screenshot is all white; ``observe`` sees that every pixel is the same and
  captures again, up to ``white_frame_retries`` times, then raises ``BadScreenshot``.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from distrl.actions import EndEpisode, Gesture, KeyEvent, Swipe, Tap, TypeText, to_gesture
from distrl.config import ScreenSettings, SimSettings, Timeouts, WorkerSettings
from distrl.device.protocol import CommandOutput, Gate
from distrl.device.registry import DeviceKind
from distrl.device.screen import (
    IMAGE_FORMATS,
    WHITE_FRAME_RETRIES,
    Frame,
    capture,
    encode,
    fit,
    image_limiter,
    is_blank,
    screen_options,
)
from distrl.errors import DeviceCrashed, DeviceError, DeviceOffline
from distrl.records import Action, Observation, Task
from distrl.sim.latency import (
    Fault,
    FaultModel,
    FaultRates,
    LatencyModel,
    LatencyProfile,
    Op,
    task_slowness,
)
from distrl.sim.phone import LAUNCHER, Phone, PhoneConfig
from distrl.sim.shell import run_shell

__all__ = ["SimDevice", "open_sim", "sim_device"]

_GESTURE_OPS: dict[type[Gesture], Op] = {Tap: Op.TAP, Swipe: Op.SWIPE, TypeText: Op.TEXT, KeyEvent: Op.KEY}

log = logging.getLogger(__name__)


class SimDevice:
    """A simulated phone behind the ``Device`` protocol."""

    def __init__(
        self,
        name: str,
        *,
        phone_config: PhoneConfig,
        timeouts: Timeouts,
        latency: LatencyModel | None = None,
        faults: FaultModel | None = None,
        image_format: str = "jpeg",
        jpeg_quality: int = 85,
        max_pixels: int = 0,
        host: str = "local",
        white_frame_retries: int = WHITE_FRAME_RETRIES,
        task_spread: float = 1.0,
    ) -> None:
        if image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format {image_format!r} is not one of {', '.join(IMAGE_FORMATS)}")
        if not 1 <= jpeg_quality <= 95:
            raise ValueError(f"jpeg_quality must be 1-95, got {jpeg_quality}")
        if max_pixels < 0:
            raise ValueError(f"max_pixels must be ≥ 0, got {max_pixels}")
        if white_frame_retries < 0:
            raise ValueError(f"white_frame_retries must be ≥ 0, got {white_frame_retries}")
        self._name = name
        self.timeouts = timeouts
        """The limits every operation runs under."""
        self.latency = latency
        """How long operations take; None for no waiting. May be replaced between operations."""
        self.faults = faults
        """Which faults strike; None for none. May be replaced between operations."""
        self.image_format = image_format
        """``png`` or ``jpeg``: the encoding of observations."""
        self.jpeg_quality = jpeg_quality
        """JPEG quality of observations (1-95)."""
        self.max_pixels = max_pixels
        """Screens larger than this many pixels are scaled down to it, keeping their shape; 0: never."""
        self.white_frame_retries = white_frame_retries
        """Captures retried after a white frame before ``observe`` gives up."""
        task_slowness("", task_spread)  # checks it
        self.task_spread = task_spread
        """Each task's delays are multiplied by its ``task_slowness`` in [1, task_spread]."""
        self._slowness = 1.0  # the current task's
        self._phone = Phone(phone_config)
        self._boot = self._phone.snapshot()
        self._down: Fault | None = None  # CRASH or OFFLINE until the next reset
        self._gate = Gate(host=host, device=name)

    @property
    def name(self) -> str:
        """The device's name (``sim-0``)."""
        return self._name

    @property
    def phone(self) -> Phone:
        """The simulated phone itself, for experts and tests; not to be touched during an operation."""
        return self._phone

    def expert_action(self, task: Task) -> Action:
        """The sim's scripted expert's next action for ``task`` on this phone (``ExpertDevice``)."""
        from distrl.sim.suites import expert_action

        return expert_action(task, self._phone)

    async def __aenter__(self) -> SimDevice:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def reset(self, task: Task) -> Observation:
        """Restore the boot snapshot (rebooting first after a crash), set ``task`` up, observe.

        Each phase runs under its own limit: the reboot ``device_boot_s``, the restore and setup
        ``device_reset_s``, the first observation ``device_observe_s``. A setup command that fails
        raises ``DeviceError``."""
        commands = list(task.setup)
        timeouts = self.timeouts
        budget = timeouts.device_boot_s + timeouts.device_reset_s + timeouts.device_observe_s
        async with self._gate.operation("reset", budget):
            self._slowness = task_slowness(task.id, self.task_spread)
            if self._down is Fault.CRASH:
                async with self._gate.deadline("reset (reboot)", timeouts.device_boot_s):
                    await self._wait(Op.BOOT)
                    self._phone.reboot()
            async with self._gate.deadline("reset", timeouts.device_reset_s):
                await self._wait(Op.RESET)
                await anyio.to_thread.run_sync(self._prepare, commands, limiter=image_limiter())
                self._down = None
            async with self._gate.deadline("reset (observe)", timeouts.device_observe_s):
                return await self._capture("reset", strike=False)

    async def observe(self) -> Observation:
        """A screenshot, retried after white frames."""
        async with self._gate.operation("observe", self.timeouts.device_observe_s):
            self._check_up("observe")
            return await self._capture("observe", strike=True)

    async def act(self, action: Action) -> None:
        """Perform ``action`` on the phone, then wait as long as the UI takes to settle."""
        gesture = to_gesture(action, self._phone.width, self._phone.height)
        async with self._gate.operation("act", self.timeouts.device_act_s):
            if isinstance(gesture, EndEpisode):
                return
            self._check_up("act")
            phone = self._phone
            before = phone.top_package
            op = _GESTURE_OPS[type(gesture)]
            await self._strike(op, "act")
            phone.perform(gesture)
            await self._wait(op)
            if phone.top_package not in (before, LAUNCHER):
                await self._wait(Op.LAUNCH)
            elif phone.context().loading:
                await self._wait(Op.PAGE_LOAD)

    async def state(self) -> dict[str, Any]:
        """The phone's whole state (settings, apps' data, the top screen) as JSON-able values."""
        async with self._gate.operation("state", self.timeouts.device_observe_s):
            self._check_up("state")
            state: dict[str, Any] = self._phone.state()
            return state

    async def shell(self, command: str) -> CommandOutput:
        """``command`` in the sim's Android shell, as ``adb shell`` runs it on the sim served over adb."""
        async with self._gate.operation("shell", self.timeouts.device_observe_s):
            self._check_up("shell")
            result = run_shell(self._phone, command)
            return CommandOutput(result.exit_code, result.output.decode("utf-8", "replace"))

    async def aclose(self) -> None:
        """Close the device; later operations raise ``DeviceOffline``."""
        self._gate.close()

    def prepare(self, task: Task) -> Phone:
        """What ``reset`` does before it observes, at once and in this thread: the boot snapshot, then
        ``task``'s setup commands. For code that drives the phone itself (experts, tests)."""
        self._prepare(list(task.setup))
        return self._phone

    # ------------------------------------------------------------------ internals
    def _prepare(self, commands: list[str]) -> None:
        """The boot snapshot, then the setup commands (``reset`` runs it in a worker thread)."""
        phone = self._phone
        phone.white = False
        phone.restore(self._boot)
        for command in commands:
            result = run_shell(phone, command)
            if result.exit_code != 0:
                output = result.output.decode("utf-8", "replace").strip()
                raise self._gate.error(
                    DeviceError,
                    "reset",
                    f"setup command {command!r} failed with exit status {result.exit_code}: {output:.200}",
                )

    async def _capture(self, operation: str, *, strike: bool) -> Observation:
        async def grab(attempt: int) -> Frame | None:
            fault = await self._strike(Op.SCREENSHOT, operation) if strike else None
            await self._wait(Op.SCREENSHOT)
            return await anyio.to_thread.run_sync(
                self._screenshot, fault is Fault.WHITE_FRAME, limiter=image_limiter()
            )

        return await capture(
            grab,
            gate=self._gate,
            operation=operation,
            image_format=self.image_format,
            retries=self.white_frame_retries,
        )

    def _screenshot(self, white: bool) -> Frame | None:
        """In a worker thread: the encoded screen and its size, or None when every pixel is the same."""
        phone = self._phone
        phone.white = white
        try:
            image = phone.capture()
            blank = is_blank(image)
            if self.max_pixels and image.width * image.height > self.max_pixels:
                image = fit(image, self.max_pixels)
            data = encode(image, self.image_format, self.jpeg_quality)
        finally:
            phone.white = False
        return None if blank else (data, image.width, image.height)

    async def _strike(self, op: Op, operation: str) -> Fault | None:
        """Draw a fault for ``op`` and act it out; returns ``WHITE_FRAME`` or None to carry on."""
        fault = self.faults.draw(op) if self.faults is not None else None
        if fault is Fault.HANG:
            log.debug("%s: injected hang in %s", self._name, operation)
            await anyio.sleep_forever()
        if fault is Fault.CRASH or fault is Fault.OFFLINE:
            log.debug("%s: injected %s in %s", self._name, fault, operation)
            self._down = fault
            self._check_up(operation)
        return fault

    def _check_up(self, operation: str) -> None:
        if self._down is Fault.CRASH:
            raise self._gate.error(DeviceCrashed, operation, "crashed; reset reboots it")
        if self._down is Fault.OFFLINE:
            raise self._gate.error(DeviceOffline, operation, "offline; reset brings it back")

    async def _wait(self, op: Op) -> None:
        if self.latency is not None:
            await anyio.sleep(self.latency.wall(op) * self._slowness)


def open_sim(
    name: str,
    settings: SimSettings,
    *,
    screen: ScreenSettings,
    timeouts: Timeouts,
    seed: int,
    host: str = "local",
) -> SimDevice:
    """A ``SimDevice`` as an inventory's ``[sim]`` section describes it, its screens in the ``[screen]``
    format, seeded with ``seed`` throughout."""
    profile = LatencyProfile.calibrated() if settings.latency == "calibrated" else LatencyProfile.off()
    rates = FaultRates(
        hang=settings.hang_rate,
        crash=settings.crash_rate,
        offline=settings.offline_rate,
        white_frame=settings.white_frame_rate,
    )
    return SimDevice(
        name,
        phone_config=PhoneConfig(
            width=settings.width, height=settings.height, seed=seed, nuisances=settings.nuisances
        ),
        timeouts=timeouts,
        latency=LatencyModel(profile, seed=seed, time_scale=settings.time_scale),
        faults=FaultModel(rates, seed=seed) if rates.total > 0 else None,
        host=host,
        task_spread=settings.task_spread,
        **screen_options(screen),
    )


def _settings(worker: WorkerSettings) -> SimSettings:
    return worker.sim


sim_device: DeviceKind[SimSettings] = DeviceKind(settings=_settings, open=open_sim)
"""The ``sim`` kind of device, as registered (``pyproject.toml``): its settings are the worker's
``[sim]``."""
