"""Kinds of device by name, and opening one device by what names it.

A host's devices come in kinds (``Devices.kinds``). Two are built in (``distrl.device.host``): ``adb``,
the devices a worker attaches to by serial, and ``emulator``, the ones it launches from an AVD; both
take their host's ``[hosts.devices]`` (``Devices``). Any other kind is a ``DeviceKind`` registered as an
entry point, as the simulated phone registers ``sim`` (``pyproject.toml``), so that nothing here imports
it and a worker loads a kind only when its host has devices of it::

    [project.entry-points."distrl.devices"]
    sim = "distrl.sim.device:sim_device"   # a DeviceKind[SimSettings]

A kind takes settings of its own: its ``DeviceKind`` says where they are among the worker's
(``settings``: the sim's ``[sim]``, ``WorkerSettings.sim``) and opens one device with them (``open``),
in the worker's screen format (``[screen]``) and under its ``Timeouts``.

``open_device`` makes the ``Device`` that code outside the composition root asks for by name (the
Gymnasium environment, ``distrl.env``): a string is an adb serial (``AdbDevice``), an integer an
emulator's console port (serial ``emulator-<port>``), and None a simulated phone (the ``sim`` kind).
Settings come as mappings of ``config`` field names (``SimSettings``, ``ScreenSettings``, ``Timeouts``),
checked by ``device_settings`` as an inventory's ``[sim]``, ``[screen]`` and ``[timeouts]`` tables are:
an unknown name, a wrong type or a value out of bounds is a ``ConfigError`` (a ValueError) that names it
(``sim.width``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from distrl.config import ScreenSettings, Timeouts, WorkerSettings, parse_worker_settings
from distrl.device.adb import AdbDevice
from distrl.device.protocol import Device
from distrl.device.screen import screen_options
from distrl.errors import ConfigError

__all__ = [
    "DEVICE_KINDS",
    "DeviceFactory",
    "DeviceKind",
    "device_kind",
    "device_settings",
    "kind_names",
    "open_device",
]

DEVICE_KINDS = "distrl.devices"
"""The entry-point group of device kinds."""

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class DeviceFactory(Protocol[S_contra]):
    """Opens one device of a kind: called ``name``, as the kind's own ``settings`` say, its screens in
    the ``screen`` format, every operation under ``timeouts``, seeded by ``seed``."""

    def __call__(
        self,
        name: str,
        settings: S_contra,
        *,
        screen: ScreenSettings,
        timeouts: Timeouts,
        seed: int,
        host: str = "local",
    ) -> Device: ...


@dataclass(frozen=True, kw_only=True)
class DeviceKind(Generic[S]):
    """A registered kind of device: where its own settings are, and how one device of it opens."""

    settings: Callable[[WorkerSettings], S]
    """Its settings, out of what the learner sent the worker (the sim's: ``WorkerSettings.sim``)."""
    open: DeviceFactory[S]
    """Opens one device of this kind with those settings."""

    def device(self, name: str, worker: WorkerSettings, *, seed: int, host: str = "local") -> Device:
        """The device ``name`` as ``worker``'s settings say: its kind's own, its screens, its limits."""
        return self.open(
            name, self.settings(worker), screen=worker.screen, timeouts=worker.timeouts, seed=seed, host=host
        )


def kind_names() -> list[str]:
    """The names of the registered kinds of device, sorted; nothing is imported to list them."""
    return sorted(_kinds())


def device_kind(kind: str) -> DeviceKind[Any]:
    """The registered kind of device called ``kind`` (``sim``), imported now; ValueError naming the
    registered ones when there is none, TypeError when what is registered is no ``DeviceKind``."""
    point = _kinds().get(kind)
    if point is None:
        known = ", ".join(sorted(_kinds())) or "none"
        raise ValueError(f"no device kind {kind!r} is registered here (registered: {known})")
    loaded = point.load()
    if not isinstance(loaded, DeviceKind):
        raise TypeError(
            f"device kind {kind!r} ({point.value}) is a {type(loaded).__name__}, not a DeviceKind"
        )
    return loaded


def open_device(
    target: str | int | None = None,
    *,
    name: str = "phone",
    seed: int = 0,
    sim: Mapping[str, Any] | None = None,
    screen: Mapping[str, Any] | None = None,
    timeouts: Mapping[str, float] | None = None,
    adb: Mapping[str, Any] | None = None,
) -> Device:
    """The device ``target`` names: None a simulated phone (``sim``: ``SimSettings`` fields, ``seed``
    its seed, ``name`` its name), a string an adb serial, an integer an emulator's console port (for
    both, ``adb``: ``AdbDevice`` keywords such as ``adb_port``, ``snapshot``). Its screens come in the
    ``screen`` format (``ScreenSettings`` fields: the defaults for the rest) and every operation runs
    under ``timeouts`` (``Timeouts`` fields)."""
    settings = device_settings(sim, timeouts, screen)
    if target is None:
        return device_kind("sim").device(name, settings, seed=seed)
    if isinstance(target, bool) or not isinstance(target, str | int):
        raise TypeError(f"device {target!r} is neither an adb serial nor an emulator console port")
    options = {**screen_options(settings.screen), **(adb or {})}
    if isinstance(target, int):
        if not 0 < target < 65535:
            raise ValueError(f"emulator console port {target} is not a port")
        options.setdefault("console_port", target)
        target = f"emulator-{target}"
    try:
        return AdbDevice(target, timeouts=settings.timeouts, **options)
    except TypeError as exc:
        raise ValueError(f"adb options: {exc}") from None


def device_settings(
    sim: Mapping[str, Any] | None = None,
    timeouts: Mapping[str, Any] | None = None,
    screen: Mapping[str, Any] | None = None,
) -> WorkerSettings:
    """``sim``, ``timeouts`` and ``screen`` (field names to values; numpy scalars as their numbers) as a
    worker's settings, checked by the inventory's reader: a ``ConfigError`` naming the field
    (``timeouts.device_act_s``)."""
    tables: dict[str, dict[str, Any]] = {}
    for where, values in (("sim", sim), ("timeouts", timeouts), ("screen", screen)):
        if values is not None and not isinstance(values, Mapping):
            raise ConfigError.at(
                where, f"expected a mapping of settings by name, not {type(values).__name__}"
            )
        tables[where] = {}
        for key, value in (values or {}).items():
            plain = _plain(value)
            if not isinstance(plain, bool | int | float | str):
                kind = type(value).__name__
                raise ConfigError.at(
                    f"{where}.{key}", f"expected a number, a string or a boolean, got {kind}"
                )
            tables[where][str(key)] = plain
    try:
        return parse_worker_settings(json.dumps(tables, allow_nan=True))
    except ConfigError as exc:
        raise ConfigError.at(exc.path or "", exc.problem or exc.message) from None


def _plain(value: object) -> object:
    """A numpy scalar as its Python number; anything else as it is."""
    item = getattr(value, "item", None)
    return item() if callable(item) and type(value).__module__ == "numpy" else value


@functools.cache
def _kinds() -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=DEVICE_KINDS)}
