"""Opening a device by what names it: an adb serial, an emulator console port, or a registered kind.

``open_device`` makes the ``Device`` that code outside the composition root asks for by name (the
Gymnasium environment, ``distrl.env``): a string is an adb serial (``AdbDevice``), an integer an
emulator's console port (serial ``emulator-<port>``), and None the ``sim`` kind, which the simulated
phone registers as an entry point (``pyproject.toml``) so that nothing here imports it::

    [project.entry-points."distrl.devices"]
    sim = "distrl.sim.device:sim_device"   # (name, SimSettings, Timeouts, *, seed, host) -> Device

Settings come as mappings of ``config`` field names (``SimSettings``, ``Timeouts``), checked by
``device_settings`` as an inventory's ``[sim]`` and ``[timeouts]`` tables are: an unknown name, a wrong
type or a value out of bounds is a ``ConfigError`` (a ValueError) that names it (``sim.width``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Mapping
from typing import Any, Protocol, cast

from distrl.config import SimSettings, Timeouts, parse_worker_settings
from distrl.device.adb import AdbDevice
from distrl.device.protocol import Device
from distrl.errors import ConfigError

__all__ = ["DEVICE_KINDS", "DeviceFactory", "device_kind", "device_settings", "open_device"]

DEVICE_KINDS = "distrl.devices"
"""The entry-point group of device kinds."""


class DeviceFactory(Protocol):
    """A registered kind of device: one phone, named ``name``, as ``settings`` say, seeded by ``seed``."""

    def __call__(
        self, name: str, settings: SimSettings, timeouts: Timeouts, *, seed: int, host: str = "local"
    ) -> Device: ...


def device_kind(kind: str) -> DeviceFactory:
    """The registered kind of device called ``kind`` (``sim``); ValueError naming the known ones."""
    point = _kinds().get(kind)
    if point is None:
        known = ", ".join(sorted(_kinds())) or "none: is distrl installed (pip install -e .)?"
        raise ValueError(f"no device kind {kind!r} is registered (registered: {known})")
    return cast(DeviceFactory, point.load())


def open_device(
    target: str | int | None = None,
    *,
    name: str = "phone",
    seed: int = 0,
    sim: Mapping[str, Any] | None = None,
    timeouts: Mapping[str, float] | None = None,
    adb: Mapping[str, Any] | None = None,
) -> Device:
    """The device ``target`` names: None a simulated phone (``sim``: ``SimSettings`` fields, ``seed``
    its seed, ``name`` its name), a string an adb serial, an integer an emulator's console port (for
    both, ``adb``: ``AdbDevice`` keywords such as ``adb_port``, ``image_format``, ``snapshot``). Every
    operation runs under ``timeouts`` (``Timeouts`` fields; the defaults for the rest)."""
    phone, limits = device_settings(sim, timeouts)
    if target is None:
        return device_kind("sim")(name, phone, limits, seed=seed)
    if isinstance(target, bool) or not isinstance(target, str | int):
        raise TypeError(f"device {target!r} is neither an adb serial nor an emulator console port")
    options = dict(adb or {})
    if isinstance(target, int):
        if not 0 < target < 65535:
            raise ValueError(f"emulator console port {target} is not a port")
        options.setdefault("console_port", target)
        target = f"emulator-{target}"
    try:
        return AdbDevice(target, timeouts=limits, **options)
    except TypeError as exc:
        raise ValueError(f"adb options: {exc}") from None


def device_settings(
    sim: Mapping[str, Any] | None = None, timeouts: Mapping[str, Any] | None = None
) -> tuple[SimSettings, Timeouts]:
    """``sim`` and ``timeouts`` (field names to values; numpy scalars as their numbers) as settings,
    checked by the inventory's reader: a ``ConfigError`` naming the field (``timeouts.device_act_s``)."""
    tables: dict[str, dict[str, Any]] = {}
    for where, values in (("sim", sim), ("timeouts", timeouts)):
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
        settings = parse_worker_settings(json.dumps(tables, allow_nan=True))
    except ConfigError as exc:
        raise ConfigError.at(exc.path or "", exc.problem or exc.message) from None
    return settings.sim, settings.timeouts


def _plain(value: object) -> object:
    """A numpy scalar as its Python number; anything else as it is."""
    item = getattr(value, "item", None)
    return item() if callable(item) and type(value).__module__ == "numpy" else value


@functools.cache
def _kinds() -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=DEVICE_KINDS)}
