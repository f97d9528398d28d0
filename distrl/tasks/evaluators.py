"""Which evaluator scores each task, decided before a run starts; a run that cannot score refuses to start.

- ``sim``: the simulated phone's state (``dumpsys distrl``). Only the sim's own tasks have sim checks,
  and only simulated phones report that state: the in-process ones, and ``python -m distrl sim`` over adb.
- ``adb``: the task's shell checks (``distrl.tasks.checks``), on any Android device.
- ``judge``: the VLM judge (``distrl.tasks.judge``), on the learner, from the final screens.

``[tasks] evaluator`` chooses for the tasks that do not choose themselves. ``auto`` (the default) gives
each sim task ``sim`` where every device is an in-process simulated phone, else the judge where one is
configured; a file task's checks make it ``adb``; a bare goal goes to the judge. Never silent zero
rewards: a task no evaluator can score stops the run before it starts, with one line that says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from distrl.errors import ConfigError
from distrl.records import Task

__all__ = ["AUTO", "resolve_evaluators"]

AUTO = "auto"


def resolve_evaluators(
    tasks: Sequence[Task],
    *,
    default: str,
    sim_phones_only: bool,
    judge: bool,
    source: str | None = None,
) -> list[Task]:
    """``tasks``, each with the evaluator that will score it (``Task.evaluator`` set).

    ``default`` is ``[tasks] evaluator``; ``sim_phones_only`` says whether every device of the fleet is an
    in-process simulated phone; ``judge`` whether ``[judge]`` is configured. Raises ``ConfigError``
    (``tasks.evaluator``) when some task cannot be scored."""
    chosen = [(task, _choose(task, default, sim_phones_only, judge)) for task in tasks]
    problems = [
        (task, problem)
        for task, evaluator in chosen
        if (problem := _problem(task, evaluator, default, sim_phones_only, judge))
    ]
    if problems:
        task, problem = problems[0]
        more = f" ({len(problems) - 1} more task(s) likewise)" if len(problems) > 1 else ""
        raise ConfigError.at("tasks.evaluator", f"cannot score task {task.id!r}: {problem}{more}", source)
    return [
        task if task.evaluator == evaluator else dataclasses.replace(task, evaluator=evaluator)
        for task, evaluator in chosen
    ]


def _choose(task: Task, default: str, sim_phones_only: bool, judge: bool) -> str:
    own = task.evaluator
    if own in ("adb", "judge"):  # a task file chose
        return own
    if default != AUTO:
        return default
    if own == "sim":
        if sim_phones_only or not judge:
            return "sim"
        return "judge"
    return "adb" if task.checks else "judge"


def _problem(task: Task, evaluator: str, default: str, sim_phones_only: bool, judge: bool) -> str:
    if evaluator == "judge" and not judge:
        return "it needs the judge, and the inventory has no [judge] (base_url and model)"
    if evaluator == "adb" and not task.checks:
        return "evaluator adb needs the task's checks, and it has none (a task file's \"check\")"
    if evaluator == "sim":
        if task.evaluator != "sim":
            return "evaluator sim scores the sim's own suites only; give it adb checks or use the judge"
        if not sim_phones_only and default == AUTO:
            return (
                "the sim's tasks are scored from the simulated phone's state, which real devices do not"
                ' report: configure [judge], or set [tasks] evaluator = "sim" if the adb devices are'
                " `python -m distrl sim`"
            )
    return ""
