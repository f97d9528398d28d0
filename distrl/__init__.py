"""distrl: asynchronous distributed reinforcement learning for phone-control agents."""

from distrl.config import Inventory, load_inventory, parse_inventory
from distrl.errors import (
    ConfigError,
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
    # errors
    "DistrlError",
    "ConfigError",
    "TransportError",
    "TransportTimeout",
    "DeviceError",
    "DeviceTimeout",
    "DeviceOffline",
    "WireError",
    "FrameTooLarge",
    "TruncatedFrame",
    "ProtocolMismatch",
    "PolicyError",
    "TooManyRestarts",
    "RemoteError",
]
