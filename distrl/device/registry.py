"""Opening a device by what names it: an adb serial, an emulator console port, or a registered kind.

``open_device`` makes the ``Device`` that code outside the composition root asks for by name (the
Gymnasium environment, ``distrl.env``): a string is an adb serial (``AdbDevice``), an integer an
emulator's console port (serial ``emulator-<port>``), and None the ``sim`` kind, which the simulated
phone registers as an entry point (``pyproject.toml``) so that nothing here imports it::

    [project.entry-points."distrl.devices"]
    sim = "distrl.sim.device:sim_device"   # (name, SimSettings, Timeouts, *, seed, host) -> Device

Settings come as mappings of ``config`` field names (``SimSettings``, ``Timeouts``); an unknown name is
a ValueError that names it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast

from distrl.config import SimSettings, Timeouts
from distrl.device.adb import AdbDevice
from distrl.device.protocol import Device

__all__ = ["DEVICE_KINDS", "DeviceFactory", "device_kind", "open_device"]

DEVICE_KINDS = "distrl.devices"
"""The entry-point group of device kinds."""

_T = TypeVar("_T")


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
    limits = _settings(Timeouts, timeouts, "timeouts")
    if target is None:
        return device_kind("sim")(name, _settings(SimSettings, sim, "sim"), limits, seed=seed)
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


def _settings(cls: type[_T], values: Mapping[str, Any] | None, where: str) -> _T:
    """``cls`` made from ``values``; ValueError naming ``where`` and the unknown field."""
    known = {field.name for field in dataclasses.fields(cast(Any, cls))}
    unknown = sorted(set(values or {}) - known)
    if unknown:
        raise ValueError(f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return cls(**dict(values or {}))


@functools.cache
def _kinds() -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=DEVICE_KINDS)}
