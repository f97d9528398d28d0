"""The vocabulary every part of distrl speaks (``vocabulary.py``: tasks, observations, actions, steps,
trajectories, stats), and the one typed reader of the JSON documents distrl reads (``documents.py``: wire
headers, episodes, task files, weights headers)."""

from distrl.records.documents import Document, DocumentError, Fail
from distrl.records.vocabulary import (
    CHECK_OPS,
    EVALUATORS,
    Action,
    ActionType,
    Check,
    CollectionStats,
    EndReason,
    InvalidAction,
    Observation,
    ParamValue,
    Point,
    PolicyVersion,
    Step,
    Task,
    Trajectory,
)

__all__ = [
    "CHECK_OPS",
    "EVALUATORS",
    "Action",
    "ActionType",
    "Check",
    "CollectionStats",
    "Document",
    "DocumentError",
    "EndReason",
    "Fail",
    "InvalidAction",
    "Observation",
    "ParamValue",
    "Point",
    "PolicyVersion",
    "Step",
    "Task",
    "Trajectory",
]
