"""distrl: asynchronous distributed reinforcement learning for phone-control agents."""

from distrl.config import Inventory, load_inventory, parse_inventory
from distrl.errors import (
    BadScreenshot,
    ConfigError,
    DeviceCrashed,
    DeviceError,
    DeviceOffline,
    DeviceTimeout,
    DistrlError,
    FrameTooLarge,
    PolicyError,
    ProtocolMismatch,
    RemoteError,
    TooManyRestarts,
    TransportError,
    TransportTimeout,
    TruncatedFrame,
    WeightsError,
    WireError,
)
from distrl.records import (
    Action,
    ActionType,
    CollectionStats,
    EndReason,
    InvalidAction,
    Observation,
    PolicyVersion,
    Step,
    Task,
    Trajectory,
)

__version__ = "0.1.0"

# Devices and the simulated phone pull in Pillow and adbutils: imported on first use (PEP 562).
_LAZY = {
    "Device": "distrl.device",
    "AdbDevice": "distrl.device",
    "SimDevice": "distrl.device",
    "Phone": "distrl.sim",
    "PhoneConfig": "distrl.sim",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'distrl' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "__version__",
    # inventory
    "Inventory",
    "load_inventory",
    "parse_inventory",
    # records
    "Action",
    "ActionType",
    "CollectionStats",
    "EndReason",
    "InvalidAction",
    "Observation",
    "PolicyVersion",
    "Step",
    "Task",
    "Trajectory",
    # devices and the simulated phone
    "Device",
    "AdbDevice",
    "SimDevice",
    "Phone",
    "PhoneConfig",
    # errors
    "DistrlError",
    "ConfigError",
    "TransportError",
    "TransportTimeout",
    "DeviceError",
    "DeviceTimeout",
    "DeviceOffline",
    "DeviceCrashed",
    "BadScreenshot",
    "WireError",
    "FrameTooLarge",
    "TruncatedFrame",
    "ProtocolMismatch",
    "PolicyError",
    "WeightsError",
    "TooManyRestarts",
    "RemoteError",
]
