"""One host's devices as its worker holds them, of every kind: checked at the handshake, opened at
``Setup``.

The learner's hello names the devices and carries the host's ``[hosts.devices]`` (``Devices``), whose
``kinds`` say what each device is. The two built-in kinds take those settings; any other kind is loaded
from the registry (``distrl.device.registry``) only when the host has devices of it, and takes its own
settings out of the worker's (the sim's ``[sim]``): a host of adb devices never loads the sim.

- ``check`` (the worker's hello): every kind the host has is registered; emulators to launch get the
  launcher's ``preflight`` (SDK, AVD, acceleration), which raises ``EmulatorError``; every attached
  device is asked whether it is present (the adb server lists it as ``device``), booted
  (``sys.boot_completed``, the package manager) and answering a screenshot. It returns those that are
  not, each with why.
- ``open``: an ``AdbDevice`` per attached serial, a ``LaunchedEmulator`` per launched one (the
  ``Launcher`` starts in the caller's task group and boots them while the worker loads its policy), and
  a device of its registered kind for each of the others (the simulated phones, each seeded from the
  run's seed, the host and its name).

Every device's screens come back in the worker's one format, ``[screen]``: encoded as its
``image_format`` and ``jpeg_quality``, scaled down (keeping their shape) to at most its ``max_pixels``.
A real phone's PNG (about 2 MB at 1080×2400) becomes a JPEG of about a tenth of that on the worker,
before the wire and the replay buffer; the policy then sees the encoding it was trained on.
``[policy] max_image_pixels`` applies after, in the model's processor.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from distrl.config import ADB_KIND, EMULATOR_KIND, Devices, Timeouts, WorkerSettings
from distrl.device.adb import AdbDevice
from distrl.device.adb_shell import not_ready
from distrl.device.emulator import Launcher
from distrl.device.protocol import Device
from distrl.device.registry import device_kind, kind_names
from distrl.device.screen import screen_options
from distrl.device.sdk import preflight
from distrl.errors import ConfigError, DeviceError, DistrlError

__all__ = ["HostDevices", "screen_options"]

log = logging.getLogger(__name__)

CHECK_S = 10.0
"""Limit on each question of a device's check at the handshake."""
BUILT_IN = (ADB_KIND, EMULATOR_KIND)
"""The kinds of device this module opens itself, with the host's ``Devices``."""


class HostDevices:
    """The devices of one worker's host, of every kind."""

    def __init__(
        self, names: Sequence[str], settings: Devices, *, host: str, run_folder: Path | None = None
    ) -> None:
        """``names``: the devices the learner's hello names, each one of ``settings``' (``ConfigError``
        otherwise). ``run_folder``: the run's, when it is on this machine (where the launched emulators
        log)."""
        kind_of = {name: kind for kind, names_of in settings.kinds.items() for name in names_of}
        unknown = [name for name in names if name not in kind_of]
        if unknown:
            raise ConfigError.at(
                "devices",
                f"the learner's hello names {', '.join(map(repr, unknown))}, which the host's device"
                " settings do not",
            )
        self.settings = settings
        self.host = host
        self.run_folder = run_folder
        self.names = tuple(names)
        by_kind = {kind: tuple(name for name in names if kind_of[name] == kind) for kind in settings.kinds}
        self.kinds = {kind: named for kind, named in by_kind.items() if named}
        """The devices by kind, the kinds the hello names devices of only."""
        self.attached = self.kinds.get(ADB_KIND, ())
        """Serials of the devices already running, which the worker only attaches to."""
        self.launched = self.kinds.get(EMULATOR_KIND, ())
        """Serials of the emulators the worker launches."""
        self.registered = {kind: names for kind, names in self.kinds.items() if kind not in BUILT_IN}
        """The devices of registered kinds (the simulated phones), by kind."""
        self.launcher: Launcher | None = None
        self.opened = False
        self._emulator: Path | None = None
        """The ``emulator`` program ``check`` found, which the launcher then takes."""

    async def check(self) -> dict[str, str]:
        """The attached devices that do not work, each with why; ``ConfigError`` when a kind of device
        is not registered here, ``EmulatorError`` (no SDK, no such AVD, no acceleration) when the
        emulators to launch cannot be."""
        known = kind_names()
        for kind, names in self.registered.items():
            if kind not in known:
                raise ConfigError.at(
                    "devices",
                    f"{', '.join(names)} are of the device kind {kind!r}, which is not installed here"
                    f" (registered kinds: {', '.join(known) or 'none'})",
                )
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

    async def open(self, settings: WorkerSettings, tg: TaskGroup) -> Mapping[str, Device]:
        """Every device, by name, in the hello's order, as ``settings`` say; the launcher (if any) runs
        in ``tg`` from now on. Once only."""
        if self.opened:
            raise DistrlError("this worker's devices are open already")
        self.opened = True
        options = screen_options(settings.screen)
        devices: dict[str, Device] = {
            serial: AdbDevice(
                serial,
                timeouts=settings.timeouts,
                host=self.host,
                snapshot=self.settings.snapshot,
                **options,
            )
            for serial in self.attached
        }
        if self.launched:
            self.launcher = Launcher(
                self.settings,
                settings.timeouts,
                host=self.host,
                run_folder=self.run_folder,
                device_options=options,
                binary=self._emulator,
            )
            await tg.start(self.launcher.run)
            devices.update({name: self.launcher.emulators[name] for name in self.launched})
        for kind, names in self.registered.items():
            found = await anyio.to_thread.run_sync(device_kind, kind)  # an import: heartbeats go on
            for name in names:
                seed = zlib.crc32(f"{settings.seed}/{self.host}/{name}".encode())
                devices[name] = found.device(name, settings, seed=seed, host=self.host)
        return {name: devices[name] for name in self.names}


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
