"""The settings' JSON documents on the wire: what the learner tells a worker (``worker_settings_json``,
``parse_worker_settings``), a host's devices (``devices_json``, ``parse_devices``) and a learner rank's
settings (``learner_settings_json``, ``parse_learner_settings``). Each document is read back with the
inventory's own checks (``distrl.config.reader``), so a setting that arrives on the wire is as checked
as one read from ``hosts.toml``.
"""

from __future__ import annotations

import dataclasses
import json

from distrl.config.hosts import Devices
from distrl.config.learner import LearnerSettings
from distrl.config.reader import Reader, as_table
from distrl.config.settings import (
    Inventory,
    PolicySettings,
    ScreenSettings,
    SimSettings,
    Timeouts,
    WorkerSettings,
)
from distrl.errors import ConfigError


def worker_settings_json(inventory: Inventory) -> str:
    """The ``WorkerSettings`` of ``inventory`` as a JSON document (``parse_worker_settings`` reads it)."""
    document = {
        "policy": dataclasses.asdict(inventory.policy),
        "screen": dataclasses.asdict(inventory.screen),
        "sim": dataclasses.asdict(inventory.sim),
        "timeouts": dataclasses.asdict(inventory.timeouts),
        "seed": inventory.run.seed,
    }
    return json.dumps(document, allow_nan=True)


def learner_settings_json(policy: PolicySettings, learner: LearnerSettings) -> str:
    """The settings a learner rank builds its policy and learner from, as a JSON document
    (``parse_learner_settings`` reads it)."""
    document = {"policy": as_table(policy), "learner": as_table(learner)}
    return json.dumps(document, allow_nan=True)


def parse_learner_settings(text: str) -> tuple[PolicySettings, LearnerSettings]:
    """Check a ``learner_settings_json`` document as the inventory's own sections are checked.

    Raises ``ConfigError`` naming the setting at fault."""
    reader, data = _document(text, "the learner settings", "rank")
    table = reader.table(data, "")
    reader.reject_unknown(table, ["policy", "learner"], "")
    return (
        reader.section(PolicySettings, table.get("policy", {}), "policy"),
        reader.section(LearnerSettings, table.get("learner", {}), "learner"),
    )


def _document(text: str, what: str, source: str) -> tuple[Reader, object]:
    """A settings document sent on the wire, parsed, and the reader that checks it (``source`` names the
    message it came in); ``ConfigError`` when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError.at("", f"{what} are not JSON: {exc}", source) from exc
    return Reader(source), data


def devices_json(devices: Devices) -> str:
    """A host's ``Devices`` as a JSON document (``parse_devices`` reads it): the learner's hello carries
    it to the worker, which launches and checks them."""
    return json.dumps(dataclasses.asdict(devices))


def parse_devices(text: str) -> Devices:
    """Check a ``devices_json`` document as the inventory's ``[hosts.devices]`` is checked.

    Raises ``ConfigError`` naming the setting at fault."""
    reader, data = _document(text, "the device settings", "hello")
    table = reader.table(data, "devices")
    devices = reader.section(Devices, table, "devices")
    reader.launch(devices, "devices")
    return devices


def parse_worker_settings(text: str) -> WorkerSettings:
    """Check a ``worker_settings_json`` document as the inventory's own sections are checked.

    Raises ``ConfigError`` naming the setting at fault."""
    reader, data = _document(text, "the worker settings", "setup")
    table = reader.table(data, "")
    reader.reject_unknown(table, ["policy", "screen", "sim", "timeouts", "seed"], "")
    seed = table.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise reader.fail("seed", f"must be an integer ≥ 0, not {seed!r}")
    return WorkerSettings(
        policy=reader.section(PolicySettings, table.get("policy", {}), "policy"),
        screen=reader.section(ScreenSettings, table.get("screen", {}), "screen"),
        sim=reader.section(SimSettings, table.get("sim", {}), "sim"),
        timeouts=reader.section(Timeouts, table.get("timeouts", {}), "timeouts"),
        seed=seed,
    )
