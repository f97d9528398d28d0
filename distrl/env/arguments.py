"""``PhoneEnv``'s arguments, checked when it is made: a wrong type is a TypeError and an impossible value
a ValueError, each one sentence that names the argument (``PhoneEnv timeouts.device_act_s: ...``), never
a traceback from deep inside or a setting used as given.

``sim``, ``screen`` and ``timeouts`` are checked by the device registry (``device_settings``) with the
same reader as an inventory's ``[sim]``, ``[screen]`` and ``[timeouts]`` tables, so their bounds are
written once: any mistake in them is a ValueError (``ConfigError``). ``adb`` is checked against the
keywords of ``AdbDevice``.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from distrl.device import AdbDevice
from distrl.device.registry import device_settings
from distrl.records import Task

__all__ = [
    "MAX_SCREEN",
    "check_adb",
    "check_count",
    "check_device",
    "check_flag",
    "check_penalty",
    "check_source",
    "check_tasks",
    "check_settings",
    "check_text",
    "refuse",
    "wrong_type",
]

MAX_SCREEN = 4096
"""Most pixels a side of the observed screen may have (a phone's screen is at most about 3200)."""

_PORTS = ("adb_port", "console_port")


def refuse(path: str, problem: str) -> ValueError:
    """The error for an impossible value of argument ``path``: ``PhoneEnv <path>: <problem>``."""
    return ValueError(f"PhoneEnv {path}: {problem}")


def wrong_type(path: str, expected: str, value: object) -> TypeError:
    """The error for argument ``path`` of the wrong type."""
    return TypeError(f"PhoneEnv {path}: expected {expected}, got {type(value).__name__} {value!r:.60}")


def check_count(name: str, value: object, *, high: int | None = None) -> int:
    """``value`` as an integer at least 1 (and at most ``high``)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise wrong_type(name, "an integer", value)
    if value < 1 or (high is not None and value > high):
        limit = f" and at most {high}" if high is not None else ""
        raise refuse(name, f"must be at least 1{limit}, got {value}")
    return int(value)


def check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise wrong_type(name, "True or False", value)
    return bool(value)


def check_text(name: str, value: object, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise wrong_type(name, "a string or None" if optional else "a string", value)
    return value


def check_penalty(value: object) -> float:
    """What an invalid answer costs: a finite number, at least 0."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise wrong_type("invalid_penalty", "a number", value)
    if not math.isfinite(value) or value < 0:
        raise refuse("invalid_penalty", f"must be a finite number at least 0, got {value}")
    return float(value)


def check_source(suite: object, split: object) -> tuple[str | list[str], str | None]:
    """A registered source's name or task files (a path, or a sequence of them), and the split."""
    check_text("split", split, optional=True)
    if isinstance(suite, str):
        if not suite:
            raise refuse("suite", "expected a task source's name or task files, got an empty string")
        return suite, typing.cast(str | None, split)
    if not isinstance(suite, Sequence) or not suite or not all(isinstance(s, str) for s in suite):
        raise wrong_type("suite", "a task source's name or a list of task files", suite)
    return list(suite), typing.cast(str | None, split)


def check_tasks(tasks: object) -> list[Task]:
    """The ``tasks`` argument: a non-empty sequence of ``Task``, each id once."""
    if isinstance(tasks, str | bytes) or not isinstance(tasks, Sequence):
        raise wrong_type("tasks", "a list of distrl.Task", tasks)
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise wrong_type(f"tasks[{i}]", "a distrl.Task", task)
        if task.id in seen:
            raise refuse(f"tasks[{i}]", f"task id {task.id!r} appears twice")
        seen.add(task.id)
    if not seen:
        raise refuse("tasks", "the list is empty")
    return list(tasks)


def check_device(device: object) -> str | int | None:
    """None (a simulated phone), an adb serial, or an emulator's console port."""
    if device is None:
        return None
    if isinstance(device, str):
        if not device or any(c.isspace() for c in device):
            raise refuse("device", f"an adb serial is one word, got {device!r}")
        return device
    if isinstance(device, int | np.integer) and not isinstance(device, bool):
        if not 0 < device < 65536:
            raise refuse("device", f"an emulator console port is between 1 and 65535, got {device}")
        return int(device)
    raise wrong_type("device", "an adb serial, a console port or None", device)


def check_adb(adb: object) -> dict[str, Any]:
    """``AdbDevice`` keywords, each of the type its parameter takes (ports between 1 and 65535, counts
    at least 0)."""
    options = _mapping("adb", adb)
    hints = typing.get_type_hints(AdbDevice.__init__)
    known = sorted(set(hints) - {"serial", "timeouts", "return"})
    for key, value in options.items():
        if key not in known:
            raise refuse(f"adb.{key}", f"unknown setting (known: {', '.join(known)})")
        kinds = tuple(t for t in typing.get_args(hints[key]) or (hints[key],) if isinstance(t, type))
        fits = isinstance(value, kinds) or (int in kinds and isinstance(value, np.integer))
        if not fits or (isinstance(value, bool) and bool not in kinds):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in kinds)
            raise wrong_type(f"adb.{key}", expected, value)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            low, high = (1, 65535) if key in _PORTS else (0, None)
            if value < low or (high is not None and value > high):
                limit = f" and at most {high}" if high is not None else ""
                raise refuse(f"adb.{key}", f"must be at least {low}{limit}, got {value}")
            options[key] = int(value)
    return options


def check_settings(
    sim: object, timeouts: object, screen: object, sim_defaults: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``sim`` (over ``sim_defaults``), ``timeouts`` and ``screen``: settings by name, checked as the
    inventory's ``[sim]``, ``[timeouts]`` and ``[screen]`` are."""
    phone = {**sim_defaults, **_mapping("sim", sim)}
    limits = _mapping("timeouts", timeouts)
    screens = _mapping("screen", screen)
    try:
        device_settings(phone, limits, screens)
    except ValueError as exc:
        raise ValueError(f"PhoneEnv {exc}") from None
    return phone, limits, screens


def _mapping(name: str, value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise wrong_type(name, "a dict of settings by name", value)
    return dict(value)
