"""Episode folders of format 1, read still: converted on read into format 2's document (the trajectory's
JSON form of ``distrl.records.forms`` and its screens' files), which ``distrl.episodes.store`` then reads
as it reads its own. Nothing is written back: the folder stays as it was.

Format 1 (written before the episodes took the records' JSON form)::

    episode.json   format (1), id, task (id, suite, goal, split, max_steps, setup, apps, evaluator),
                   host, device, end_reason, success (or null), verdict (or null), started_at_s,
                   duration_s, temperature (null, or absent), group (or absent), steps (their number),
                   final_screen (a file of the folder, or null), final_size ([width, height], or null)
    steps.jsonl    a step a line: index, goal, output, action ({"type": its name, "touch", "lift",
                   "text"}, or {"invalid": why}), logprob, policy_version, reward, duration_s, screen
                   (a file of the folder), width, height

What format 1 did not keep reads as the records' defaults: a task's params and checks (none), each
screen's capture time (0). Every screen is a JPEG, as format 1 wrote them.
"""

from __future__ import annotations

import json
from pathlib import Path

from distrl.records import ActionType, Document, Fail

__all__ = ["STEPS_FILE", "file_errors", "read_format_1", "why_unreadable"]

STEPS_FILE = "steps.jsonl"
"""Format 1's steps, one a line (format 2 keeps them in the trajectory's form, in episode.json)."""


def file_errors(file: Path | str) -> Fail:
    """The errors of a document read from ``file``: ``ValueError`` naming the file, then the field."""

    def fail(field: str, problem: str) -> ValueError:
        return ValueError(f"{file}: {field} {problem}" if field else f"{file}: {problem}")

    return fail


def why_unreadable(exc: Exception) -> str:
    """Why a file could not be read as JSON text, in words."""
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    if isinstance(exc, UnicodeDecodeError):
        return "is not UTF-8 text"
    if isinstance(exc, UnicodeEncodeError):
        return "holds a lone surrogate (\\ud800 to \\udfff unpaired): JSON, but no text"
    if isinstance(exc, RecursionError):
        return "is not an episode's JSON (nested too deeply)"
    return f"is not JSON ({exc})"


def read_format_1(folder: Path, head: Document) -> tuple[dict[str, object], list[str]]:
    """The format 1 episode in ``folder`` (``head``: its episode.json, being read) as format 2 has it: the
    trajectory's JSON form and the screens' files, attachment k the file ``screens[k]``. ``ValueError``
    naming the file (and the line) and the field when it is not one."""
    head.take("format")
    task = head.document("task")
    task_form = {
        "id": task.string("id"),
        "suite": task.string("suite"),
        "goal": task.string("goal"),
        "split": task.string("split"),
        "max_steps": task.integer("max_steps", minimum=0),
        "params": {},
        "setup": list(task.strings("setup")),
        "apps": list(task.strings("apps")),
        "evaluator": task.string("evaluator"),
        "checks": [],
    }
    task.close()
    screens: list[str] = []
    steps = [_step(line, place, screens) for place, line in enumerate(_lines(folder / STEPS_FILE))]
    count = head.integer("steps", minimum=0)
    if len(steps) != count:
        raise ValueError(f"{folder / STEPS_FILE}: holds {len(steps)} step(s), but episode.json says {count}")
    final = None
    if not head.is_null("final_screen"):
        screens.append(head.string("final_screen"))
        size = head.take("final_size")
        if not _pair(size, int):
            raise head.fail("final_size", "must be [width, height]")
        assert isinstance(size, list)
        final = _observation(len(screens) - 1, size[0], size[1])
    elif not head.is_null("final_size"):
        head.take("final_size")
    trajectory: dict[str, object] = {
        "id": head.string("id"),
        "task": task_form,
        "host": head.string("host"),
        "device": head.string("device"),
        "steps": steps,
        "final_observation": final,
        "end_reason": head.string("end_reason"),
        "success": None if head.is_null("success") else head.boolean("success"),
        "verdict": "" if head.is_null("verdict") else head.string("verdict"),
        "started_at_s": head.number("started_at_s"),
        "duration_s": head.number("duration_s"),
        "temperature": None
        if not head.has("temperature") or head.is_null("temperature")
        else head.number("temperature"),
        "group": head.string("group") if head.has("group") else "",
    }
    return trajectory, screens


def _lines(steps_file: Path) -> list[Document]:
    try:
        text = steps_file.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{steps_file}: {why_unreadable(exc)}") from None
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{steps_file}:{number}"
        try:
            data = json.loads(line)
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{where}: {why_unreadable(exc)}") from None
        lines.append(Document(data, "", fail=file_errors(where)))
    return lines


def _step(line: Document, place: int, screens: list[str]) -> dict[str, object]:
    index = line.integer("index")
    if index != place:
        raise line.fail("index", f"is {index}, not {place} (the step's place)")
    line.string("goal")  # the task's goal, on every line
    output = line.string("output")
    screens.append(line.string("screen"))
    step = {
        "index": index,
        "observation": _observation(len(screens) - 1, line.integer("width"), line.integer("height")),
        "output": output,
        "action": _action(line.document("action"), output),
        "policy_version": line.integer("policy_version"),
        "behaviour_logprob": line.number("logprob"),
        "reward": line.number("reward"),
        "duration_s": line.number("duration_s"),
    }
    line.close()
    return step


def _observation(screen: int, width: object, height: object) -> dict[str, object]:
    return {
        "screenshot": screen,
        "width": width,
        "height": height,
        "image_format": "jpeg",
        "timestamp_s": 0.0,
    }


def _action(action: Document, output: str) -> dict[str, object]:
    if action.has("invalid"):
        reason = action.string("invalid")
        action.close()
        return {"kind": "invalid", "text": output, "reason": reason}
    kind = action.take("type") if action.has("type") else None
    if not isinstance(kind, str) or kind not in ActionType.__members__:
        raise action.fail(action.at("type"), f"{kind!r} is no action type")
    points = {}
    for key in ("touch", "lift"):
        point = None if not action.has(key) or action.is_null(key) else action.take(key)
        if point is not None and not _pair(point, int | float):
            raise action.fail(action.at(key), "must be null or [y, x]")
        points[key] = point
    text = "" if not action.has("text") or action.is_null("text") else action.string("text")
    action.close()
    return {"kind": "action", "type": ActionType[kind].value, **points, "text": text}


def _pair(value: object, kind: type | object) -> bool:
    """Whether ``value`` is an array of two numbers of ``kind`` (booleans are none)."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)  # type: ignore[arg-type]
    )
