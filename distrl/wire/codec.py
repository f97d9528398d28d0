"""Messages and the records inside them to JSON headers and attachments, and back, checking everything."""

from __future__ import annotations

from typing import TypeVar, assert_never, cast

from distrl.errors import DistrlError, WireError, error_class, error_from_wire, error_to_wire
from distrl.records import (
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
    documents,
)
from distrl.records.documents import Document, kind_of
from distrl.wire.messages import (
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    Heartbeat,
    Hello,
    Message,
    Role,
    Setup,
    Shutdown,
    StepReport,
    TrajectoryReport,
    Weights,
    WeightsKind,
)

T = TypeVar("T")


# -- values: the typed reader of ``distrl.records``, its errors ``WireError``s, used on both sides so that
# encode and decode agree


def invalid(where: str, problem: str) -> WireError:
    return WireError(f"{where} {problem}", reason=f"{where} {problem}")


def wire_object(data: object, where: str) -> Document:
    """``data`` as a JSON object to read field by field; every problem is a ``WireError``."""
    return Document(data, where, fail=invalid)


def integer_value(value: object, where: str, *, minimum: int | None = None) -> int:
    return documents.integer(value, where, minimum=minimum, fail=invalid)


def _float(value: object, where: str) -> float:
    return documents.number(value, where, fail=invalid)


def _str(value: object, where: str) -> str:
    return documents.string(value, where, fail=invalid)


def _bool(value: object, where: str) -> bool:
    return documents.boolean(value, where, fail=invalid)


def _scalar(value: object, where: str) -> ParamValue:
    return documents.scalar(value, where, fail=invalid)


def _scalars(value: object, where: str) -> dict[str, ParamValue]:
    return documents.scalars(value, where, fail=invalid)


def _instance(value: object, cls: type[T], where: str) -> T:
    if not isinstance(value, cls):
        raise invalid(where, f"must be {cls.__name__}, not {type(value).__name__}")
    return value


class Outbox:
    """The attachments of a frame being encoded, in order."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []

    def add(self, data: object, where: str) -> int:
        self.blobs.append(_instance(data, bytes, where))
        return len(self.blobs) - 1


class Inbox:
    """The attachments of a frame being decoded; each must be taken exactly once."""

    def __init__(self, data: memoryview, lengths: list[int]) -> None:
        self._data = data
        self._spans: list[tuple[int, int]] = []
        start = 0
        for length in lengths:
            self._spans.append((start, start + length))
            start += length
        self._taken = [False] * len(lengths)

    def take(self, value: object, where: str) -> bytes:
        index = integer_value(value, where, minimum=0)
        if index >= len(self._spans):
            raise invalid(where, f"refers to attachment {index}, but the frame has {len(self._spans)}")
        if self._taken[index]:
            raise invalid(where, f"refers to attachment {index}, which another field already uses")
        self._taken[index] = True
        start, end = self._spans[index]
        return bytes(self._data[start:end])

    def close(self) -> None:
        unused = [index for index, taken in enumerate(self._taken) if not taken]
        if unused:
            raise invalid("header.att", f"declares attachment(s) {unused} that no field uses")


# -- records ----------------------------------------------------------------------------------------


def _task_to_wire(value: object, where: str) -> dict[str, object]:
    task = _instance(value, Task, where)
    return {
        "id": _str(task.id, f"{where}.id"),
        "suite": _str(task.suite, f"{where}.suite"),
        "goal": _str(task.goal, f"{where}.goal"),
        "split": _str(task.split, f"{where}.split"),
        "max_steps": integer_value(task.max_steps, f"{where}.max_steps", minimum=0),
        "params": _scalars(task.params, f"{where}.params"),
        "setup": _strings(task.setup, f"{where}.setup"),
        "apps": _strings(task.apps, f"{where}.apps"),
        "evaluator": _str(task.evaluator, f"{where}.evaluator"),
        "checks": [
            {
                "command": _str(check.command, f"{where}.checks[{i}].command"),
                "op": _str(check.op, f"{where}.checks[{i}].op"),
                "value": _str(check.value, f"{where}.checks[{i}].value"),
            }
            for i, check in enumerate(_instance(task.checks, tuple, f"{where}.checks"))
        ],
    }


def _strings(values: object, where: str) -> list[str]:
    return [_str(value, f"{where}[{i}]") for i, value in enumerate(_instance(values, tuple, where))]


def _check_from_wire(value: object, where: str) -> Check:
    obj = wire_object(value, where)
    check = Check(command=obj.string("command"), op=obj.string("op"), value=obj.string("value"))
    if check.op not in CHECK_OPS:
        raise invalid(obj.at("op"), f"is {check.op!r}, not one of {', '.join(CHECK_OPS)}")
    obj.close()
    return check


def _task_from_wire(value: object, where: str) -> Task:
    obj = wire_object(value, where)
    task = Task(
        id=obj.string("id"),
        suite=obj.string("suite"),
        goal=obj.string("goal"),
        split=obj.string("split"),
        max_steps=obj.integer("max_steps", minimum=0),
        params=_wire_scalars(obj.take("params"), obj.at("params")),
        setup=obj.strings("setup"),
        apps=obj.strings("apps"),
        evaluator=obj.string("evaluator"),
        checks=tuple(
            _check_from_wire(check, f"{obj.at('checks')}[{i}]") for i, check in enumerate(obj.array("checks"))
        ),
    )
    obj.close()
    return task


def _wire_scalars(value: object, where: str) -> dict[str, ParamValue]:
    obj = wire_object(value, where)
    return {key: _scalar(obj.take(key), obj.at(key)) for key in obj.names()}


def _observation_to_wire(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    observation = _instance(value, Observation, where)
    return {
        "screenshot": outbox.add(observation.screenshot, f"{where}.screenshot"),
        "width": integer_value(observation.width, f"{where}.width", minimum=0),
        "height": integer_value(observation.height, f"{where}.height", minimum=0),
        "image_format": _str(observation.image_format, f"{where}.image_format"),
        "timestamp_s": _float(observation.timestamp_s, f"{where}.timestamp_s"),
    }


def _observation_from_wire(value: object, where: str, inbox: Inbox) -> Observation:
    obj = wire_object(value, where)
    observation = Observation(
        screenshot=inbox.take(obj.take("screenshot"), obj.at("screenshot")),
        width=obj.integer("width", minimum=0),
        height=obj.integer("height", minimum=0),
        image_format=obj.string("image_format"),
        timestamp_s=obj.number("timestamp_s"),
    )
    obj.close()
    return observation


def _point_to_wire(value: object, where: str) -> list[float] | None:
    if value is None:
        return None
    point = _instance(value, tuple, where)
    if len(point) != 2:
        raise invalid(where, f"must be a (y, x) pair, not {len(point)} values")
    return [_float(point[0], f"{where}[0]"), _float(point[1], f"{where}[1]")]


def _point_from_wire(value: object, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise invalid(where, f"must be null or a [y, x] array, not {kind_of(value)}")
    return (_float(value[0], f"{where}[0]"), _float(value[1], f"{where}[1]"))


def _action_to_wire(value: object, where: str) -> dict[str, object]:
    if isinstance(value, InvalidAction):
        return {
            "kind": "invalid",
            "text": _str(value.text, f"{where}.text"),
            "reason": _str(value.reason, f"{where}.reason"),
        }
    if not isinstance(value, Action):
        raise invalid(where, f"must be Action or InvalidAction, not {type(value).__name__}")
    return {
        "kind": "action",
        "type": int(_instance(value.type, ActionType, f"{where}.type")),
        "touch": _point_to_wire(value.touch, f"{where}.touch"),
        "lift": _point_to_wire(value.lift, f"{where}.lift"),
        "text": _str(value.text, f"{where}.text"),
    }


def _action_from_wire(value: object, where: str) -> Action | InvalidAction:
    obj = wire_object(value, where)
    kind = obj.string("kind")
    action: Action | InvalidAction
    if kind == "invalid":
        action = InvalidAction(text=obj.string("text"), reason=obj.string("reason"))
    elif kind == "action":
        code = obj.integer("type")
        if code not in ActionType._value2member_map_:
            raise invalid(obj.at("type"), f"is {code}, not an AitW action type")
        try:
            action = Action(
                type=ActionType(code),
                touch=_point_from_wire(obj.take("touch"), obj.at("touch")),
                lift=_point_from_wire(obj.take("lift"), obj.at("lift")),
                text=obj.string("text"),
            )
        except ValueError as exc:
            raise invalid(where, f"is not a valid action: {exc}") from exc
    else:
        raise invalid(obj.at("kind"), f"must be 'action' or 'invalid', not {kind!r}")
    obj.close()
    return action


def _step_to_wire(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    step = _instance(value, Step, where)
    return {
        "index": integer_value(step.index, f"{where}.index", minimum=0),
        "observation": _observation_to_wire(step.observation, f"{where}.observation", outbox),
        "output": _str(step.output, f"{where}.output"),
        "action": _action_to_wire(step.action, f"{where}.action"),
        "policy_version": integer_value(step.policy_version, f"{where}.policy_version", minimum=0),
        "behaviour_logprob": _float(step.behaviour_logprob, f"{where}.behaviour_logprob"),
        "reward": _float(step.reward, f"{where}.reward"),
        "duration_s": _float(step.duration_s, f"{where}.duration_s"),
    }


def _step_from_wire(value: object, where: str, inbox: Inbox) -> Step:
    obj = wire_object(value, where)
    step = Step(
        index=obj.integer("index", minimum=0),
        observation=_observation_from_wire(obj.take("observation"), obj.at("observation"), inbox),
        output=obj.string("output"),
        action=_action_from_wire(obj.take("action"), obj.at("action")),
        policy_version=obj.integer("policy_version", minimum=0),
        behaviour_logprob=obj.number("behaviour_logprob"),
        reward=obj.number("reward"),
        duration_s=obj.number("duration_s"),
    )
    obj.close()
    return step


def _trajectory_to_wire(value: object, where: str, outbox: Outbox) -> dict[str, object]:
    trajectory = _instance(value, Trajectory, where)
    steps = _instance(trajectory.steps, tuple, f"{where}.steps")
    final = trajectory.final_observation
    success = trajectory.success
    return {
        "id": _str(trajectory.id, f"{where}.id"),
        "task": _task_to_wire(trajectory.task, f"{where}.task"),
        "host": _str(trajectory.host, f"{where}.host"),
        "device": _str(trajectory.device, f"{where}.device"),
        "steps": [_step_to_wire(step, f"{where}.steps[{i}]", outbox) for i, step in enumerate(steps)],
        "final_observation": (
            None if final is None else _observation_to_wire(final, f"{where}.final_observation", outbox)
        ),
        "end_reason": _instance(trajectory.end_reason, EndReason, f"{where}.end_reason").value,
        "success": None if success is None else _bool(success, f"{where}.success"),
        "verdict": _str(trajectory.verdict, f"{where}.verdict"),
        "started_at_s": _float(trajectory.started_at_s, f"{where}.started_at_s"),
        "duration_s": _float(trajectory.duration_s, f"{where}.duration_s"),
    }


def _trajectory_from_wire(value: object, where: str, inbox: Inbox) -> Trajectory:
    obj = wire_object(value, where)
    trajectory_id = obj.string("id")
    task = _task_from_wire(obj.take("task"), obj.at("task"))
    host = obj.string("host")
    device = obj.string("device")
    steps = tuple(
        _step_from_wire(step, f"{obj.at('steps')}[{i}]", inbox) for i, step in enumerate(obj.array("steps"))
    )
    final = obj.take("final_observation")
    end_reason = obj.string("end_reason")
    if end_reason not in EndReason._value2member_map_:
        raise invalid(obj.at("end_reason"), f"is {end_reason!r}, not an end reason")
    success = obj.take("success")
    trajectory = Trajectory(
        id=trajectory_id,
        task=task,
        host=host,
        device=device,
        steps=steps,
        final_observation=(
            None if final is None else _observation_from_wire(final, obj.at("final_observation"), inbox)
        ),
        end_reason=EndReason(end_reason),
        success=None if success is None else _bool(success, obj.at("success")),
        verdict=obj.string("verdict"),
        started_at_s=obj.number("started_at_s"),
        duration_s=obj.number("duration_s"),
    )
    obj.close()
    return trajectory


def _error_to_wire(value: object, where: str) -> dict[str, object]:
    wire = error_to_wire(_instance(value, DistrlError, where))
    fields = wire["fields"]
    return {
        "type": _str(wire["type"], f"{where}.type"),
        "message": _str(wire["message"], f"{where}.message"),
        "fields": {
            name: None if field is None else _scalar(field, f"{where}.fields.{name}")
            for name, field in fields.items()
        },
    }


def _error_from_wire(value: object, where: str) -> DistrlError:
    obj = wire_object(value, where)
    name = obj.string("type")
    message = obj.string("message")
    fields_obj = wire_object(obj.take("fields"), obj.at("fields"))
    fields = {
        key: None if (field := fields_obj.take(key)) is None else _scalar(field, fields_obj.at(key))
        for key in fields_obj.names()
    }
    obj.close()
    known = error_class(name)
    if known is not None:
        for key in fields:
            if key not in known.fields:
                raise invalid(fields_obj.at(key), f"is not a field of {name}")
    return error_from_wire({"type": name, "message": message, "fields": fields})


# -- messages ---------------------------------------------------------------------------------------


def message_to_wire(message: Message, outbox: Outbox) -> dict[str, object]:
    where = type(message).__name__
    match message:
        case Hello():
            devices = _instance(message.devices, tuple, f"{where}.devices")
            return {
                "role": _str(message.role, f"{where}.role"),
                "protocol": integer_value(message.protocol, f"{where}.protocol", minimum=0),
                "distrl_version": _str(message.distrl_version, f"{where}.distrl_version"),
                "host": _str(message.host, f"{where}.host"),
                "devices": [_str(device, f"{where}.devices[{i}]") for i, device in enumerate(devices)],
                "compute": _scalars(message.compute, f"{where}.compute"),
                "device_settings": _str(message.device_settings, f"{where}.device_settings"),
            }
        case Heartbeat():
            return {
                "seq": integer_value(message.seq, f"{where}.seq", minimum=0),
                "sent_at_s": _float(message.sent_at_s, f"{where}.sent_at_s"),
            }
        case Weights():
            base = message.base_version
            return {
                "version": integer_value(message.version, f"{where}.version", minimum=0),
                "base_version": None
                if base is None
                else integer_value(base, f"{where}.base_version", minimum=0),
                "kind": _str(message.kind, f"{where}.kind"),
                "checksum": _str(message.checksum, f"{where}.checksum"),
                "blob": outbox.add(message.blob, f"{where}.blob"),
            }
        case EpisodeRequest():
            return {
                "episode_id": _str(message.episode_id, f"{where}.episode_id"),
                "device": _str(message.device, f"{where}.device"),
                "task": _task_to_wire(message.task, f"{where}.task"),
            }
        case StepReport():
            return {
                "episode_id": _str(message.episode_id, f"{where}.episode_id"),
                "step": _step_to_wire(message.step, f"{where}.step", outbox),
            }
        case TrajectoryReport():
            return {"trajectory": _trajectory_to_wire(message.trajectory, f"{where}.trajectory", outbox)}
        case EpisodeEnd():
            return {
                "trajectory": _trajectory_to_wire(message.trajectory, f"{where}.trajectory", outbox),
                "steps": integer_value(message.steps, f"{where}.steps", minimum=0),
            }
        case Ack():
            return {
                "ref": integer_value(message.ref, f"{where}.ref", minimum=0),
                "ok": _bool(message.ok, f"{where}.ok"),
                "detail": _str(message.detail, f"{where}.detail"),
            }
        case ErrorReport():
            return {
                "ref": integer_value(message.ref, f"{where}.ref", minimum=0),
                "error": _error_to_wire(message.error, f"{where}.error"),
            }
        case Setup():
            return {"settings": _str(message.settings, f"{where}.settings")}
        case Shutdown():
            return {"reason": _str(message.reason, f"{where}.reason")}
        case _:
            assert_never(message)


def message_from_wire(obj: Document, name: str, message_id: int, inbox: Inbox) -> Message:
    if name == "hello":
        devices = obj.array("devices")
        try:
            return Hello(
                role=cast(Role, obj.string("role")),
                protocol=obj.integer("protocol", minimum=0),
                distrl_version=obj.string("distrl_version"),
                host=obj.string("host"),
                devices=tuple(_str(device, f"{obj.at('devices')}[{i}]") for i, device in enumerate(devices)),
                compute=_wire_scalars(obj.take("compute"), obj.at("compute")),
                device_settings=obj.string("device_settings"),
                id=message_id,
            )
        except WireError:
            raise
        except ValueError as exc:
            raise invalid(obj.where, f"is not a valid hello: {exc}") from exc
    if name == "heartbeat":
        return Heartbeat(seq=obj.integer("seq", minimum=0), sent_at_s=obj.number("sent_at_s"), id=message_id)
    if name == "weights":
        base = obj.take("base_version")
        try:
            return Weights(
                version=obj.integer("version", minimum=0),
                base_version=None if base is None else integer_value(base, obj.at("base_version"), minimum=0),
                kind=cast(WeightsKind, obj.string("kind")),
                checksum=obj.string("checksum"),
                blob=inbox.take(obj.take("blob"), obj.at("blob")),
                id=message_id,
            )
        except WireError:
            raise
        except ValueError as exc:
            raise invalid(obj.where, f"is not valid weights: {exc}") from exc
    if name == "episode_request":
        return EpisodeRequest(
            episode_id=obj.string("episode_id"),
            device=obj.string("device"),
            task=_task_from_wire(obj.take("task"), obj.at("task")),
            id=message_id,
        )
    if name == "step_report":
        return StepReport(
            episode_id=obj.string("episode_id"),
            step=_step_from_wire(obj.take("step"), obj.at("step"), inbox),
            id=message_id,
        )
    if name == "trajectory_report":
        trajectory = _trajectory_from_wire(obj.take("trajectory"), obj.at("trajectory"), inbox)
        return TrajectoryReport(trajectory=trajectory, id=message_id)
    if name == "episode_end":
        trajectory = _trajectory_from_wire(obj.take("trajectory"), obj.at("trajectory"), inbox)
        if trajectory.steps:
            raise invalid(obj.at("trajectory.steps"), "must be empty: an episode's steps are streamed")
        return EpisodeEnd(trajectory=trajectory, steps=obj.integer("steps", minimum=0), id=message_id)
    if name == "ack":
        return Ack(
            ref=obj.integer("ref", minimum=0),
            ok=obj.boolean("ok"),
            detail=obj.string("detail"),
            id=message_id,
        )
    if name == "error_report":
        return ErrorReport(
            ref=obj.integer("ref", minimum=0),
            error=_error_from_wire(obj.take("error"), obj.at("error")),
            id=message_id,
        )
    if name == "setup":
        return Setup(settings=obj.string("settings"), id=message_id)
    if name == "shutdown":
        return Shutdown(reason=obj.string("reason"), id=message_id)
    raise invalid(obj.at("type"), f"is {name!r}, not a known message type")
