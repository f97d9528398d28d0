"""Task sources and evaluators by name, as packages register them.

A package registers its task sources and evaluators as entry points (``pyproject.toml``), so that code
which may not import it finds them by name; the sim registers its suites (``general``,
``web_shopping``) and its ``sim`` evaluator this way, and anyone's package can add more::

    [project.entry-points."distrl.task_sources"]
    general = "distrl.sim.suites.general:GENERAL"      # an object with ``name`` and ``tasks(split)``

    [project.entry-points."distrl.evaluators"]
    sim = "distrl.sim.suites:score"                    # async (task, device) -> bool | None

``task_source`` also takes paths of task files (``TaskFiles``), and ``evaluator`` knows ``adb`` (the
task's shell checks, ``distrl.tasks.checks``) by itself.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

from distrl.records import Task
from distrl.tasks.checks import run_checks
from distrl.tasks.files import TaskFiles

__all__ = [
    "EVALUATORS",
    "TASK_SOURCES",
    "Evaluator",
    "evaluator",
    "evaluator_names",
    "source_names",
    "task_source",
]

TASK_SOURCES = "distrl.task_sources"
"""The entry-point group of task sources."""
EVALUATORS = "distrl.evaluators"
"""The entry-point group of evaluators."""

Evaluator = Callable[[Task, Any], Awaitable[bool | None]]
"""Scores a task on a device (``distrl.device.Device``) as its episode left it: True or False, or None
where this device cannot tell."""


def source_names() -> list[str]:
    """The names of the registered task sources, sorted."""
    return sorted(_entry_points(TASK_SOURCES))


def evaluator_names() -> list[str]:
    """The names of the evaluators a device can score with (``adb`` and the registered), sorted."""
    return sorted({"adb", *_entry_points(EVALUATORS)})


def task_source(name: str | Sequence[str | Path], *, max_steps: int = 10) -> Any:
    """The task source (``distrl.tasks.TaskSource``) registered as ``name``, or the task files at
    ``name`` (a path, or several) with ``max_steps`` for tasks that give no limit. ValueError naming
    the registered sources when there is neither."""
    if not isinstance(name, str):
        return TaskFiles(list(name), max_steps=max_steps)
    points = _entry_points(TASK_SOURCES)
    if name in points:
        return points[name].load()
    if Path(name).is_file():
        return TaskFiles([name], max_steps=max_steps)
    known = ", ".join(sorted(points)) or "none: is distrl installed (pip install -e .)?"
    raise ValueError(f"no task source {name!r} and no task file there (registered sources: {known})")


def evaluator(name: str) -> Evaluator:
    """The evaluator called ``name``: ``adb``, or one registered; ValueError naming them otherwise."""
    if name == "adb":
        return _adb
    points = _entry_points(EVALUATORS)
    if name in points:
        return cast(Evaluator, points[name].load())
    known = ", ".join(sorted({"adb", *points}))
    raise ValueError(f"no evaluator {name!r} (known: {known}; the judge scores on the learner)")


async def _adb(task: Task, device: Any) -> bool:
    """The ``adb`` evaluator: every one of the task's checks passes on the device."""
    return await run_checks(task.checks, device.shell)


@functools.cache
def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=group)}
