"""Messages to JSON headers and attachments, and back, checking everything.

The records inside messages (tasks, steps, trajectories) take their JSON form from
``distrl.records.forms``, screens as the frame's attachments (its ``Outbox`` and ``Inbox``); the
``DocumentError``s it raises become ``WireError``s with the same message where a frame is encoded or
decoded (``wire_error``, used by ``distrl.wire.frames``).
"""

from __future__ import annotations

from typing import assert_never, cast

from distrl.errors import DistrlError, WireError, error_class, error_from_wire, error_to_wire
from distrl.records import ParamValue, documents
from distrl.records.documents import Document, DocumentError
from distrl.records.forms import (
    Inbox,
    Outbox,
    instance,
    scalars_from_json,
    step_from_json,
    step_to_json,
    task_from_json,
    task_to_json,
    trajectory_from_json,
    trajectory_to_json,
)
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

# -- values: the typed reader of ``distrl.records``, its errors ``WireError``s, used on both sides so that
# encode and decode agree (the records' forms raise ``DocumentError``s, which ``wire_error`` translates)


def invalid(where: str, problem: str) -> WireError:
    return WireError(f"{where} {problem}", reason=f"{where} {problem}")


def wire_error(exc: DocumentError) -> WireError:
    """The ``WireError`` for a record with no wire form, or a header that holds no record: same message."""
    return WireError(str(exc), reason=str(exc))


def wire_object(data: object, where: str) -> Document:
    """``data`` as a JSON object to read field by field; every problem is a ``WireError``."""
    return Document(data, where, fail=invalid)


def integer_value(value: object, where: str, *, minimum: int | None = None) -> int:
    return documents.integer(value, where, minimum=minimum, fail=invalid)


def _float(value: object, where: str) -> float:
    return documents.number(value, where, fail=invalid)


def _temperature(value: object, where: str) -> float:
    temperature = _float(value, where)
    if temperature < 0:
        raise invalid(where, f"is {temperature}, not a temperature (0 or more)")
    return temperature


def _str(value: object, where: str) -> str:
    return documents.string(value, where, fail=invalid)


def _bool(value: object, where: str) -> bool:
    return documents.boolean(value, where, fail=invalid)


def _scalar(value: object, where: str) -> ParamValue:
    return documents.scalar(value, where, fail=invalid)


def _scalars(value: object, where: str) -> dict[str, ParamValue]:
    return documents.scalars(value, where, fail=invalid)


# -- errors -----------------------------------------------------------------------------------------


def _error_to_wire(value: object, where: str) -> dict[str, object]:
    wire = error_to_wire(instance(value, DistrlError, where))
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
            devices = instance(message.devices, tuple, f"{where}.devices")
            return {
                "role": _str(message.role, f"{where}.role"),
                "protocol": integer_value(message.protocol, f"{where}.protocol", minimum=0),
                "distrl_version": _str(message.distrl_version, f"{where}.distrl_version"),
                "host": _str(message.host, f"{where}.host"),
                "devices": [_str(device, f"{where}.devices[{i}]") for i, device in enumerate(devices)],
                "compute": _scalars(message.compute, f"{where}.compute"),
                "device_settings": _str(message.device_settings, f"{where}.device_settings"),
                "run_folder": _str(message.run_folder, f"{where}.run_folder"),
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
                "task": task_to_json(message.task, f"{where}.task"),
                "temperature": None
                if message.temperature is None
                else _temperature(message.temperature, f"{where}.temperature"),
            }
        case StepReport():
            return {
                "episode_id": _str(message.episode_id, f"{where}.episode_id"),
                "step": step_to_json(message.step, f"{where}.step", outbox),
            }
        case TrajectoryReport():
            return {"trajectory": trajectory_to_json(message.trajectory, f"{where}.trajectory", outbox)}
        case EpisodeEnd():
            return {
                "trajectory": trajectory_to_json(message.trajectory, f"{where}.trajectory", outbox),
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
                compute=scalars_from_json(obj.take("compute"), obj.at("compute")),
                device_settings=obj.string("device_settings"),
                run_folder=obj.string("run_folder"),
                id=message_id,
            )
        except (WireError, DocumentError):
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
        except (WireError, DocumentError):
            raise
        except ValueError as exc:
            raise invalid(obj.where, f"is not valid weights: {exc}") from exc
    if name == "episode_request":
        return EpisodeRequest(
            episode_id=obj.string("episode_id"),
            device=obj.string("device"),
            task=task_from_json(obj.take("task"), obj.at("task")),
            temperature=None
            if obj.is_null("temperature")
            else _temperature(obj.take("temperature"), obj.at("temperature")),
            id=message_id,
        )
    if name == "step_report":
        return StepReport(
            episode_id=obj.string("episode_id"),
            step=step_from_json(obj.take("step"), obj.at("step"), inbox),
            id=message_id,
        )
    if name == "trajectory_report":
        trajectory = trajectory_from_json(obj.take("trajectory"), obj.at("trajectory"), inbox)
        return TrajectoryReport(trajectory=trajectory, id=message_id)
    if name == "episode_end":
        trajectory = trajectory_from_json(obj.take("trajectory"), obj.at("trajectory"), inbox)
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
