"""Users' task files: JSONL (one task a line) or plain text (one instruction a line, as DigiRL's AitW
task files are).

JSONL keys: ``goal`` (required), ``id``, ``split`` (default ``train``), ``max_steps``, ``setup`` (adb shell
commands run after the reset), ``apps`` (packages force-stopped and cleared when a phone without a
console is reset), ``check`` (the ``adb`` evaluator's checks: ``[{"command": ..., "equals": ...}]``, see
``distrl.tasks.checks``) and ``evaluator`` (``adb`` or ``judge``). Blank lines and lines starting with
``#`` are skipped in both formats. Every mistake is a ``TaskFileError`` naming the file and the line.

A file's tasks have its name without the extension as their ``suite``, and as the start of their ids
(``my-tasks/7`` for line 7) unless the line gives one. An id is a plain name: parts of letters, digits,
'.', '_', '-' between single '/', none of them '.' or '..' (ids name files of episodes and caches).

A task travels to the workers in a frame's header, whose size the wire limits (``distrl.wire``,
``MAX_HEADER_BYTES``, 1 MiB): a task's texts (its goal, each setup command, each check) are limited to
``MAX_TEXT_BYTES`` and the whole task to ``MAX_TASK_BYTES``, so that a task the reader takes always fits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from distrl.errors import TaskFileError
from distrl.records import EVALUATORS, Task
from distrl.tasks.checks import check_from_json

__all__ = [
    "MAX_STEPS_LIMIT",
    "MAX_TASK_BYTES",
    "MAX_TEXT_BYTES",
    "TASK_FILE_SUFFIXES",
    "TaskFiles",
    "load_task_files",
    "read_task_file",
]

TASK_FILE_SUFFIXES = (".jsonl", ".txt")
MAX_STEPS_LIMIT = 1000
"""Most steps a task may ask for."""
MAX_TEXT_BYTES = 16 * 1024
"""Longest goal, setup command or check of a task, in UTF-8 bytes."""
MAX_TASK_BYTES = 64 * 1024
"""Longest task, in UTF-8 bytes of its JSON: far within the wire's 1 MiB header, with room for the episode's
other fields (a test holds the two together)."""
_KEYS = ("goal", "id", "split", "max_steps", "setup", "apps", "check", "evaluator")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_PLAIN_ID = re.compile(r"(?!.{129})[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*", re.DOTALL)
_PACKAGE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")


class TaskFiles:
    """Users' task files as a task source (``distrl.tasks.TaskSource``), read on each ``tasks`` call."""

    name = "task files"

    def __init__(self, paths: Sequence[str | Path], *, max_steps: int) -> None:
        self.paths = tuple(paths)
        self.max_steps = max_steps

    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task of the files (or of one split), in file order."""
        every = load_task_files(self.paths, max_steps=self.max_steps)
        return [task for task in every if split is None or task.split == split]


def load_task_files(paths: Sequence[str | Path], *, max_steps: int) -> list[Task]:
    """Every task of ``paths``, in file order; ids must be unique across them. ``max_steps`` is the step
    limit of tasks that do not give their own."""
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for path in paths:
        for line, task in read_task_file(path, max_steps=max_steps):
            if task.id in seen:
                raise TaskFileError.at(
                    str(path), line, f"task id {task.id!r} is used before, at {seen[task.id]}"
                )
            seen[task.id] = f"{path}:{line}"
            tasks.append(task)
    return tasks


def read_task_file(path: str | Path, *, max_steps: int) -> Iterator[tuple[int, Task]]:
    """``(line number, task)`` for each task of one file."""
    file = str(path)
    suffix = Path(path).suffix.lower()
    if suffix not in TASK_FILE_SUFFIXES:
        raise TaskFileError.at(
            file, 0, f"a task file is .jsonl or .txt, not {suffix or 'without an extension'!r}"
        )
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise TaskFileError.at(file, 0, "file not found") from None
    except OSError as exc:
        raise TaskFileError.at(file, 0, f"cannot read the file ({exc.strerror or exc})") from None
    suite = Path(path).stem
    if not _NAME.fullmatch(suite):
        raise TaskFileError.at(file, 0, "its name (the tasks' suite) must be letters, digits, '.', '_', '-'")
    count = 0
    for number, text in _lines(file, data):
        if suffix == ".txt":
            if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
                raise TaskFileError.at(
                    file, number, f"the goal is over the {MAX_TEXT_BYTES} bytes a task's text may take"
                )
            task = Task(id=f"{suite}/{number}", suite=suite, goal=text, max_steps=max_steps)
        else:
            task = _json_task(file, number, text, suite, max_steps)
        count += 1
        yield number, task
    if not count:
        raise TaskFileError.at(file, 0, "has no tasks")


def _lines(file: str, data: bytes) -> Iterable[tuple[int, str]]:
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
        except UnicodeDecodeError:
            raise TaskFileError.at(file, number, "is not UTF-8 text") from None
        if text and not text.startswith("#"):
            yield number, text


def _json_task(file: str, line: int, text: str, suite: str, max_steps: int) -> Task:
    try:
        entry = json.loads(text)
    except ValueError as exc:
        raise TaskFileError.at(file, line, f"is not JSON ({exc})") from None
    if not isinstance(entry, dict):
        raise TaskFileError.at(file, line, 'must be a JSON object such as {"goal": "Turn on airplane mode"}')
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise TaskFileError.at(file, line, f"unknown key(s) {unknown}: a task has {', '.join(_KEYS)}")

    def fail(problem: str) -> TaskFileError:
        return TaskFileError.at(file, line, problem)

    goal = entry.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise fail("goal must be a non-empty string")
    task_id = entry.get("id", f"{suite}/{line}")
    if not isinstance(task_id, str) or not _PLAIN_ID.fullmatch(task_id):
        raise fail(
            "id must be a plain name: parts of letters, digits, '.', '_', '-' (each starting with a letter"
            f" or digit) between single '/', at most 128 characters; not {_shown(task_id)}"
        )
    split = entry.get("split", "train")
    if not isinstance(split, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", split):
        raise fail("split must be a name such as train or test")
    steps = entry.get("max_steps", max_steps)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS_LIMIT:
        raise fail(f"max_steps must be an integer from 1 to {MAX_STEPS_LIMIT}")
    setup = _strings(entry.get("setup", []), "setup", fail)
    raw_checks = entry.get("check", [])
    if isinstance(raw_checks, dict):
        raw_checks = [raw_checks]
    if not isinstance(raw_checks, list):
        raise fail("check must be a check object or a list of them")
    shown = [json.dumps(check, ensure_ascii=False) for check in raw_checks]
    for key, texts in (("goal", [goal]), ("setup", setup), ("check", shown)):
        for index, value in enumerate(texts):
            where = key if key == "goal" else f"{key}[{index}]"
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError:
                raise fail(f"{where} holds a lone surrogate (a \\ud800-style escape): not text") from None
            if size > MAX_TEXT_BYTES:
                raise fail(f"{where} is {size} bytes long, over the {MAX_TEXT_BYTES} a task's text may take")
    size = len(json.dumps(entry, ensure_ascii=False).encode("utf-8"))
    if size > MAX_TASK_BYTES:
        raise fail(f"the task is {size} bytes long, over the {MAX_TASK_BYTES} a task may take on the wire")
    apps = _strings(entry.get("apps", []), "apps", fail)
    bad = [app for app in apps if not _PACKAGE.fullmatch(app)]
    if bad:
        raise fail(f"apps must be Android package names (com.example.app), not {bad[0]!r}")
    try:
        checks = tuple(check_from_json(c, f"check[{i}]") for i, c in enumerate(raw_checks))
    except ValueError as exc:
        raise fail(str(exc)) from None
    evaluator = entry.get("evaluator", "")
    if evaluator not in ("", *EVALUATORS):
        raise fail(f"evaluator must be one of adb, judge, not {evaluator!r}")
    if evaluator == "sim":
        raise fail("evaluator sim scores the sim's own suites only; use adb checks or the judge")
    if evaluator == "adb" and not checks:
        raise fail('evaluator adb needs a check, such as [{"command": "...", "equals": "..."}]')
    return Task(
        id=task_id,
        suite=suite,
        goal=goal.strip(),
        split=split,
        max_steps=steps,
        setup=setup,
        apps=apps,
        evaluator=evaluator or ("adb" if checks else ""),
        checks=checks,
    )


def _strings(value: Any, key: str, fail: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise fail(f"{key} must be a list of non-empty strings")
    return tuple(value)


def _shown(value: object) -> str:
    """``value`` as an error may quote it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
