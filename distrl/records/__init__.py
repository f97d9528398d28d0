"""The vocabulary every part of distrl speaks (``vocabulary.py``: tasks, observations, actions, steps,
trajectories, stats), the one typed reader of the JSON documents distrl reads (``documents.py``: wire
headers, episodes, task files, the replay buffer's and the weights' headers), the records' JSON form
with screens as binary attachments (``forms.py``: the wire's messages, the replay buffer's file, the
learner's ranks, the episodes on disk), and the one reader of a safetensors header
(``safetensors_header.py``: the weights' blobs, the learner's checkpoint files)."""

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
