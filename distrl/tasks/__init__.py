"""Tasks and rewards: where tasks come from, which evaluator scores each, and the sampler that hands
them out.

- Task sources: the sim's suites (``distrl.sim.suites``, one source among others) and users' task files
  (``distrl.tasks.files``: JSONL, or one instruction a line).
- Evaluators (``distrl.tasks.evaluators`` decides which scores each task): ``sim`` (the simulated
  phone's state), ``adb`` (shell checks on any Android, ``distrl.tasks.checks``) and ``judge`` (a VLM
  over an OpenAI-compatible endpoint, ``distrl.tasks.judge``).
- ``TaskSampler``: which task each free device plays next (in turn, or by a curriculum:
  ``distrl.tasks.draw``).
- ``distrl.tasks.registry``: task sources and evaluators by name, as packages register them (entry
  points; the sim registers its suites and its ``sim`` evaluator), for code that may not import them.

This part imports records and errors only: not the sim, not torch.
"""

from typing import Protocol

from distrl.records import Task
from distrl.tasks.checks import passes, run_checks
from distrl.tasks.evaluators import AUTO, resolve_evaluators
from distrl.tasks.files import TaskFiles, load_task_files
from distrl.tasks.sampler import Drawing, TaskSampler

__all__ = [
    "AUTO",
    "Drawing",
    "TaskFiles",
    "TaskSampler",
    "TaskSource",
    "load_task_files",
    "passes",
    "resolve_evaluators",
    "run_checks",
]


class TaskSource(Protocol):
    """Where tasks come from: a sim suite (``distrl.sim.suites.Suite``) or task files (``TaskFiles``)."""

    @property
    def name(self) -> str: ...

    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task (or those of one split), in a stable order."""
        ...
