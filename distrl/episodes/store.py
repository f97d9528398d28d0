"""Episodes on disk: one folder per episode, its steps as JSON lines and its screens as JPEG files.

The format (``FORMAT_VERSION`` 1)::

    <folder>/
      <episode id, '/' as '~'>/
        episode.json     the task (id, suite, goal, split, max steps, setup, apps, evaluator), host, device,
                         end reason, success (true, false or null: unscored), the judge's verdict, start
                         time, duration, the number of steps, the final screen's file (or null) and the
                         temperature the model answered at (null, or absent in older episodes: not said)
                         and its task group ("" outside one, or absent in older episodes)
        steps.jsonl      one object a step: index, goal, output (the model's text), action (the parsed
                         action: type, touch, lift, text; or {"invalid": reason}), logprob, policy_version,
                         reward, duration_s, screen (its file), width, height
        000.jpg ...      the screen each step saw; final.jpg, the screen after the last action

Screens are stored as JPEG (a PNG from ``screencap`` is re-encoded at ``quality``), so an episode of 10
steps of a 1080×2400 phone takes about 1 MB. ``EpisodeWriter`` writes them (all of them, or a share
chosen by the episode id's hash, up to a byte budget); ``read_episodes`` gives them back as
``Trajectory`` records; ``distrl.episodes.export`` turns a folder into a dataset.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any

from PIL import Image

from distrl.records import (
    Action,
    ActionType,
    Document,
    EndReason,
    Fail,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
)

__all__ = ["FORMAT_VERSION", "EpisodeWriter", "episode_folder_name", "read_episode", "read_episodes"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
EPISODE_FILE = "episode.json"
STEPS_FILE = "steps.jsonl"


def episode_folder_name(episode_id: str) -> str:
    """The folder an episode is written to: its id, with ``/`` as ``~`` (ids are ``run/xxxx/0000042``)."""
    return episode_id.replace("/", "~")


class EpisodeWriter:
    """Writes episodes into ``folder``: a ``share`` of them (0 to 1, chosen by a hash of the id, so
    the same episodes on every run), until the folder holds ``budget_bytes`` (0: no limit). Blocking:
    run it in a thread."""

    def __init__(
        self, folder: str | Path, *, share: float = 1.0, budget_bytes: int = 0, quality: int = 85
    ) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be between 0 and 1, not {share}")
        self.folder = Path(folder)
        self.share = share
        self.budget_bytes = budget_bytes
        self.quality = quality
        self.written = 0
        """Episodes written by this writer."""
        self.unscored = 0
        """Of ``written``, those with no score (``success`` null and not cut short)."""
        self.skipped = 0
        """Episodes not written: outside the share, or past the budget."""
        self.bytes = _size(self.folder)
        """Bytes the folder holds (what an earlier run wrote included)."""
        self._full_warned = False

    def wanted(self, episode_id: str) -> bool:
        """Whether ``episode_id`` is in the share."""
        if self.share >= 1.0:
            return True
        draw = int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16) / 2**32
        return draw < self.share

    def write(self, trajectory: Trajectory) -> Path | None:
        """Write one episode; its folder, or None when it is outside the share or past the budget. An
        episode written before is written again (the same id: the same folder)."""
        if not self.wanted(trajectory.id):
            self.skipped += 1
            return None
        if self.budget_bytes and self.bytes >= self.budget_bytes:
            self.skipped += 1
            if not self._full_warned:
                self._full_warned = True
                log.warning(
                    "episodes: %s holds %.0f MB, its budget: no more episodes are written",
                    self.folder,
                    self.bytes / 1e6,
                )
            return None
        target = self.folder / episode_folder_name(trajectory.id)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        steps = []
        for step in trajectory.steps:
            name = f"{step.index:03d}.jpg"
            self._screen(partial / name, step.observation)
            steps.append(_step_to_json(step, trajectory.task.goal, name))
        final = None
        if trajectory.final_observation is not None:
            final = "final.jpg"
            self._screen(partial / final, trajectory.final_observation)
        (partial / STEPS_FILE).write_text("".join(json.dumps(s) + "\n" for s in steps), encoding="utf-8")
        (partial / EPISODE_FILE).write_text(
            json.dumps(_episode_to_json(trajectory, final), indent=1), "utf-8"
        )
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        self.written += 1
        self.unscored += trajectory.success is None and not trajectory.cut_short
        self.bytes += _size(target)
        return target

    def _screen(self, path: Path, observation: Observation) -> None:
        if observation.image_format == "jpeg":
            path.write_bytes(observation.screenshot)
            return
        with Image.open(io.BytesIO(observation.screenshot)) as image:
            image.convert("RGB").save(path, "JPEG", quality=self.quality)


def episode_folders(folder: str | Path) -> list[Path]:
    """The episodes' folders in ``folder``, in the order of their ids (half-written ones skipped)."""
    return [
        path for path in sorted(Path(folder).iterdir()) if path.is_dir() and (path / EPISODE_FILE).is_file()
    ]


def read_raw(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An episode's ``episode.json`` and its ``steps.jsonl`` lines, as JSON, checked: every field the
    format has, of its type; a step count equal to ``episode.json``'s; every screen a file of the
    episode's own folder. ``ValueError`` naming the file (and the line) when it is not an episode."""
    head_file, steps_file = path / EPISODE_FILE, path / STEPS_FILE
    try:
        head = json.loads(head_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{head_file}: {_why(exc)}") from None
    _check_head(head, path, head_file)
    try:
        text = steps_file.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{steps_file}: {_why(exc)}") from None
    lines: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{steps_file}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: is not JSON ({exc})") from None
        _check_step(data, len(lines), path, where)
        lines.append(data)
    if len(lines) != head["steps"]:
        raise ValueError(f"{steps_file}: holds {len(lines)} step(s), but {EPISODE_FILE} says {head['steps']}")
    return head, lines


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    if isinstance(exc, UnicodeDecodeError):
        return "is not UTF-8 text"
    return f"is not JSON ({exc})"


def _reader(file: Path | str) -> Fail:
    """The errors of a document read from ``file``: ``ValueError`` naming the file, then the field."""

    def fail(field: str, problem: str) -> ValueError:
        return ValueError(f"{file}: {field} {problem}" if field else f"{file}: {problem}")

    return fail


def _check_head(head: object, folder: Path, where: Path) -> None:
    data = Document(head, "", fail=_reader(where))
    version = data.take("format") if data.has("format") else None
    if version != FORMAT_VERSION:
        raise ValueError(f"{where}: format {version!r}, not {FORMAT_VERSION}")
    task = data.document("task")
    for key in ("id", "suite", "goal", "split", "evaluator"):
        task.string(key)
    task.integer("max_steps")
    task.strings("setup")
    task.strings("apps")
    for key in ("id", "host", "device"):
        data.string(key)
    end_reason = data.string("end_reason")
    if end_reason not in {reason.value for reason in EndReason}:
        raise data.fail("end_reason", f"{end_reason!r} is no end reason")
    if not data.is_null("success"):
        data.boolean("success")
    if not data.is_null("verdict"):
        data.string("verdict")
    data.number("started_at_s", finite=False)
    data.number("duration_s", finite=False)
    data.integer("steps", minimum=0)
    if data.has("temperature") and not data.is_null("temperature"):
        data.number("temperature")
    if data.has("group"):
        data.string("group")
    if data.is_null("final_screen"):
        if not data.is_null("final_size"):
            data.array("final_size")
        return
    _check_screen(data.string("final_screen"), folder, f"{where}: final_screen")
    if not _pair(data.take("final_size"), int):
        raise data.fail("final_size", "must be [width, height]")


def _check_step(step: object, index: int, folder: Path, where: str) -> None:
    data = Document(step, "", fail=_reader(where))
    place = data.integer("index")
    if place != index:
        raise data.fail("index", f"is {place}, not {index} (the step's place)")
    for key in ("goal", "output"):
        data.string(key)
    for key in ("logprob", "reward", "duration_s"):
        data.number(key, finite=False)
    data.integer("policy_version")
    data.integer("width")
    data.integer("height")
    _check_screen(data.string("screen"), folder, f"{where}: screen")
    action = data.document("action")
    if action.has("invalid"):
        action.string("invalid")
        return
    kind = action.take("type") if action.has("type") else None
    if kind not in ActionType.__members__:
        raise action.fail(action.at("type"), f"{kind!r} is no action type")
    for key in ("touch", "lift"):
        if action.has(key) and not action.is_null(key) and not _pair(action.take(key), int | float):
            raise action.fail(action.at(key), "must be null or [x, y]")
    if action.has("text") and not action.is_null("text"):
        action.string("text")


def _pair(value: object, kind: type | UnionType) -> bool:
    """Whether ``value`` is an array of two numbers of ``kind`` (booleans are none)."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
    )


def _check_screen(name: str, folder: Path, where: str) -> None:
    """A screen is a file of the episode's own folder, named plainly (no path, no '..', no link out)."""
    plain = name and "/" not in name and "\\" not in name and name not in (".", "..") and "\0" not in name
    if not plain or (folder / name).resolve().parent != folder.resolve():
        raise ValueError(f"{where}: {name!r} is not a file of the episode's folder")
    if not (folder / name).is_file():
        raise ValueError(f"{where}: the screen {name} is missing")


def raw_episodes(
    folder: str | Path, *, strict: bool = False
) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """``(folder name, episode.json, step lines)`` for each episode in ``folder`` (for the viewer and the
    export, which read the format as it is). A malformed episode is skipped with a warning naming its
    file, or (``strict``) is a ``ValueError``; ``ValueError`` too when the folder holds no good one."""
    found = []
    skipped = 0
    for path in episode_folders(folder) if Path(folder).is_dir() else []:
        try:
            found.append((path.name, *read_raw(path)))
        except ValueError as exc:
            if strict:
                raise
            skipped += 1
            log.warning("skipping the episode in %s: %s", path, exc)
    if not found:
        bad = f" ({skipped} malformed, skipped)" if skipped else ""
        raise ValueError(f"{folder} holds no episodes (folders with {EPISODE_FILE}){bad}")
    return found


def read_episodes(folder: str | Path) -> Iterator[Trajectory]:
    """Every episode of ``folder``, in the order of their ids (half-written ones skipped); ``ValueError``
    naming the file of the first malformed one."""
    for path in episode_folders(folder):
        yield read_episode(path)


def read_episode(path: str | Path) -> Trajectory:
    """The episode in ``path``; ValueError naming the file when it is not one."""
    path = Path(path)
    head, lines = read_raw(path)
    try:
        steps = tuple(_step_from_json(line, path) for line in lines)
        final = head["final_screen"]
        task = head["task"]
        return Trajectory(
            id=head["id"],
            task=Task(
                id=task["id"],
                suite=task["suite"],
                goal=task["goal"],
                split=task["split"],
                max_steps=task["max_steps"],
                setup=tuple(task["setup"]),
                apps=tuple(task["apps"]),
                evaluator=task["evaluator"],
            ),
            host=head["host"],
            device=head["device"],
            steps=steps,
            final_observation=None if final is None else _observation(path / final, *head["final_size"]),
            end_reason=EndReason(head["end_reason"]),
            success=head["success"],
            verdict=head["verdict"],
            started_at_s=head["started_at_s"],
            duration_s=head["duration_s"],
            temperature=head.get("temperature"),
            group=head.get("group", ""),
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"{path} is not an episode of this format: {exc}") from exc


def _episode_to_json(trajectory: Trajectory, final: str | None) -> dict[str, Any]:
    task = trajectory.task
    return {
        "format": FORMAT_VERSION,
        "id": trajectory.id,
        "task": {
            "id": task.id,
            "suite": task.suite,
            "goal": task.goal,
            "split": task.split,
            "max_steps": task.max_steps,
            "setup": list(task.setup),
            "apps": list(task.apps),
            "evaluator": task.evaluator,
        },
        "host": trajectory.host,
        "device": trajectory.device,
        "end_reason": trajectory.end_reason.value,
        "success": trajectory.success,
        "verdict": trajectory.verdict,
        "started_at_s": trajectory.started_at_s,
        "duration_s": trajectory.duration_s,
        "temperature": trajectory.temperature,
        "group": trajectory.group,
        "steps": len(trajectory.steps),
        "final_screen": final,
        "final_size": None
        if trajectory.final_observation is None
        else [trajectory.final_observation.width, trajectory.final_observation.height],
    }


def _step_to_json(step: Step, goal: str, screen: str) -> dict[str, Any]:
    action = step.action
    parsed: dict[str, Any]
    if isinstance(action, InvalidAction):
        parsed = {"invalid": action.reason}
    else:
        parsed = {"type": action.type.name, "touch": action.touch, "lift": action.lift, "text": action.text}
    return {
        "index": step.index,
        "goal": goal,
        "output": step.output,
        "action": parsed,
        "logprob": step.behaviour_logprob,
        "policy_version": step.policy_version,
        "reward": step.reward,
        "duration_s": step.duration_s,
        "screen": screen,
        "width": step.observation.width,
        "height": step.observation.height,
    }


def _step_from_json(data: dict[str, Any], folder: Path) -> Step:
    parsed = data["action"]
    action: Action | InvalidAction
    if "invalid" in parsed:
        action = InvalidAction(text=data["output"], reason=parsed["invalid"])
    else:
        touch, lift = parsed["touch"], parsed["lift"]
        action = Action(
            type=ActionType[parsed["type"]],
            touch=None if touch is None else (touch[0], touch[1]),
            lift=None if lift is None else (lift[0], lift[1]),
            text=parsed["text"],
        )
    return Step(
        index=data["index"],
        observation=_observation(folder / data["screen"], data["width"], data["height"]),
        output=data["output"],
        action=action,
        policy_version=data["policy_version"],
        behaviour_logprob=data["logprob"],
        reward=data["reward"],
        duration_s=data["duration_s"],
    )


def _observation(path: Path, width: int, height: int) -> Observation:
    return Observation(screenshot=path.read_bytes(), width=width, height=height, image_format="jpeg")


def _size(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
