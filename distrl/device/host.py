"""One host's adb devices as its worker holds them: checked at the handshake, opened at ``Setup``.

- ``check`` (the worker's hello): emulators to launch get the launcher's ``preflight`` (SDK, AVD,
  acceleration), which raises ``EmulatorError``; every attached device is asked whether it is present
  (the adb server lists it as ``device``), booted (``sys.boot_completed``, the package manager) and
  answering a screenshot. It returns those that are not, each with why.
- ``open``: an ``AdbDevice`` per attached serial, a ``LaunchedEmulator`` per launched one (the
  ``Launcher`` starts in the caller's task group and boots them while the worker loads its policy).

Every device's screens come back in one format, the sim's: ``[sim] image_format`` and ``jpeg_quality``,
scaled down (keeping their shape) to at most the sim's ``width × height`` pixels. A real phone's PNG
(about 2 MB at 1080×2400) becomes a JPEG of about a tenth of that on the worker, before the wire and the
replay buffer; the policy then sees the encoding it was trained on. ``[policy] max_image_pixels`` applies
after, in the model's processor.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from distrl.config import Devices, SimSettings, Timeouts
from distrl.device.adb import AdbDevice, not_ready
from distrl.device.emulator import Launcher
from distrl.device.protocol import Device
from distrl.device.sdk import preflight
from distrl.errors import DeviceError, DistrlError

__all__ = ["HostDevices", "screen_options"]

log = logging.getLogger(__name__)

CHECK_S = 10.0
"""Limit on each question of a device's check at the handshake."""


def screen_options(sim: SimSettings) -> dict[str, Any]:
    """``AdbDevice`` options that give its screens the sim's format and at most its size."""
    return {
        "image_format": sim.image_format,
        "jpeg_quality": sim.jpeg_quality,
        "max_pixels": sim.width * sim.height,
    }


class HostDevices:
    """The adb devices (attached and launched) of one worker's host."""

    def __init__(
        self, names: Sequence[str], settings: Devices, *, host: str, run_folder: Path | None = None
    ) -> None:
        """``run_folder``: the run's, when it is on this machine (where the launched emulators log)."""
        self.settings = settings
        self.host = host
        self.run_folder = run_folder
        launched = set(settings.launched)
        self.attached = tuple(name for name in names if not name.startswith("sim-") and name not in launched)
        """Serials of the devices already running, which the worker only attaches to."""
        self.launched = tuple(name for name in names if name in launched)
        self.launcher: Launcher | None = None
        self.opened = False
        self._emulator: Path | None = None
        """The ``emulator`` program ``check`` found, which the launcher then takes."""

    async def check(self) -> dict[str, str]:
        """The attached devices that do not work, each with why; ``EmulatorError`` (no SDK, no such AVD,
        no acceleration) when the emulators to launch cannot be."""
        if self.launched:
            self._emulator = await preflight(self.settings)
        if not self.attached:
            return {}
        missing = await anyio.to_thread.run_sync(lambda: not_ready(self.attached, timeout_s=CHECK_S))
        problems = dict(missing)

        async def one(serial: str) -> None:
            problem = await _answers(serial, self.host)
            if problem:
                problems[serial] = problem

        async with anyio.create_task_group() as tg:
            for serial in self.attached:
                if serial not in missing:
                    tg.start_soon(one, serial)
        return {serial: problems[serial] for serial in self.attached if serial in problems}

    async def open(self, timeouts: Timeouts, sim: SimSettings, tg: TaskGroup) -> Mapping[str, Device]:
        """Every device, by name; the launcher (if any) runs in ``tg`` from now on. Once only."""
        if self.opened:
            raise DistrlError("this worker's devices are open already")
        self.opened = True
        options = screen_options(sim)
        devices: dict[str, Device] = {
            serial: AdbDevice(
                serial, timeouts=timeouts, host=self.host, snapshot=self.settings.snapshot, **options
            )
            for serial in self.attached
        }
        if self.launched:
            self.launcher = Launcher(
                self.settings,
                timeouts,
                host=self.host,
                run_folder=self.run_folder,
                device_options=options,
                binary=self._emulator,
            )
            await tg.start(self.launcher.run)
            devices.update({name: self.launcher.emulators[name] for name in self.launched})
        return devices


async def _answers(serial: str, host: str) -> str:
    """Why ``serial`` does not work (empty: it does): not booted, or no screenshot."""
    device = AdbDevice(serial, timeouts=Timeouts(device_observe_s=CHECK_S, device_act_s=CHECK_S), host=host)
    try:
        problem = await device.booted(CHECK_S)
        if not problem:
            await device.observe()
    except DeviceError as exc:
        problem = str(exc).removeprefix(f"{serial}: ")
    finally:
        await device.aclose()
    return problem
