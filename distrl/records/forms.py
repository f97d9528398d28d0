"""The JSON form of the records (Task, Observation, Action, Step, Trajectory), with screens as binary
attachments, and a trajectory as one blob of bytes: that JSON and its attachments.

One conversion, used wherever a record leaves memory, so that every side agrees: the wire
(``distrl.wire.codec`` puts records in its messages' headers, their screens in the frame's attachments),
the learner (``pack_trajectory``: the replay buffer's checkpoints, the batches rank 0 sends the other
ranks) and the episodes on disk (``distrl.episodes.store``: the trajectory's form in ``episode.json``,
its screens in files of the episode's folder).

``*_to_json`` checks each value as it writes it (its type, a finite float, an integer within 64 bits),
and a screen goes to the ``Outbox`` in exchange for its index there. ``*_from_json`` reads with the
typed reader (``distrl.records.documents``), refuses unknown fields, and takes each screen by its index
from the ``Inbox`` (or any other ``Attachments``: the episode store's files), each exactly once. Every
problem is one ``DocumentError`` (a ``ValueError``) naming the field's path, ``where`` being the
record's own (``header.trajectory.steps[1].reward is nan: a non-finite number, which JSON cannot
hold``); a reader that raises its own errors translates it at its boundary (the wire: ``WireError``,
same message; the episodes: ``ValueError`` naming the file).

A blob (``pack_trajectory``), integers big-endian::

    JSON length u32 | JSON {"trajectory": {...}, "att": [attachment lengths]} | the attachments, in order
"""

from __future__ import annotations

import struct
from typing import TypeVar

import orjson

from distrl.records.documents import (
    Document,
    DocumentError,
    boolean,
    integer,
    kind_of,
    number,
    scalar,
    scalars,
    string,
)
from distrl.records.vocabulary import (
    CHECK_OPS,
    Action,
    ActionType,
    Check,
    EndReason,
    InvalidAction,
    Observation,
    ParamValue,
    Step,
    Task,
    Trajectory,
)

__all__ = [
    "Attachments",
    "Inbox",
    "Outbox",
    "action_from_json",
    "action_to_json",
    "instance",
    "observation_from_json",
    "observation_to_json",
    "pack_trajectory",
    "scalars_from_json",
    "step_from_json",
    "step_to_json",
    "task_from_json",
    "task_to_json",
    "trajectory_from_json",
    "trajectory_to_json",
    "unpack_trajectory",
]

T = TypeVar("T")

_JSON_LENGTH = struct.Struct(">I")


def instance(value: object, cls: type[T], where: str) -> T:
    """``value``, which must be a ``cls`` (a record's field before it is written)."""
    if not isinstance(value, cls):
        raise DocumentError(where, f"must be {cls.__name__}, not {type(value).__name__}")
    return value


class Outbox:
    """The attachments of a document being written, in order."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []

    def add(self, data: object, where: str) -> int:
        """Attach ``data`` (the field at ``where``); its index, which the document holds instead."""
        self.blobs.append(instance(data, bytes, where))
        return len(self.blobs) - 1


class Attachments:
    """The attachments of a document being read, ``count`` of them, each to be taken exactly once by the
    index a field holds; ``holder`` names what holds them, for errors (``the frame``). Where their bytes
    come from is ``fetch``'s: ``Inbox`` (bytes after the JSON: the wire's frames, packed trajectories) or
    the episode store's files."""

    def __init__(self, count: int, holder: str) -> None:
        self._holder = holder
        self._taken = [False] * count

    def take(self, value: object, where: str) -> bytes:
        """The attachment whose index is ``value`` (the field at ``where``)."""
        index = integer(value, where, minimum=0)
        if index >= len(self._taken):
            raise DocumentError(
                where, f"refers to attachment {index}, but {self._holder} has {len(self._taken)}"
            )
        if self._taken[index]:
            raise DocumentError(where, f"refers to attachment {index}, which another field already uses")
        self._taken[index] = True
        return self.fetch(index, where)

    def fetch(self, index: int, where: str) -> bytes:
        """The bytes of attachment ``index`` (taken by the field at ``where``): a subclass's to say."""
        raise NotImplementedError

    def close(self, where: str) -> None:
        """Refuse the attachments no field took; ``where`` is the path of the list of them."""
        unused = [index for index, taken in enumerate(self._taken) if not taken]
        if unused:
            raise DocumentError(where, f"declares attachment(s) {unused} that no field uses")


class Inbox(Attachments):
    """The attachments of a document being read, ``lengths`` bytes each from ``data``."""

    def __init__(self, data: bytes | memoryview, lengths: list[int], holder: str) -> None:
        super().__init__(len(lengths), holder)
        self._data = data
        self._spans: list[tuple[int, int]] = []
        start = 0
        for length in lengths:
            self._spans.append((start, start + length))
            start += length

    def fetch(self, index: int, where: str) -> bytes:
        start, end = self._spans[index]
        return bytes(self._data[start:end])


# -- tasks ------------------------------------------------------------------------------------------


def task_to_json(value: object, where: str) -> dict[str, object]:
    task = instance(value, Task, where)
    return {
        "id": string(task.id, f"{where}.id"),
        "suite": string(task.suite, f"{where}.suite"),
        "goal": string(task.goal, f"{where}.goal"),
        "split": string(task.split, f"{where}.split"),
        "max_steps": integer(task.max_steps, f"{where}.max_steps", minimum=0),
        "params": scalars(task.params, f"{where}.params"),
        "setup": _strings(task.setup, f"{where}.setup"),
        "apps": _strings(task.apps, f"{where}.apps"),
        "evaluator": string(task.evaluator, f"{where}.evaluator"),
        "checks": [
            {
                "command": string(check.command, f"{where}.checks[{i}].command"),
                "op": string(check.op, f"{where}.checks[{i}].op"),
                "value": string(check.value, f"{where}.checks[{i}].value"),
            }
            for i, check in enumerate(instance(task.checks, tuple, f"{where}.checks"))
        ],
    }


def _strings(values: object, where: str) -> list[str]:
    return [string(value, f"{where}[{i}]") for i, value in enumerate(instance(values, tuple, where))]


def _check_from_json(value: object, where: str) -> Check:
    obj = Document(value, where)
    check = Check(command=obj.string("command"), op=obj.string("op"), value=obj.string("value"))
    if check.op not in CHECK_OPS:
        raise DocumentError(obj.at("op"), f"is {check.op!r}, not one of {', '.join(CHECK_OPS)}")
    obj.close()
    return check


def task_from_json(value: object, where: str) -> Task:
    obj = Document(value, where)
    task = Task(
        id=obj.string("id"),
        suite=obj.string("suite"),
        goal=obj.string("goal"),
        split=obj.string("split"),
        max_steps=obj.integer("max_steps", minimum=0),
        params=scalars_from_json(obj.take("params"), obj.at("params")),
        setup=obj.strings("setup"),
        apps=obj.strings("apps"),
        evaluator=obj.string("evaluator"),
        checks=tuple(
            _check_from_json(check, f"{obj.at('checks')}[{i}]") for i, check in enumerate(obj.array("checks"))
        ),
    )
    obj.close()
    return task


def scalars_from_json(value: object, where: str) -> dict[str, ParamValue]:
    """A JSON object of strings, numbers and booleans (a task's parameters), in its order."""
    obj = Document(value, where)
    return {key: scalar(obj.take(key), obj.at(key)) for key in obj.names()}


# -- observations and actions -----------------------------------------------------------------------


def observation_to_json(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    observation = instance(value, Observation, where)
    return {
        "screenshot": outbox.add(observation.screenshot, f"{where}.screenshot"),
        "width": integer(observation.width, f"{where}.width", minimum=0),
        "height": integer(observation.height, f"{where}.height", minimum=0),
        "image_format": string(observation.image_format, f"{where}.image_format"),
        "timestamp_s": number(observation.timestamp_s, f"{where}.timestamp_s"),
    }


def observation_from_json(value: object, where: str, inbox: Attachments) -> Observation:
    obj = Document(value, where)
    observation = Observation(
        screenshot=inbox.take(obj.take("screenshot"), obj.at("screenshot")),
        width=obj.integer("width", minimum=0),
        height=obj.integer("height", minimum=0),
        image_format=obj.string("image_format"),
        timestamp_s=obj.number("timestamp_s"),
    )
    obj.close()
    return observation


def _point_to_json(value: object, where: str) -> list[float] | None:
    if value is None:
        return None
    point = instance(value, tuple, where)
    if len(point) != 2:
        raise DocumentError(where, f"must be a (y, x) pair, not {len(point)} values")
    return [number(point[0], f"{where}[0]"), number(point[1], f"{where}[1]")]


def _point_from_json(value: object, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise DocumentError(where, f"must be null or a [y, x] array, not {kind_of(value)}")
    return (number(value[0], f"{where}[0]"), number(value[1], f"{where}[1]"))


def action_to_json(value: object, where: str) -> dict[str, object]:
    if isinstance(value, InvalidAction):
        return {
            "kind": "invalid",
            "text": string(value.text, f"{where}.text"),
            "reason": string(value.reason, f"{where}.reason"),
        }
    if not isinstance(value, Action):
        raise DocumentError(where, f"must be Action or InvalidAction, not {type(value).__name__}")
    return {
        "kind": "action",
        "type": int(instance(value.type, ActionType, f"{where}.type")),
        "touch": _point_to_json(value.touch, f"{where}.touch"),
        "lift": _point_to_json(value.lift, f"{where}.lift"),
        "text": string(value.text, f"{where}.text"),
    }


def action_from_json(value: object, where: str) -> Action | InvalidAction:
    obj = Document(value, where)
    kind = obj.string("kind")
    action: Action | InvalidAction
    if kind == "invalid":
        action = InvalidAction(text=obj.string("text"), reason=obj.string("reason"))
    elif kind == "action":
        code = obj.integer("type")
        if code not in ActionType._value2member_map_:
            raise DocumentError(obj.at("type"), f"is {code}, not an AitW action type")
        touch = _point_from_json(obj.take("touch"), obj.at("touch"))
        lift = _point_from_json(obj.take("lift"), obj.at("lift"))
        text = obj.string("text")
        try:
            action = Action(type=ActionType(code), touch=touch, lift=lift, text=text)
        except ValueError as exc:
            raise DocumentError(where, f"is not a valid action: {exc}") from exc
    else:
        raise DocumentError(obj.at("kind"), f"must be 'action' or 'invalid', not {kind!r}")
    obj.close()
    return action


# -- steps and trajectories -------------------------------------------------------------------------


def step_to_json(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    step = instance(value, Step, where)
    return {
        "index": integer(step.index, f"{where}.index", minimum=0),
        "observation": observation_to_json(step.observation, f"{where}.observation", outbox),
        "output": string(step.output, f"{where}.output"),
        "action": action_to_json(step.action, f"{where}.action"),
        "policy_version": integer(step.policy_version, f"{where}.policy_version", minimum=0),
        "behaviour_logprob": number(step.behaviour_logprob, f"{where}.behaviour_logprob"),
        "reward": number(step.reward, f"{where}.reward"),
        "duration_s": number(step.duration_s, f"{where}.duration_s"),
    }


def step_from_json(value: object, where: str, inbox: Attachments) -> Step:
    obj = Document(value, where)
    step = Step(
        index=obj.integer("index", minimum=0),
        observation=observation_from_json(obj.take("observation"), obj.at("observation"), inbox),
        output=obj.string("output"),
        action=action_from_json(obj.take("action"), obj.at("action")),
        policy_version=obj.integer("policy_version", minimum=0),
        behaviour_logprob=obj.number("behaviour_logprob"),
        reward=obj.number("reward"),
        duration_s=obj.number("duration_s"),
    )
    obj.close()
    return step


def trajectory_to_json(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    trajectory = instance(value, Trajectory, where)
    steps = instance(trajectory.steps, tuple, f"{where}.steps")
    final = trajectory.final_observation
    success = trajectory.success
    return {
        "id": string(trajectory.id, f"{where}.id"),
        "task": task_to_json(trajectory.task, f"{where}.task"),
        "host": string(trajectory.host, f"{where}.host"),
        "device": string(trajectory.device, f"{where}.device"),
        "steps": [step_to_json(step, f"{where}.steps[{i}]", outbox) for i, step in enumerate(steps)],
        "final_observation": (
            None if final is None else observation_to_json(final, f"{where}.final_observation", outbox)
        ),
        "end_reason": instance(trajectory.end_reason, EndReason, f"{where}.end_reason").value,
        "success": None if success is None else boolean(success, f"{where}.success"),
        "verdict": string(trajectory.verdict, f"{where}.verdict"),
        "started_at_s": number(trajectory.started_at_s, f"{where}.started_at_s"),
        "duration_s": number(trajectory.duration_s, f"{where}.duration_s"),
        "temperature": None
        if trajectory.temperature is None
        else number(trajectory.temperature, f"{where}.temperature"),
        "group": string(trajectory.group, f"{where}.group"),
    }


def trajectory_from_json(value: object, where: str, inbox: Attachments) -> Trajectory:
    obj = Document(value, where)
    trajectory_id = obj.string("id")
    task = task_from_json(obj.take("task"), obj.at("task"))
    host = obj.string("host")
    device = obj.string("device")
    steps = tuple(
        step_from_json(step, f"{obj.at('steps')}[{i}]", inbox) for i, step in enumerate(obj.array("steps"))
    )
    final = obj.take("final_observation")
    end_reason = obj.string("end_reason")
    if end_reason not in EndReason._value2member_map_:
        raise DocumentError(obj.at("end_reason"), f"is {end_reason!r}, not an end reason")
    success = obj.take("success")
    trajectory = Trajectory(
        id=trajectory_id,
        task=task,
        host=host,
        device=device,
        steps=steps,
        final_observation=(
            None if final is None else observation_from_json(final, obj.at("final_observation"), inbox)
        ),
        end_reason=EndReason(end_reason),
        success=None if success is None else boolean(success, obj.at("success")),
        verdict=obj.string("verdict"),
        started_at_s=obj.number("started_at_s"),
        duration_s=obj.number("duration_s"),
        # absent from records written before it was kept
        temperature=None if obj.is_null("temperature") else obj.number("temperature"),
        group=obj.string("group"),
    )
    obj.close()
    return trajectory


# -- a trajectory as one blob -----------------------------------------------------------------------


def pack_trajectory(trajectory: Trajectory) -> bytes:
    """``trajectory`` as one blob (its JSON form and its screens; the layout is in the module notes).

    ``DocumentError`` for a value with no JSON form (a wrong type, a non-finite float, an integer
    outside 64 bits), naming the field (``trajectory.steps[0].reward``)."""
    outbox = Outbox()
    form = trajectory_to_json(trajectory, "trajectory", outbox)
    data = orjson.dumps({"trajectory": form, "att": [len(blob) for blob in outbox.blobs]})
    if len(data) > 2**32 - 1:
        raise DocumentError("trajectory", f"has a JSON form of {len(data)} bytes, over the limit of 4 GiB")
    return b"".join([_JSON_LENGTH.pack(len(data)), data, *outbox.blobs])


def unpack_trajectory(blob: bytes | memoryview) -> Trajectory:
    """The trajectory ``pack_trajectory`` made ``blob`` of; ``DocumentError`` if it is not one, whole."""
    view = memoryview(blob).cast("B")
    if len(view) < _JSON_LENGTH.size:
        raise DocumentError("", f"a packed trajectory needs {_JSON_LENGTH.size} bytes, not {len(view)}")
    (size,) = _JSON_LENGTH.unpack_from(view)
    end = _JSON_LENGTH.size + size
    if end > len(view):
        problem = f"its JSON claims {size} bytes, but only {len(view) - _JSON_LENGTH.size} follow"
        raise DocumentError("", problem)
    try:
        data = orjson.loads(view[_JSON_LENGTH.size : end])
    except orjson.JSONDecodeError as exc:
        raise DocumentError("", f"its JSON is not valid ({exc})") from exc
    if not isinstance(data, dict):
        raise DocumentError("", f"its JSON must be an object, not {kind_of(data)}")
    document = Document(data, "")
    lengths = [integer(length, f"att[{i}]", minimum=0) for i, length in enumerate(document.array("att"))]
    attachments = view[end:]
    if sum(lengths) != len(attachments):
        raise DocumentError("att", f"sums to {sum(lengths)} bytes, but {len(attachments)} follow the JSON")
    inbox = Inbox(attachments, lengths, "the blob")
    form = document.take("trajectory")
    if isinstance(form, dict):
        form.setdefault("temperature", None)  # packed before trajectories kept it (older checkpoints)
    trajectory = trajectory_from_json(form, "trajectory", inbox)
    document.close()
    inbox.close("att")
    return trajectory
