"""``AdbDevice``: an Android emulator (or a phone, or the sim served as an emulator) through adb.

Every adb call goes through the device's ``AdbShell`` (``adb_shell.py``), the one boundary around
adbutils: each in a worker thread under its operation's timeout, after the threads that earlier
cancelled calls left behind have ended (nothing a timed-out ``act`` sent can land on the phone after the
next ``reset`` has loaded its snapshot), shell protocol v2 where the device speaks it, and every
adbutils and socket error translated (``DeviceOffline``, ``DeviceTimeout``, ``DeviceError``, each with
``host``, ``device`` and ``operation``). This module is what a phone does with it:

- ``observe``: ``screencap -p``, decoded and checked: a corrupt PNG raises ``BadScreenshot`` (never a
  black image, as adbutils' ``screenshot`` would give); a white frame is captured again, up to
  ``white_frame_retries`` times, then ``BadScreenshot``.
- ``act``: ``input tap|swipe|text|keyevent``; text is shell-quoted with its spaces sent as ``%s`` (as
  DigiRL and AndroidWorld do; Android's ``input`` has no way to type a literal ``%s``). The screen size
  comes from ``wm size`` (the override size when set), asked once per reset.
- ``reset``: ``avd snapshot load <snapshot>`` on the emulator console (``console.EmulatorConsole``,
  with the auth token); on a device without a console (a phone: its serial is not ``emulator-N``),
  ``am force-stop`` and ``pm clear`` of each of the task's ``apps``, then HOME. Then the task's setup
  commands, each checked by its exit status. When the snapshot cannot be loaded (``KO``, a timeout) or
  the phone does not answer, the device is rebooted, the last resort:
  ``adb reboot`` (the ``reboot:`` service), then ``sys.boot_completed`` polled, under
  ``device_boot_s``.
- ``state``: ``dumpsys distrl`` parsed as JSON (the sim answers it); None for any other answer.
- ``shell``: any command (the ``adb`` evaluator's checks), with its exit status where shell v2 gives it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
from typing import Any

import anyio
from PIL import Image

from distrl.actions import KeyEvent, Swipe, Tap, TypeText, to_gesture
from distrl.config import Timeouts
from distrl.device.adb_shell import AdbShell, not_ready
from distrl.device.console import ConsoleError, EmulatorConsole, read_token
from distrl.device.protocol import CommandOutput, Gate
from distrl.device.screen import (
    IMAGE_FORMATS,
    WHITE_FRAME_RETRIES,
    Frame,
    capture,
    decode,
    encode,
    fit,
    image_limiter,
    is_blank,
)
from distrl.errors import BadScreenshot, DeviceError, DeviceOffline, DeviceTimeout
from distrl.records import Action, Observation, Task

__all__ = ["AdbDevice"]

log = logging.getLogger(__name__)

CONSOLE_HOST = "127.0.0.1"
"""The emulator console accepts local connections only."""
REBOOT_POLL_S = 0.5
"""How often a rebooting device is asked whether it has booted (adb has no event for it)."""
REBOOT_LEAVE_S = 5.0
"""Longest wait for a rebooting device to drop off adb before waiting for it to come back (at most a
quarter of ``device_boot_s``)."""
TOKEN_FILE = "~/.emulator_console_auth_token"
"""Where the emulator keeps its console auth token."""

_SIZE = re.compile(rb"(Physical|Override) size:\s*(\d+)x(\d+)")


class AdbDevice:
    """An adb device behind the ``Device`` protocol."""

    def __init__(
        self,
        serial: str,
        *,
        timeouts: Timeouts,
        adb_host: str = "127.0.0.1",
        adb_port: int | None = None,
        console_port: int | None = None,
        console_token_file: str = TOKEN_FILE,
        limiter: anyio.CapacityLimiter | None = None,
        snapshot: str = "default_boot",
        host: str = "local",
        image_format: str = "png",
        jpeg_quality: int = 85,
        max_pixels: int = 0,
        white_frame_retries: int = WHITE_FRAME_RETRIES,
        reboot: bool = True,
    ) -> None:
        if image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format {image_format!r} is not one of {', '.join(IMAGE_FORMATS)}")
        if not snapshot or any(c.isspace() for c in snapshot):
            raise ValueError(f"snapshot name {snapshot!r} must be one word")
        if console_port is None:
            match = re.fullmatch(r"emulator-(\d+)", serial)
            console_port = int(match[1]) if match else None
        self._serial = serial
        self.timeouts = timeouts
        """The limits every operation runs under."""
        self.console_port = console_port
        """The emulator console's port (``emulator-5554`` → 5554); None when there is none."""
        self.console_token_file = os.path.expanduser(console_token_file)
        """File holding the console's auth token (``~`` expanded)."""
        self.snapshot = snapshot
        """The emulator snapshot ``reset`` loads."""
        self.image_format = image_format
        """``png`` (as captured) or ``jpeg`` (re-encoded): the encoding of observations."""
        self.jpeg_quality = jpeg_quality
        """JPEG quality when ``image_format`` is ``jpeg``."""
        self.max_pixels = max_pixels
        """Screens larger than this many pixels are scaled down to it, keeping their shape; 0: never."""
        self.white_frame_retries = white_frame_retries
        """Captures retried after a white frame before ``observe`` gives up."""
        self.failed_in_setup = False
        """Whether the last ``reset`` failed in the task's setup commands (the task's fault, not the
        device's), rather than in loading the snapshot or in its observation."""
        self.reboot = reboot
        """Whether a failed snapshot load reboots the device; False where its owner relaunches it
        instead (``distrl.device.emulator``), and the failure is raised."""
        self._gate = Gate(host=host, device=serial)
        self._adb = AdbShell(
            serial,
            gate=self._gate,
            socket_timeout_s=min(timeouts.device_act_s, timeouts.device_observe_s),
            adb_host=adb_host,
            adb_port=adb_port,
            limiter=limiter,
        )
        self._size: tuple[int, int] | None = None

    @property
    def name(self) -> str:
        """The adb serial."""
        return self._serial

    async def __aenter__(self) -> AdbDevice:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def reset(self, task: Task) -> Observation:
        """Load the snapshot, or on a phone without an emulator console clear the task's apps and go
        HOME (reboot if that fails), run ``task``'s setup commands, observe.

        Each phase runs under its own limit: the snapshot load (or the apps) ``device_reset_s``, a reboot
        ``device_boot_s``, the setup ``device_reset_s``, the first observation ``device_observe_s``.
        A setup command that fails raises ``DeviceError``."""
        commands = task.setup
        t = self.timeouts
        async with self._gate.operation("reset", t.device_reset_s * 2 + t.device_boot_s + t.device_observe_s):
            self._size = None
            self.failed_in_setup = False
            try:
                if self.console_port is None:  # a phone: no snapshot to load
                    async with self._gate.deadline("reset (apps)", t.device_reset_s):
                        await self._clear_apps(task.apps)
                else:
                    async with self._gate.deadline("reset (snapshot load)", t.device_reset_s):
                        await self._load_snapshot()
            except DeviceError as exc:
                if not self.reboot:
                    raise
                log.warning("%s; rebooting", exc)
                async with self._gate.deadline("reset (reboot)", t.device_boot_s):
                    await self._reboot()
            self.failed_in_setup = True  # until the setup commands have all run
            async with self._gate.deadline("reset (setup)", t.device_reset_s):
                for command in commands:
                    await self._setup(command)
            self.failed_in_setup = False
            async with self._gate.deadline("reset (observe)", t.device_observe_s):
                return await self._capture("reset")

    async def observe(self) -> Observation:
        """``screencap -p``, checked, retried after white frames."""
        async with self._gate.operation("observe", self.timeouts.device_observe_s):
            return await self._capture("observe")

    async def act(self, action: Action) -> None:
        """``input`` the gesture ``action`` stands for; the STATUS actions send nothing."""
        timeout_s = self.timeouts.device_act_s
        async with self._gate.operation("act", timeout_s):
            if action.type.ends_episode:
                return
            width, height = await self._window_size("act")
            gesture = to_gesture(action, width, height)
            if isinstance(gesture, Tap):
                command = f"input tap {gesture.x} {gesture.y}"
            elif isinstance(gesture, Swipe):
                g = gesture
                command = f"input swipe {g.x1} {g.y1} {g.x2} {g.y2} {g.duration_ms}"
            elif isinstance(gesture, TypeText):
                command = "input text " + shlex.quote(gesture.text.replace(" ", "%s"))
            elif isinstance(gesture, KeyEvent):
                command = f"input keyevent {gesture.keycode}"
            else:  # pragma: no cover - EndEpisode returned above
                return
            await self._adb.output("act", command, timeout_s)

    async def state(self) -> dict[str, Any] | None:
        """``dumpsys distrl`` as a JSON object; None when the device answers anything else."""
        timeout_s = self.timeouts.device_observe_s
        async with self._gate.operation("state", timeout_s):
            output = await self._adb.run("state", "dumpsys distrl", timeout_s)
        try:
            data = json.loads(output.stdout)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    async def shell(self, command: str) -> CommandOutput:
        """``command`` in the device's shell: its exit status (shell v2) and its stdout."""
        timeout_s = self.timeouts.device_observe_s
        async with self._gate.operation("shell", timeout_s):
            output = await self._adb.run("shell", command, timeout_s)
        return CommandOutput(output.exit_code, output.stdout.decode("utf-8", "replace"))

    async def booted(self, timeout_s: float) -> str:
        """Why the device is not up yet (empty when it is): listed by the adb server as ``device``,
        ``sys.boot_completed`` = 1, and the package manager answering (``pm path android``). What an
        emulator that has just started goes through; each question under ``timeout_s``."""
        async with self._gate.operation("boot", timeout_s * 3):
            missing = await anyio.to_thread.run_sync(lambda: not_ready([self._serial], timeout_s=timeout_s))
            if missing:
                return missing[self._serial]
            self._adb.forget_protocol()  # a new system may speak otherwise
            try:
                booted = await self._adb.run("boot", "getprop sys.boot_completed", timeout_s)
                if booted.stdout.strip() != b"1":
                    return "still booting (sys.boot_completed is not 1)"
                answer = await self._adb.run("boot", "pm path android", timeout_s)
            except (DeviceOffline, DeviceTimeout) as exc:
                return f"not answering ({exc})"
            if not answer.stdout.startswith(b"package:"):
                return "booted, but its package manager does not answer yet"
            return ""

    async def aclose(self) -> None:
        """Close the device (adbutils keeps no connections open); later operations raise ``DeviceOffline``."""
        self._gate.close()

    # ------------------------------------------------------------------ operations' parts
    async def _capture(self, operation: str) -> Observation:
        async def grab(attempt: int) -> Frame | None:
            data = await self._adb.output(operation, "screencap -p", self.timeouts.device_observe_s)
            try:
                return await anyio.to_thread.run_sync(self._check_frame, data, limiter=image_limiter())
            except ValueError as exc:
                raise self._gate.error(
                    BadScreenshot, operation, f"screencap: {exc}", reason="corrupt", attempts=attempt
                ) from exc

        return await capture(
            grab,
            gate=self._gate,
            operation=operation,
            image_format=self.image_format,
            retries=self.white_frame_retries,
        )

    def _check_frame(self, data: bytes) -> Frame | None:
        """In a worker thread: the observation's bytes and size, or None for a blank frame."""
        image: Image.Image = decode(data)
        if is_blank(image):
            return None
        if self.max_pixels and image.width * image.height > self.max_pixels:
            image = fit(image, self.max_pixels)
            data = encode(image, self.image_format, self.jpeg_quality)
        elif self.image_format == "jpeg":
            data = encode(image, "jpeg", self.jpeg_quality)
        return data, image.width, image.height

    async def _window_size(self, operation: str) -> tuple[int, int]:
        if self._size is None:
            output = await self._adb.output(operation, "wm size", self.timeouts.device_act_s)
            sizes = {kind: (int(w), int(h)) for kind, w, h in _SIZE.findall(output)}
            size = sizes.get(b"Override") or sizes.get(b"Physical")
            if size is None:
                raise self._gate.error(
                    DeviceError, operation, f"cannot read the screen size from {output!r:.200}"
                )
            self._size = size
        return self._size

    async def _load_snapshot(self) -> None:
        await self._adb.settle()
        port = self.console_port
        if port is None:
            raise self._gate.error(DeviceError, "reset", "has no emulator console to load a snapshot with")
        try:
            token = await read_token(self.console_token_file)
            async with EmulatorConsole.connect(port, token=token, host=CONSOLE_HOST) as console:
                await console.command(f"avd snapshot load {self.snapshot}")
        except ConsoleError as exc:
            raise self._gate.error(DeviceError, "reset", f"snapshot {self.snapshot!r}: {exc}") from exc
        except (OSError, anyio.BrokenResourceError) as exc:
            raise self._gate.error(
                DeviceOffline, "reset", f"cannot reach the emulator console on port {port}: {exc}"
            ) from exc
        # A real emulator can drop off adb for a moment while the snapshot loads.
        timeout_s = self.timeouts.device_reset_s
        await self._adb.wait_for("reset", "device", timeout_s)

    async def _clear_apps(self, apps: tuple[str, ...]) -> None:
        """A phone's reset: each of the task's apps force-stopped and its data cleared, then HOME. An app
        that is not installed is passed over (``pm clear`` fails for it); a device that does not answer
        raises, and the caller reboots it."""
        t = self.timeouts
        for app in apps:
            await self._adb.output("reset", f"am force-stop {shlex.quote(app)}", t.device_act_s)
            cleared = await self._adb.run("reset", f"pm clear {shlex.quote(app)}", t.device_act_s)
            if cleared.exit_code not in (None, 0):
                log.info(
                    "%s: pm clear %s: %s",
                    self._serial,
                    app,
                    cleared.stdout.decode("utf-8", "replace").strip(),
                )
        await self._adb.output("reset", "input keyevent 3", t.device_act_s)  # KEYCODE_HOME

    async def _reboot(self) -> None:
        """``adb reboot``, then wait until the device is back with ``sys.boot_completed`` = 1.

        adb has no event for a finished boot, so the wait polls every ``REBOOT_POLL_S`` (the caller
        bounds it with ``device_boot_s``)."""
        t = self.timeouts
        # The connection goes down with the device, so losing it is the expected answer.
        with contextlib.suppress(DeviceError):
            await self._adb.service("reset", "reboot:", t.device_act_s)
        self._adb.forget_protocol()
        # Give the adb server the moment it needs to see the device go, so the old system is not
        # taken for the new one; a device that is back already (or never left) just ends the wait.
        leave_s = min(REBOOT_LEAVE_S, t.device_boot_s / 4)
        with contextlib.suppress(DeviceError), anyio.move_on_after(leave_s):
            await self._adb.wait_for("reset", "disconnect", leave_s)
        while True:
            try:
                await self._adb.wait_for("reset", "device", t.device_boot_s)
                booted = await self._adb.output("reset", "getprop sys.boot_completed", t.device_act_s)
            except (DeviceOffline, DeviceTimeout):
                booted = b""
            if booted.strip() == b"1":
                return
            await anyio.sleep(REBOOT_POLL_S)

    async def _setup(self, command: str) -> None:
        output = await self._adb.run("reset", command, self.timeouts.device_reset_s)
        if output.exit_code not in (None, 0):
            text = (output.stdout + output.stderr).decode("utf-8", "replace").strip()
            raise self._gate.error(
                DeviceError,
                "reset",
                f"setup command {command!r} failed with exit status {output.exit_code}: {text:.200}",
            )
