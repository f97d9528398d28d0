"""``hosts.toml`` read into the settings of ``distrl.config.settings`` (with ``hosts`` and ``learner``),
checked whole at load time: every mistake is one ``ConfigError`` naming the file, the TOML path and the
problem.

The settings themselves are ``settings.py``, ``hosts.py`` and ``learner.py``; their JSON documents on the
wire are ``documents.py``, read back through this module's ``Reader``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import operator
import re
import sys
import tomllib
import types
import typing
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from distrl.config.hosts import LOCAL_ADDRESS, SIM_KIND, Devices, HostEntry, address_problem
from distrl.config.learner import MOVED_KEYS, LearnerSettings, misplaced_table
from distrl.config.paths import not_a_folder
from distrl.config.settings import (
    BUILT_IN_MODELS,
    MOVED_SIM_KEYS,
    Inventory,
    JudgeSettings,
    PolicySettings,
    RunSettings,
    ScreenSettings,
    SimSettings,
    TaskSettings,
    Timeouts,
)
from distrl.errors import ConfigError

T = TypeVar("T")


def read_section(cls: type[T], table: object, path: str, *, source: str = "") -> T:
    """``table`` read into the settings dataclass ``cls`` with the inventory's own checks (types, bounds,
    unknown keys); ``ConfigError`` naming ``source`` and the key under ``path`` otherwise. An algorithm's
    table is read so (``distrl.learner.algorithms.configure``)."""
    return Reader(source or None).section(cls, table, path)


def checked_section(settings: T, path: str) -> T:
    """``settings``, a section's dataclass built in Python, checked as the inventory's ``[path]`` is read
    (types, bounds, the fields' own checks): the same settings, or ``ConfigError`` naming the field.
    Built in Python, nothing else checks them before they are used (a negative temperature, a batch of
    0)."""
    if not dataclasses.is_dataclass(settings) or isinstance(settings, type):
        raise TypeError(f"{path} settings must be a settings dataclass, not {type(settings).__name__}")
    table = json.loads(json.dumps(dataclasses.asdict(settings), default=str))  # as TOML gives them
    table = {**table.pop("tables", {}), **table}  # the learner's algorithms' tables sit in [learner]
    return read_section(type(settings), table, path)


_SECTIONS: dict[str, type[Any]] = {
    "run": RunSettings,
    "tasks": TaskSettings,
    "judge": JudgeSettings,
    "timeouts": Timeouts,
    "learner": LearnerSettings,
    "policy": PolicySettings,
    "screen": ScreenSettings,
    "sim": SimSettings,
}
HOST_ONLY = ("name", "address")
_LAUNCH_KEYS = ("count", "first_port", "sdk_root", "emulator_flags", "memory_mb", "cores", "max_relaunches")
"""Keys of ``[hosts.devices]`` that only launched emulators (``avd``) use."""
_NO_DEVICES = Devices()
_LAUNCHER_FLAGS = ("-avd", "-port", "-ports", "-read-only", "-snapshot", "-no-snapshot-save", "-list-avds")
"""Emulator flags the launcher sets itself."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def load_inventory(path: str | Path) -> Inventory:
    """Read and check ``path``. Raises ``ConfigError`` (file, TOML path, problem) on any mistake."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError.at("", "file not found", file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError.at("", f"cannot read the file ({exc})", file) from exc
    return parse_inventory(text, source=file)


def _url_problem(url: str) -> str:
    """What keeps ``url`` from naming an endpoint (a bracket left open, a port that is no port, no
    host), in words; "" when nothing does."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - read for its check: a port out of range or not a number raises
    except ValueError as exc:
        return f"{url!r} is not a URL ({exc})"
    return "" if parts.hostname else f"{url!r} names no host"


def parse_inventory(text: str, *, source: str = "") -> Inventory:
    """Check an inventory given as TOML text; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError.at("", f"invalid TOML: {exc}", source or None) from exc
    except ValueError as exc:  # a number past Python's 4,300 digits, which tomllib leaves uncaught
        raise ConfigError.at("", f"invalid TOML: {str(exc).split(':')[0]}", source or None) from None
    except RecursionError:
        raise ConfigError.at("", "invalid TOML: nested too deeply", source or None) from None
    return Reader(source or None).inventory(data)


class Reader:
    """Turns parsed TOML (or a settings document's JSON, ``distrl.config.documents``) into checked
    dataclasses; every error names ``file`` and the TOML path."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.base = Path(file).resolve().parent if file else Path.cwd()

    def local_path(self, value: str) -> str:
        """A path on this machine: ``~`` expanded, relative paths from the inventory's folder."""
        return str(self.base / Path(value).expanduser()) if value else ""

    def fail(self, path: str, problem: str) -> ConfigError:
        return ConfigError.at(path, problem, self.file)

    def inventory(self, data: dict[str, Any]) -> Inventory:
        allowed = [*_SECTIONS, "defaults", "hosts"]
        self.reject_unknown(data, allowed, "")
        if isinstance(data.get("judge"), dict) and "api_key" in data["judge"]:
            raise self.fail(
                "judge.api_key",
                "the key never goes in the inventory: put it in an environment variable and name that"
                " variable in judge.api_key_env",
            )
        sections = {name: self.section(cls, data.get(name, {}), name) for name, cls in _SECTIONS.items()}
        run: RunSettings = sections["run"]
        sections["run"] = dataclasses.replace(run, output_dir=self.local_path(run.output_dir))
        output = Path(sections["run"].output_dir)
        if problem := not_a_folder(output):
            raise self.fail("run.output_dir", problem)
        tasks: TaskSettings = sections["tasks"]
        sections["tasks"] = dataclasses.replace(tasks, files=tuple(self.local_path(f) for f in tasks.files))
        judge: JudgeSettings = sections["judge"]
        if judge.configured and not judge.model:
            raise self.fail("judge.model", "is needed with judge.base_url (the model to ask)")
        if judge.model and not judge.configured:
            raise self.fail("judge.base_url", "is needed with judge.model (the endpoint to ask)")
        if judge.configured and (problem := _url_problem(judge.base_url)):
            raise self.fail("judge.base_url", problem)  # found now, not after the episodes it was to judge
        cache = (
            self.local_path(judge.cache)
            if judge.cache
            else str(Path(sections["run"].output_dir) / "judge-cache")
        )
        sections["judge"] = dataclasses.replace(judge, cache=cache)
        policy: PolicySettings = sections["policy"]
        sections["policy"] = dataclasses.replace(
            policy,
            model=policy.model if policy.model in BUILT_IN_MODELS else self.local_path(policy.model),
            adapter=self.local_path(policy.adapter),
        )
        if run.max_policy_lag < run.publish_every - 1:
            raise self.fail(
                "run.max_policy_lag",
                f"must be at least run.publish_every - 1 ({run.publish_every - 1}): with fewer, most"
                " trajectories would be too stale to train on",
            )
        timeouts: Timeouts = sections["timeouts"]
        if timeouts.heartbeat_timeout_s <= timeouts.heartbeat_interval_s:
            raise self.fail(
                "timeouts.heartbeat_timeout_s",
                f"must be longer than timeouts.heartbeat_interval_s ({timeouts.heartbeat_interval_s:g} s)",
            )
        learner: LearnerSettings = sections["learner"]
        if learner.devices and len(learner.devices) != learner.ranks:
            raise self.fail(
                "learner.devices",
                f"names {len(learner.devices)} device(s) for learner.ranks = {learner.ranks}: one per rank",
            )
        hosts = self.hosts(data)
        group_size = sections["tasks"].group_size
        devices = sum(len(host.devices.serials) for host in hosts)
        if group_size > 1 and devices and group_size > devices:
            raise self.fail(
                "tasks.group_size",
                f"is {group_size}, more than the fleet's {devices} device(s): each member of a group plays on"
                " a device of its own",
            )
        sim: SimSettings = sections["sim"]
        if sim.height < sim.width:
            raise self.fail("sim.height", f"must be at least sim.width ({sim.width}): phones are portrait")
        fault_total = sim.hang_rate + sim.crash_rate + sim.offline_rate + sim.white_frame_rate
        if fault_total > 1:
            raise self.fail("sim", f"the fault rates add up to {fault_total:g}, more than 1")
        return Inventory(hosts=hosts, source=self.file or "", **sections)

    def section(self, cls: type[T], table: object, path: str) -> T:
        if cls is LearnerSettings:
            return self.learner(self.table(table, path), path)  # type: ignore[return-value]  # cls is it
        if cls is SimSettings:
            self.moved(table, path, MOVED_SIM_KEYS, "every device's screens are in [screen]'s format")
        values = self.fields(cls, self.table(table, path), path)
        try:
            return cls(**values)
        except ConfigError as exc:  # a bound across fields, checked by the dataclass itself: name the file
            if exc.file or not self.file:
                raise
            raise self.fail(exc.path or path, exc.problem or str(exc)) from None
        except (ValueError, TypeError) as exc:  # an algorithm's settings checking themselves their own way
            raise self.fail(path, str(exc) or type(exc).__name__) from None

    def moved(self, table: object, path: str, moved: Mapping[str, str], why: str) -> None:
        """Refuse the keys of ``table`` that ``moved`` says are elsewhere now, saying where and ``why``."""
        keys = [key for key in self.table(table, path) if key in moved]
        if keys:
            where = ", ".join(f"{_join(path, key)} is now {moved[key]}" for key in keys)
            raise self.fail(path, f"{why}: {where}")

    def learner(self, table: dict[str, Any], path: str) -> LearnerSettings:
        """``[learner]``: the core's keys, and each ``[learner.NAME]`` table kept as written for its
        algorithm to read (``distrl.learner.algorithms.configure``). A key that moved to an algorithm's
        table is refused with where it is now."""
        self.moved(table, path, MOVED_KEYS, "each algorithm's settings have their own table")
        tables = {key: value for key, value in table.items() if isinstance(value, dict)}
        plain = {key: value for key, value in table.items() if key not in tables}
        if misplaced := misplaced_table(plain, tables):
            raise self.fail(_join(path, misplaced[0]), misplaced[1])
        return LearnerSettings(**self.fields(LearnerSettings, plain, path), tables=tables)

    def hosts(self, data: dict[str, Any]) -> tuple[HostEntry, ...]:
        defaults_table = self.table(data.get("defaults", {}), "defaults")
        for key in HOST_ONLY:
            if key in defaults_table:
                raise self.fail(
                    f"defaults.{key}", f"'{key}' differs per host; set it in each [[hosts]] entry"
                )
        defaults = self.fields(HostEntry, defaults_table, "defaults")
        entries = data.get("hosts")
        if entries is None:
            raise self.fail("hosts", "no hosts: add at least one [[hosts]] entry")
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise self.fail("hosts", f"expected an array of tables ([[hosts]]), got {_describe(entries)}")
        if not entries:
            raise self.fail("hosts", "no hosts: add at least one [[hosts]] entry")
        hosts: list[HostEntry] = []
        seen: dict[str, int] = {}
        devices: dict[tuple[str, str], int] = {}
        """(address, serial) → host index: two hosts on one machine cannot share a device."""
        for index, entry in enumerate(entries):
            path = f"hosts[{index}]"
            host = self.host(entry, defaults, path)
            if host.name in seen:
                raise self.fail(
                    f"{path}.name", f"duplicate host name {host.name!r} (also hosts[{seen[host.name]}])"
                )
            seen[host.name] = index
            for kind, names in host.devices.kinds.items():
                if kind == SIM_KIND:
                    continue  # in-process phones: each worker has its own
                for serial in names:
                    other = devices.setdefault((host.address, serial), index)
                    if other != index:
                        raise self.fail(
                            f"{path}.devices",
                            f"device {serial!r} of {host.address} is also hosts[{other}]'s: two workers"
                            " cannot drive one device",
                        )
            hosts.append(host)
        return tuple(hosts)

    def host(self, entry: dict[str, Any], defaults: dict[str, Any], path: str) -> HostEntry:
        own = self.fields(HostEntry, entry, path)
        for key in HOST_ONLY:
            if key not in own:
                raise self.fail(path, f"missing required key '{key}'")
            if not own[key]:
                raise self.fail(f"{path}.{key}", "must not be empty")
        merged = {**defaults, **own, "env": {**defaults.get("env", {}), **own.get("env", {})}}
        transport = merged.get("transport", "auto")
        if transport == "auto":
            transport = "local" if own["address"] == LOCAL_ADDRESS else "ssh"
        elif transport == "local" and own["address"] != LOCAL_ADDRESS:
            raise self.fail(
                f"{path}.address",
                f"transport 'local' runs the worker on this machine; set address = \"{LOCAL_ADDRESS}\"",
            )
        problem = address_problem(own["address"])
        if problem:
            raise self.fail(f"{path}.address", f"{own['address']!r} {problem}")
        merged["transport"] = transport
        if not merged.get("python") and transport == "local":
            merged["python"] = sys.executable  # over SSH, empty: the transport picks (the deployed one)
        for key in ("identity_file", "known_hosts_file") + (("workdir",) if transport == "local" else ()):
            merged[key] = self.local_path(merged.get(key, ""))
        if transport == "local" and merged.get("workdir") and not Path(merged["workdir"]).is_dir():
            where = f"{path}.workdir" if "workdir" in own else "defaults.workdir"
            raise self.fail(where, f"{merged['workdir']!r} is not a folder on this machine")
        host = HostEntry(**merged)
        jump_port = host.proxy_jump.rpartition(":")[2] if ":" in host.proxy_jump else ""
        if jump_port and not 1 <= int(jump_port) <= 65535:
            where = f"{path}.proxy_jump" if "proxy_jump" in own else "defaults.proxy_jump"
            raise self.fail(where, f"{host.proxy_jump!r} names port {jump_port}: a port is 1-65535")
        where = f"{path}.devices" if "devices" in own else "defaults.devices"
        for i, port in enumerate(host.devices.emulator_ports):
            if not (5554 <= port <= 5682 and port % 2 == 0):
                raise self.fail(
                    f"{where}.emulator_ports[{i}]",
                    f"{port} is not an emulator console port (even, 5554-5682)",
                )
        for i, serial in enumerate(host.devices.adb_serials):
            if not serial.strip() or any(c.isspace() for c in serial):
                raise self.fail(f"{where}.adb_serials[{i}]", f"{serial!r} is not an adb serial")
        self.launch(host.devices, where)
        serials = host.devices.serials
        if not serials:
            raise self.fail(where, "no devices: set sim, adb_serials, emulator_ports or avd")
        duplicates = sorted(serial for serial, n in Counter(serials).items() if n > 1)
        if duplicates:
            raise self.fail(where, f"device {duplicates[0]!r} is listed twice")
        return host

    def launch(self, devices: Devices, where: str) -> None:
        """Check the keys of emulators the worker launches: they need ``avd``, and their ports fit."""
        if not devices.avd:
            for key in _LAUNCH_KEYS:
                if getattr(devices, key) != getattr(_NO_DEVICES, key):
                    raise self.fail(f"{where}.{key}", "is a setting of launched emulators: set avd too")
            return
        last = devices.first_port + 2 * (devices.count - 1)
        if devices.first_port % 2:
            raise self.fail(f"{where}.first_port", f"{devices.first_port} is odd: console ports are even")
        if last > 5682:
            raise self.fail(
                f"{where}.count",
                f"{devices.count} emulators from port {devices.first_port} end at {last}, past the last"
                " console port an emulator takes (5682)",
            )
        for i, flag in enumerate(devices.emulator_flags):
            if flag in _LAUNCHER_FLAGS:
                raise self.fail(
                    f"{where}.emulator_flags[{i}]",
                    f"{flag} is set by the launcher",
                )

    def fields(self, cls: type[Any], table: dict[str, Any], path: str) -> dict[str, Any]:
        """Check ``table``'s keys and values against ``cls``'s fields; returns the converted values."""
        specs = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name not in ("source", "tables")}
        self.reject_unknown(table, list(specs), path)
        try:
            hints = typing.get_type_hints(cls)
        except Exception as exc:  # a name only imported for type checking, say, in an algorithm's settings
            raise self.fail(path, f"{cls.__qualname__}'s field types cannot be read: {exc}") from None
        values: dict[str, Any] = {}
        for key, raw in table.items():
            where = _join(path, key)
            value = self.value(hints[key], raw, where)
            self.check_bounds(specs[key].metadata, value, where)
            pattern = specs[key].metadata.get("pattern")
            if pattern is not None and value and not pattern.fullmatch(value):
                raise self.fail(where, f"{value!r} is not {specs[key].metadata['meaning']}")
            values[key] = value
        return values

    def value(self, hint: Any, raw: object, path: str) -> Any:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if isinstance(raw, int) and not isinstance(raw, bool) and not -(2**63) <= raw < 2**63:
            raise self.fail(path, f"a {raw.bit_length() + 1}-bit integer is beyond TOML's (64 bits)")
        if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
            # Optional: TOML has no null, so a key set is the other type's (a key left out keeps None)
            return self.value(next(a for a in args if a is not type(None)), raw, path)
        if hint is bool:
            if isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected true or false, got {_describe(raw)}")
        if hint is int:
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected an integer, got {_describe(raw)}")
        if hint is float:
            if isinstance(raw, float) and math.isnan(raw):
                raise self.fail(path, "must be a number, not nan")
            if isinstance(raw, int | float) and not isinstance(raw, bool):
                return float(raw)
            raise self.fail(path, f"expected a number, got {_describe(raw)}")
        if hint is str:
            if not isinstance(raw, str):
                raise self.fail(path, f"expected a string, got {_describe(raw)}")
            if "\0" in raw:
                raise self.fail(path, "must not contain a NUL character")
            return raw
        if origin is Literal:
            if isinstance(raw, str) and raw in args:
                return raw
            choices = ", ".join(repr(a) for a in args)
            raise self.fail(path, f"expected one of {choices}, got {_describe(raw)}")
        if origin is tuple:
            if not isinstance(raw, list):
                raise self.fail(path, f"expected an array, got {_describe(raw)}")
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(self.value(args[0], item, f"{path}[{i}]") for i, item in enumerate(raw))
            if len(raw) != len(args):
                raise self.fail(path, f"expected an array of {len(args)} items, got {len(raw)}")
            return tuple(
                self.value(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, raw, strict=True))
            )
        if origin in (Mapping, dict):
            table = self.table(raw, path)
            result: dict[str, str] = {}
            for key, item in table.items():
                where = _join(path, key)
                if not _ENV_NAME.fullmatch(key):
                    raise self.fail(where, f"{key!r} is not a valid environment variable name")
                result[key] = self.value(args[1], item, where)
            return result
        if origin is list:
            if not isinstance(raw, list):
                raise self.fail(path, f"expected an array, got {_describe(raw)}")
            return [self.value(args[0] if args else Any, item, f"{path}[{i}]") for i, item in enumerate(raw)]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self.section(hint, raw, path)
        if hint is Any:
            return raw
        # an algorithm's own settings may declare any type: say which one TOML cannot set
        declared = hint.__name__ if isinstance(hint, type) else str(hint)
        raise self.fail(
            path,
            f"is declared {declared}, a type the inventory cannot set (it sets bool, int, float, str,"
            " Literal, tuple, list, dict of str, a dataclass, and X | None)",
        )

    def check_bounds(self, bounds: Mapping[str, Any], value: object, path: str) -> None:
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                self.check_bounds(bounds, item, f"{path}[{i}]")
            return
        if not isinstance(value, int | float):
            return
        if math.isinf(value) and not bounds.get("allow_inf"):
            raise self.fail(path, f"must be finite, got {value}")
        checks = (
            ("ge", operator.ge, "at least"),
            ("gt", operator.gt, "greater than"),
            ("le", operator.le, "at most"),
        )
        for key, ok, words in checks:
            bound = bounds.get(key)
            if bound is not None and not ok(value, bound):
                raise self.fail(path, f"must be {words} {bound:g}, got {value:g}")

    def table(self, raw: object, path: str) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(path, f"expected a table, got {_describe(raw)}")
        return raw

    def reject_unknown(self, table: Mapping[str, object], allowed: list[str], path: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise self.fail(_join(path, key), f"unknown key{hint}")


def _join(path: str, key: str) -> str:
    part = key if _BARE_KEY.fullmatch(key) else '"' + key.replace('"', '\\"') + '"'
    return f"{path}.{part}" if path else part


def _describe(value: object) -> str:
    kinds: dict[type[Any], str] = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    kind = next((words for cls, words in kinds.items() if isinstance(value, cls)), type(value).__name__)
    if isinstance(value, dict | list):
        return kind
    shown = repr(value) if not isinstance(value, bool) else str(value).lower()
    return f"{kind} ({shown[:60]})"
