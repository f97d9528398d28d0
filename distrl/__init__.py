"""distrl: asynchronous distributed reinforcement learning for phone-control agents."""

import os as _os
import sys as _sys
import warnings as _warnings

# OpenMP threads that spin while they wait take whole cores from the phones, the workers and the learner
# sharing a machine: inference measured 100 times slower, and the learner's updates 3.6 times slower
# beside a local worker (docs/results/benchmarks.md). Let them sleep. libgomp reads this once, when torch
# is imported, so it is set here, on every path in (``python -m distrl``, ``import distrl``, the workers and
# ranks, which inherit it); a user's own setting wins.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if "torch" in _sys.modules:
        _warnings.warn(
            "torch was imported before distrl, so its OpenMP threads spin while they wait, taking cores from"
            " the phones and workers on this machine (the learner's updates measured 3.6 times slower):"
            " import distrl first, or set OMP_WAIT_POLICY=PASSIVE in the environment",
            RuntimeWarning,
            stacklevel=2,
        )

from distrl.config import Inventory, load_inventory, parse_inventory
from distrl.errors import (
    BadScreenshot,
    CheckpointError,
    ConfigError,
    DeployError,
    DeviceCrashed,
    DeviceError,
    DeviceOffline,
    DeviceTimeout,
    DistrlError,
    EmulatorError,
    FrameTooLarge,
    JudgeError,
    LearnerError,
    PolicyError,
    ProtocolMismatch,
    RankError,
    RemoteError,
    TaskFileError,
    TransportError,
    TransportTimeout,
    TruncatedFrame,
    WeightsError,
    WireError,
)
from distrl.records import (
    Action,
    ActionType,
    EndReason,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
)

# asyncssh 2.24 reads cryptography's DSA names when distrl's SSH modules import it, after this, and
# cryptography 51 deprecated DSA: every command that imports it (probe, run, deploy, the workers) printed
# nine lines of CryptographyDeprecationWarning that the user can do nothing about (asyncssh's to mend). Hide
# the warnings raised inside asyncssh's wrapper of cryptography, ``asyncssh.crypto``, and nothing else.
_warnings.filterwarnings("ignore", category=UserWarning, module=r"asyncssh\.crypto(\.|$)")

del _os, _sys, _warnings  # used only by the settings above: not part of what ``dir(distrl)`` shows

__version__ = "0.1.0"

# Devices, the simulated phone and the policy pull in Pillow, adbutils and torch: imported on first use
# (PEP 562), so that ``import distrl`` stays light.
_LAZY = {
    "Device": "distrl.device",
    "AdbDevice": "distrl.device",
    "SimDevice": "distrl.sim.device",
    "Phone": "distrl.sim",
    "PhoneConfig": "distrl.sim",
    "Policy": "distrl.policy",
    "PolicyInput": "distrl.policy",
    "collect": "distrl.fleet",
    "train": "distrl.fleet",
    "CollectResult": "distrl.fleet",
    "RunStats": "distrl.fleet",
    "Learner": "distrl.learner.core",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'distrl' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    # the lazy names too, for tab completion and ``help``
    return sorted({*globals(), *_LAZY})


__all__ = [
    "__version__",
    # inventory
    "Inventory",
    "load_inventory",
    "parse_inventory",
    # records
    "Action",
    "ActionType",
    "EndReason",
    "InvalidAction",
    "Observation",
    "Step",
    "Task",
    "Trajectory",
    # devices and the simulated phone
    "Device",
    "AdbDevice",
    "SimDevice",
    "Phone",
    "PhoneConfig",
    # the policy
    "Policy",
    "PolicyInput",
    # running: collection, training, the learner
    "collect",
    "train",
    "CollectResult",
    "RunStats",
    "Learner",
    # errors
    "DistrlError",
    "ConfigError",
    "TaskFileError",
    "TransportError",
    "TransportTimeout",
    "DeviceError",
    "DeviceTimeout",
    "DeviceOffline",
    "DeviceCrashed",
    "BadScreenshot",
    "EmulatorError",
    "WireError",
    "FrameTooLarge",
    "TruncatedFrame",
    "ProtocolMismatch",
    "PolicyError",
    "WeightsError",
    "JudgeError",
    "CheckpointError",
    "LearnerError",
    "RankError",
    "DeployError",
    "RemoteError",
]
