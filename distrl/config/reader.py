"""``hosts.toml`` read into the settings of ``distrl.config.settings`` (with ``hosts`` and ``learner``),
checked whole at load time: every mistake is one ``ConfigError`` naming the file, the TOML path and the
problem.

The settings themselves are ``settings.py``, ``hosts.py`` and ``learner.py``; their JSON documents on the
wire are ``documents.py``, read back through this module's ``Reader``. How one table becomes its
dataclass (keys, types, bounds) is ``values.py``; this module adds the inventory's whole: its sections,
its hosts and the checks across keys.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tomllib
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

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
from distrl.config.values import Values, describe, join
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
    table = json.loads(json.dumps(as_table(settings), default=str))  # as TOML gives them
    return read_section(type(settings), table, path)


def as_table(settings: Any) -> dict[str, Any]:
    """A section's dataclass as its TOML table: its fields, and a learner's algorithms' tables among
    them (they sit in ``[learner]``)."""
    table = dataclasses.asdict(settings)
    return {**table.pop("tables", {}), **table}


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


class Reader(Values):
    """Turns parsed TOML (or a settings document's JSON, ``distrl.config.documents``) into checked
    dataclasses: the inventory's sections, its hosts, and the checks across keys; every error names
    ``file`` and the TOML path."""

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
        limit = sections["run"].max_trajectories
        if group_size > 1 and limit % group_size:
            raise self.fail(
                "run.max_trajectories",
                f"is {limit}, not a multiple of tasks.group_size ({group_size}): the last group would be"
                " played in part, and a group is trained on whole or not at all",
            )
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
        return super().section(cls, table, path)

    def moved(self, table: object, path: str, moved: Mapping[str, str], why: str) -> None:
        """Refuse the keys of ``table`` that ``moved`` says are elsewhere now, saying where and ``why``."""
        keys = [key for key in self.table(table, path) if key in moved]
        if keys:
            where = ", ".join(f"{join(path, key)} is now {moved[key]}" for key in keys)
            raise self.fail(path, f"{why}: {where}")

    def learner(self, table: dict[str, Any], path: str) -> LearnerSettings:
        """``[learner]``: the core's keys, and each ``[learner.NAME]`` table kept as written for its
        algorithm to read (``distrl.learner.algorithms.configure``). A key that moved to an algorithm's
        table is refused with where it is now."""
        self.moved(table, path, MOVED_KEYS, "each algorithm's settings have their own table")
        tables = {key: value for key, value in table.items() if isinstance(value, dict)}
        plain = {key: value for key, value in table.items() if key not in tables}
        if misplaced := misplaced_table(plain, tables):
            raise self.fail(join(path, misplaced[0]), misplaced[1])
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
            raise self.fail("hosts", f"expected an array of tables ([[hosts]]), got {describe(entries)}")
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
