"""The inventory: ``hosts.toml`` read into frozen dataclasses, checked whole at load time.

An inventory has these tables, each optional but ``[[hosts]]``::

    [run]        what to run: mode, task suite, budgets, seeds, output folder
    [tasks]      users' task files, and which evaluator scores the tasks
    [judge]      the VLM judge: an OpenAI-compatible endpoint, its model and limits
    [timeouts]   one named number per external operation, in seconds
    [learner]    the algorithm and its hyper-parameters
    [policy]     the model, its LoRA adapter, decoding and batching
    [screen]     the screens the policy sees, from every device: encoding and largest size
    [sim]        the simulated phones: their size, latency and faults
    [defaults]   host settings every [[hosts]] entry inherits (``env`` tables merge key by key)
    [[hosts]]    one entry per machine: how to reach it and which devices it drives

Every mistake (unknown key, wrong type, impossible value, duplicate name, bad TOML) raises one
``ConfigError`` whose message names the file, the TOML path (``hosts[1].devices.sim``) and the problem.
``hosts.example.toml`` documents every key.

- ``distrl.config.settings``: the dataclasses, one per table, with every default and bound; the hosts
  and their devices in ``distrl.config.hosts``, the learner's in ``distrl.config.learner``, and how a
  field states its bounds in ``distrl.config.fields``;
- ``distrl.config.reader``: TOML → checked settings (``load_inventory``, ``parse_inventory``): the
  inventory's sections, its hosts and the checks across keys, on ``distrl.config.values``, which
  reads one table into its dataclass (keys, types, bounds);
- ``distrl.config.documents``: the settings' JSON documents on the wire, read with the same checks: the
  worker's share (``worker_settings_json``, ``parse_worker_settings``), a host's devices
  (``devices_json``, ``parse_devices``) and a learner rank's (``learner_settings_json``,
  ``parse_learner_settings``);
- ``distrl.config.paths``: what keeps an output folder from being written, in words (``not_a_folder``,
  ``cannot_create``), found before any work.
"""

from distrl.config.documents import (
    devices_json,
    learner_settings_json,
    parse_devices,
    parse_learner_settings,
    parse_worker_settings,
    worker_settings_json,
)
from distrl.config.hosts import (
    ADB_KIND,
    EMULATOR_KIND,
    LOCAL_ADDRESS,
    SIM_KIND,
    Devices,
    HostEntry,
    address_problem,
)
from distrl.config.learner import LearnerSettings
from distrl.config.paths import cannot_create, not_a_folder
from distrl.config.reader import checked_section, load_inventory, parse_inventory, read_section
from distrl.config.settings import (
    BUILT_IN_BASES,
    BUILT_IN_MODELS,
    EXPERT,
    MOST_SEED,
    PRETRAINED,
    TINY_BC,
    TINY_WEAK,
    Inventory,
    JudgeSettings,
    PolicySettings,
    RunSettings,
    ScreenSettings,
    SimSettings,
    TaskSettings,
    Timeouts,
    WorkerSettings,
    as_whole,
    seed_problem,
)

__all__ = [
    "ADB_KIND",
    "BUILT_IN_BASES",
    "BUILT_IN_MODELS",
    "EMULATOR_KIND",
    "EXPERT",
    "LOCAL_ADDRESS",
    "MOST_SEED",
    "SIM_KIND",
    "TINY_BC",
    "TINY_WEAK",
    "PRETRAINED",
    "Devices",
    "HostEntry",
    "Inventory",
    "JudgeSettings",
    "LearnerSettings",
    "PolicySettings",
    "RunSettings",
    "ScreenSettings",
    "SimSettings",
    "TaskSettings",
    "Timeouts",
    "WorkerSettings",
    "address_problem",
    "cannot_create",
    "checked_section",
    "devices_json",
    "learner_settings_json",
    "load_inventory",
    "not_a_folder",
    "parse_devices",
    "parse_learner_settings",
    "parse_inventory",
    "parse_worker_settings",
    "read_section",
    "seed_problem",
    "as_whole",
    "worker_settings_json",
]
