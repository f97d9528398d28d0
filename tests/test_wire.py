"""The wire: frames round-trip, refuse every malformed input with a WireError, and travel real streams."""

from __future__ import annotations

import copy
import math
import shutil
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, cast

import anyio
import orjson
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream, ByteStream, SocketListener
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.stapled import StapledByteStream
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import distrl.records.forms
import distrl.wire
from distrl.errors import (
    ConfigError,
    DeviceTimeout,
    DistrlError,
    FrameTooLarge,
    ProtocolMismatch,
    RemoteError,
    TransportError,
    TruncatedFrame,
    WireError,
)
from distrl.records import (
    CHECK_OPS,
    Action,
    ActionType,
    Check,
    EndReason,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
)
from distrl.wire import (
    MAGIC,
    PREFIX_BYTES,
    PROTOCOL_VERSION,
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    FrameStream,
    Heartbeat,
    Hello,
    Message,
    Setup,
    Shutdown,
    StepReport,
    TrajectoryReport,
    Weights,
    decode,
    encode,
)

TIMEOUT_S = 10

# -- strategies: realistic records and every message type -------------------------------------------

ids = st.integers(0, 2**63 - 1)
small = st.integers(0, 10_000)
texts = st.text(max_size=24)
names = st.text(min_size=1, max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False)
unit = st.floats(0.0, 1.0)
scalars = st.one_of(texts, st.integers(-(2**63), 2**63 - 1), finite, st.booleans())
scalar_maps = st.dictionaries(names, scalars, max_size=4)
images = st.binary(max_size=48)

tasks = st.builds(
    Task,
    id=st.from_regex(r"[a-z_]+/[a-z]+/[0-9]{4}", fullmatch=True),
    suite=st.sampled_from(["general", "web_shopping"]),
    goal=texts,
    split=st.sampled_from(["train", "test"]),
    max_steps=st.integers(1, 30),
    params=scalar_maps,
    setup=st.lists(texts, max_size=3).map(tuple),
    apps=st.lists(texts, max_size=2).map(tuple),
    evaluator=st.sampled_from(["", "sim", "adb", "judge"]),
    checks=st.lists(
        st.builds(Check, command=texts, op=st.sampled_from(CHECK_OPS), value=texts), max_size=2
    ).map(tuple),
)
observations = st.builds(
    Observation,
    screenshot=images,
    width=st.integers(1, 4096),
    height=st.integers(1, 4096),
    image_format=st.sampled_from(["png", "jpeg"]),
    timestamp_s=st.floats(0, 2e9),
)
points = st.tuples(unit, unit)
actions = st.one_of(
    st.builds(Action, type=st.just(ActionType.DUAL_POINT), touch=points, lift=points),
    st.builds(Action, type=st.just(ActionType.TYPE), text=st.text(min_size=1, max_size=24)),
    st.builds(
        Action,
        type=st.sampled_from([t for t in ActionType if t not in (ActionType.DUAL_POINT, ActionType.TYPE)]),
    ),
    st.builds(InvalidAction, text=texts, reason=texts),
)


@st.composite
def steps(draw: st.DrawFn, index: int | None = None) -> Step:
    return Step(
        index=draw(small) if index is None else index,
        observation=draw(observations),
        output=draw(texts),
        action=draw(actions),
        policy_version=draw(small),
        behaviour_logprob=draw(st.floats(-1e4, 0.0)),
        reward=draw(finite),
        duration_s=draw(st.floats(0.0, 600.0)),
    )


temperatures = st.none() | st.just(0.0) | st.floats(0, 4)


@st.composite
def trajectories(draw: st.DrawFn) -> Trajectory:
    count = draw(st.integers(0, 5))
    return Trajectory(
        id=draw(names),
        task=draw(tasks),
        host=draw(names),
        device=draw(st.sampled_from(["emulator-5554", "sim-0"])),
        steps=tuple(draw(steps(index=i)) for i in range(count)),
        final_observation=draw(st.none() | observations),
        end_reason=draw(st.sampled_from(EndReason)),
        success=draw(st.none() | st.booleans()),
        verdict=draw(texts),
        started_at_s=draw(st.floats(0, 2e9)),
        duration_s=draw(st.floats(0, 1e4)),
        temperature=draw(temperatures),
    )


errors = st.one_of(
    st.builds(lambda m, r: WireError(m, reason=r), texts, texts | st.none()),
    st.builds(lambda p, q: ConfigError.at(p, q, "hosts.toml"), texts, texts),
    st.builds(
        lambda m, h, s, t: DeviceTimeout(m, host=h, device=s, operation="step", timeout_s=t),
        texts,
        names,
        names,
        st.floats(0, 1e3),
    ),
    st.builds(lambda m, s: TransportError(m, host="gpu-1", phase="connect", exit_status=s), texts, small),
    st.builds(lambda m, t: RemoteError(m, remote_type=t), texts, names),
)

messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(
        Hello,
        role=st.sampled_from(["learner", "worker"]),
        protocol=st.just(PROTOCOL_VERSION),
        distrl_version=st.just("0.1.0"),
        host=names,
        devices=st.lists(names, max_size=4).map(tuple),
        compute=scalar_maps,
        id=ids,
    ),
    st.builds(Heartbeat, seq=ids, sent_at_s=finite, id=ids),
    st.builds(
        Weights,
        version=small,
        base_version=st.none(),
        kind=st.just("full"),
        checksum=st.text("0123456789abcdef", max_size=64),
        blob=st.binary(max_size=256),
        id=ids,
    ),
    st.builds(
        Weights,
        version=small,
        base_version=small,
        kind=st.just("diff"),
        checksum=st.text("0123456789abcdef", max_size=64),
        blob=st.binary(max_size=256),
        id=ids,
    ),
    st.builds(EpisodeRequest, episode_id=names, device=names, task=tasks, temperature=temperatures, id=ids),
    st.builds(StepReport, episode_id=names, step=steps(), id=ids),
    st.builds(TrajectoryReport, trajectory=trajectories(), id=ids),
    st.builds(
        EpisodeEnd,
        trajectory=trajectories().map(lambda t: replace(t, steps=())),
        steps=small,
        id=ids,
    ),
    st.builds(Ack, ref=ids, ok=st.booleans(), detail=texts, id=ids),
    st.builds(ErrorReport, ref=ids, error=errors, id=ids),
    st.builds(Setup, settings=texts, id=ids),
    st.builds(Shutdown, reason=texts, id=ids),
)


def _screen(tag: int, size: int = 64) -> Observation:
    return Observation(screenshot=bytes([tag % 256]) * size, width=1080, height=2400, timestamp_s=1.5 * tag)


def _trajectory(tag: int = 0, screen_bytes: int = 64) -> Trajectory:
    """A fixed trajectory: a tap, typed text, an invalid output and a final screen."""
    actions: list[Action | InvalidAction] = [
        Action(type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)),
        Action(type=ActionType.TYPE, text="wireless earbuds"),
        InvalidAction(text="click the thing", reason="no action keyword"),
    ]
    return Trajectory(
        id=f"ep-{tag}",
        task=Task(id="web_shopping/search/0001", suite="web_shopping", goal="Search for earbuds", params={}),
        host="gpu-1",
        device="sim-0",
        steps=tuple(
            Step(
                index=i,
                observation=_screen(tag + i, screen_bytes),
                output=f"output {i}",
                action=action,
                policy_version=3,
                behaviour_logprob=-1.25 * (i + 1),
                reward=0.0,
                duration_s=0.5,
            )
            for i, action in enumerate(actions)
        ),
        final_observation=_screen(tag + 9, screen_bytes),
        end_reason=EndReason.STEP_LIMIT,
        success=False,
    )


def _sample_messages(screen_bytes: int = 300_000, blob_bytes: int = 2**21) -> list[Message]:
    """One message of each type; the trajectory and the weights are large unless asked otherwise."""
    return [
        Hello(
            role="worker", protocol=1, distrl_version="0.1.0", host="gpu-1", devices=("sim-0",), compute={}
        ),
        Heartbeat(seq=0, sent_at_s=1.0),
        Weights(
            version=1,
            base_version=None,
            kind="full",
            checksum="c",
            blob=bytes(range(256)) * (blob_bytes // 256) + b"w",
        ),
        EpisodeRequest(episode_id="e", device="sim-0", task=_trajectory().task),
        StepReport(episode_id="e", step=_trajectory().steps[0]),
        TrajectoryReport(trajectory=_trajectory(tag=1, screen_bytes=screen_bytes), id=4),
        EpisodeEnd(trajectory=replace(_trajectory(tag=2), steps=()), steps=3, id=5),
        Ack(ref=4, ok=True),
        ErrorReport(ref=4, error=TransportError("lost", host="gpu-1", phase="run")),
        Shutdown(reason="done"),
    ]


def _header(frame: bytes) -> dict[str, Any]:
    header_len = struct.unpack_from(">I", frame, 4)[0]
    header: dict[str, Any] = orjson.loads(frame[PREFIX_BYTES : PREFIX_BYTES + header_len])
    return header


def _attachments(frame: bytes) -> bytes:
    header_len = struct.unpack_from(">I", frame, 4)[0]
    return frame[PREFIX_BYTES + header_len :]


def _frame(header: object, attachments: bytes = b"", *, version: int = PROTOCOL_VERSION) -> bytes:
    """A frame with a correct prefix around any header and attachments."""
    body = header if isinstance(header, bytes) else orjson.dumps(header)
    return MAGIC + struct.pack(">BII", version, len(body), len(attachments)) + body + attachments


def _check_consistent(frame: bytes) -> None:
    """``frame`` is refused with a WireError, or decodes to a message that re-encodes to itself."""
    try:
        message = decode(frame)
    except WireError:
        return
    again = encode(message)
    assert decode(again) == message
    assert encode(decode(again)) == again


# -- round trips and layout -------------------------------------------------------------------------


@given(messages)
def test_every_message_round_trips_to_identical_bytes(message: Message) -> None:
    frame = encode(message)
    decoded = decode(frame)
    assert type(decoded) is type(message)
    assert decoded == message
    assert encode(decoded) == frame


@given(trajectories())
def test_decoded_records_have_their_own_types(trajectory: Trajectory) -> None:
    decoded = decode(encode(TrajectoryReport(trajectory=trajectory)))
    assert isinstance(decoded, TrajectoryReport)
    result = decoded.trajectory
    assert type(result.end_reason) is EndReason
    assert type(result.steps) is tuple
    assert type(result.task.params) is dict
    for step in result.steps:
        assert type(step.observation.screenshot) is bytes
        if isinstance(step.action, Action):
            assert type(step.action.type) is ActionType
            assert step.action.touch is None or type(step.action.touch) is tuple


def test_frame_layout_is_pinned() -> None:
    header = b'{"type":"heartbeat","id":3,"att":[],"seq":1,"sent_at_s":2.5}'
    expected = MAGIC + bytes([PROTOCOL_VERSION]) + struct.pack(">II", len(header), 0) + header
    assert encode(Heartbeat(id=3, seq=1, sent_at_s=2.5)) == expected
    assert decode(expected) == Heartbeat(id=3, seq=1, sent_at_s=2.5)


def test_screenshots_and_blobs_travel_as_attachments_not_in_the_header() -> None:
    trajectory = _trajectory(tag=7, screen_bytes=100)
    frame = encode(TrajectoryReport(trajectory=trajectory, id=5))
    header = _header(frame)
    screens = [step.observation.screenshot for step in trajectory.steps]
    assert trajectory.final_observation is not None
    screens.append(trajectory.final_observation.screenshot)
    assert header["att"] == [len(screen) for screen in screens]
    assert _attachments(frame) == b"".join(screens)
    wire_steps = header["trajectory"]["steps"]
    assert [step["observation"]["screenshot"] for step in wire_steps] == [0, 1, 2]
    assert header["trajectory"]["final_observation"]["screenshot"] == 3
    assert [step["action"]["kind"] for step in wire_steps] == ["action", "action", "invalid"]

    blob = bytes(range(256)) * 4
    frame = encode(Weights(version=2, base_version=1, kind="diff", checksum="ab", blob=blob))
    assert _header(frame)["blob"] == 0
    assert _attachments(frame) == blob


def test_error_report_rebuilds_the_error_class() -> None:
    error = DeviceTimeout("step timed out", host="gpu-1", device="sim-3", operation="step", timeout_s=30.0)
    decoded = decode(encode(ErrorReport(ref=9, error=error, id=10)))
    assert isinstance(decoded, ErrorReport)
    assert type(decoded.error) is DeviceTimeout
    assert decoded.error.field_values() == error.field_values()
    assert decoded != ErrorReport(ref=9, error=DeviceTimeout("other", host="gpu-1"), id=10)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (Heartbeat(seq=1, sent_at_s=math.nan), "Heartbeat.sent_at_s"),
        (Heartbeat(seq=1, sent_at_s=math.inf), "Heartbeat.sent_at_s"),
        (
            TrajectoryReport(
                trajectory=replace(
                    _trajectory(),
                    steps=(_trajectory().steps[0], replace(_trajectory().steps[1], reward=-math.inf)),
                )
            ),
            "TrajectoryReport.trajectory.steps[1].reward",
        ),
        (
            EpisodeRequest(
                episode_id="e",
                device="d",
                task=Task(id="t", suite="s", goal="g", params={"price": math.nan}),
            ),
            "EpisodeRequest.task.params.price",
        ),
        (
            Hello(
                role="worker",
                protocol=1,
                distrl_version="0.1.0",
                host="h",
                devices=(),
                compute={"x": math.inf},
            ),
            "Hello.compute.x",
        ),
        (
            EpisodeRequest(episode_id="e", device="d", task=_trajectory().task, temperature=math.inf),
            "EpisodeRequest.temperature",
        ),
        (
            ErrorReport(ref=1, error=DeviceTimeout("slow", timeout_s=math.nan)),
            "ErrorReport.error.fields.timeout_s",
        ),
    ],
)
def test_non_finite_floats_are_refused_at_encode_naming_the_field(message: Message, field: str) -> None:
    with pytest.raises(WireError, match="non-finite") as caught:
        encode(message)
    assert field in str(caught.value)
    assert caught.value.reason is not None
    assert field in caught.value.reason


@pytest.mark.parametrize(
    "message",
    [
        Heartbeat(seq=-1, sent_at_s=0.0),
        Heartbeat(seq=2**64, sent_at_s=0.0),
        Heartbeat(seq=True, sent_at_s=0.0),
        Heartbeat(seq=1, sent_at_s="now"),  # type: ignore[arg-type]
        Ack(ref=1, ok=1, id=0),  # type: ignore[arg-type]
        Shutdown(reason="bye", id=-5),
        Shutdown(reason="\ud800"),
        Hello(role="worker", protocol=1, distrl_version="0", host="h", devices=["a"], compute={}),  # type: ignore[arg-type]
        Hello(role="worker", protocol=1, distrl_version="0", host="h", devices=(), compute={1: 2}),  # type: ignore[dict-item]
        Weights(version=1, base_version=None, kind="full", checksum="", blob=bytearray(b"x")),  # type: ignore[arg-type]
        StepReport(episode_id="e", step="step"),  # type: ignore[arg-type]
        EpisodeRequest(episode_id="e", device="d", task=Task(id="t", suite="s", goal="g"), temperature=-1.0),
    ],
)
def test_values_with_no_wire_form_are_refused_at_encode(message: Message) -> None:
    with pytest.raises(WireError):
        encode(message)


def test_encode_refuses_frames_over_the_limits() -> None:
    weights = Weights(version=1, base_version=None, kind="full", checksum="", blob=b"\0" * 1000)
    with pytest.raises(FrameTooLarge) as caught:
        encode(weights, max_frame_bytes=1000)
    assert caught.value.limit == 1000
    assert caught.value.size == len(encode(weights))
    with pytest.raises(FrameTooLarge):
        encode(Shutdown(reason="x" * 200), max_header_bytes=100)
    assert decode(encode(weights, max_frame_bytes=2000)) == weights
    # a limit is the largest size allowed: a frame of exactly that size goes, one byte less does not
    size = len(encode(weights))
    assert encode(weights, max_frame_bytes=size) == encode(weights)
    with pytest.raises(FrameTooLarge, match=f"frame of {size} bytes is over the limit of {size - 1}"):
        encode(weights, max_frame_bytes=size - 1)
    shutdown = Shutdown(reason="x" * 200)
    header = len(encode(shutdown)) - PREFIX_BYTES
    assert encode(shutdown, max_header_bytes=header) == encode(shutdown)
    with pytest.raises(FrameTooLarge, match=f"header of {header} bytes is over the limit of {header - 1}"):
        encode(shutdown, max_header_bytes=header - 1)


def test_message_constructors_check_their_literals() -> None:
    with pytest.raises(ValueError, match="role"):
        Hello(role="boss", protocol=1, distrl_version="0", host="h", devices=(), compute={})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="base_version"):
        Weights(version=2, base_version=None, kind="diff", checksum="", blob=b"")
    with pytest.raises(ValueError, match="base_version"):
        Weights(version=2, base_version=1, kind="full", checksum="", blob=b"")


# -- decode refuses everything malformed -----------------------------------------------------------

_TASK = {
    "id": "t",
    "suite": "s",
    "goal": "g",
    "split": "train",
    "max_steps": 3,
    "params": {},
    "setup": [],
    "apps": [],
    "evaluator": "",
    "checks": [],
}
_OBS = {"screenshot": 0, "width": 10, "height": 20, "image_format": "png", "timestamp_s": 0.0}
_TAP = {"kind": "action", "type": 4, "touch": [0.5, 0.5], "lift": [0.5, 0.5], "text": ""}
_STEP = {
    "index": 0,
    "observation": _OBS,
    "output": "tap",
    "action": _TAP,
    "policy_version": 0,
    "behaviour_logprob": -1.0,
    "reward": 0.0,
    "duration_s": 0.1,
}


def _step_report(**changes: Any) -> dict[str, Any]:
    return {"type": "step_report", "id": 1, "att": [3], "episode_id": "e", "step": {**_STEP, **changes}}


def test_the_hand_built_frames_below_are_valid() -> None:
    message = decode(_frame(_step_report(), b"png"))
    assert isinstance(message, StepReport)
    assert message.step.observation.screenshot == b"png"
    assert decode(_frame({"type": "shutdown", "id": 0, "att": [], "reason": "done"})) == Shutdown(
        reason="done"
    )


@pytest.mark.parametrize(
    ("frame", "needle"),
    [
        (b"", "prefix"),
        (b"DRL\x01\x00\x00", "prefix"),
        (b"XYZ\x01" + bytes(8), "DRL"),
        (_frame({"type": "shutdown", "id": 0, "att": [], "reason": "x"}) + b"!", "follow"),
        (MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 5, 0) + b"[1,2]", "must be an object"),
        (MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 3, 0) + b"{,}", "not JSON"),
        (MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 2, 0) + b"\xff\xfe", "not JSON"),
        (MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 0, 0), "not JSON"),
        (_frame({"type": "launch", "id": 0, "att": []}), "not a known message type"),
        (_frame({"type": "shutdown", "att": [], "reason": "x"}), "header.id is missing"),
        (_frame({"type": "shutdown", "id": -1, "att": [], "reason": "x"}), "header.id must be >= 0"),
        (_frame({"type": "shutdown", "id": True, "att": [], "reason": "x"}), "not a boolean"),
        (_frame({"type": "shutdown", "id": 1.0, "att": [], "reason": "x"}), "integer"),
        (_frame({"type": "shutdown", "id": 2**63, "att": [], "reason": "x"}), "signed 64-bit"),
        (_frame(b'{"type":"shutdown","id":18446744073709551616,"att":[],"reason":"x"}'), "integer"),
        (_frame({"type": "shutdown", "id": 0, "reason": "x"}), "header.att is missing"),
        (_frame({"type": "shutdown", "id": 0, "att": [], "reason": 5}), "header.reason must be a string"),
        (_frame({"type": "shutdown", "id": 0, "att": [], "reason": "x", "why": 1}), "unknown field"),
        (_frame({"type": "shutdown", "id": 0, "att": [1], "reason": "x"}), "att sums to 1"),
        (_frame({"type": "shutdown", "id": 0, "att": [1], "reason": "x"}, b"!"), "no field uses"),
        (_frame({"type": "shutdown", "id": 0, "att": [-1, 2], "reason": "x"}, b"!"), ">= 0"),
        (_frame({"type": "ack", "id": 0, "att": [], "ref": 1, "ok": 1, "detail": ""}), "header.ok"),
        (_frame({**_step_report(), "att": [1, 2]}, b"png"), "no field uses"),
        (_frame({**_step_report(), "att": []}), "refers to attachment 0, but the frame has 0"),
        (_frame(_step_report(observation={**_OBS, "screenshot": "0"}), b"png"), "screenshot must be an int"),
        (_frame(_step_report(observation={**_OBS, "screenshot": 1}), b"png"), "refers to attachment 1"),
        (_frame(_step_report(index=True), b"png"), "step.index must be an integer"),
        (_frame(_step_report(reward="1"), b"png"), "step.reward must be a number"),
        (_frame(_step_report(reward=None), b"png"), "step.reward must be a number"),
        (_frame(_step_report(extra=1), b"png"), "header.step has unknown field"),
        (_frame(_step_report(action={**_TAP, "lift": None}), b"png"), "not a valid action"),
        (_frame(_step_report(action={**_TAP, "touch": [0.5, 2.0]}), b"png"), "not a valid action"),
        (_frame(_step_report(action={**_TAP, "touch": [0.5]}), b"png"), "touch must be null or"),
        (_frame(_step_report(action={**_TAP, "type": 99}), b"png"), "not an AitW action type"),
        (_frame(_step_report(action={**_TAP, "kind": "maybe"}), b"png"), "action.kind must be"),
        (_frame(_step_report(action={"kind": "invalid", "text": "x"}), b"png"), "action.reason is missing"),
        (
            _frame(
                {
                    "type": "episode_request",
                    "id": 0,
                    "att": [],
                    "episode_id": "e",
                    "device": "d",
                    "task": {**_TASK, "params": {"a": [1]}},
                }
            ),
            "task.params.a",
        ),
        (
            _frame(
                {
                    "type": "weights",
                    "id": 0,
                    "att": [1],
                    "version": 1,
                    "base_version": None,
                    "kind": "diff",
                    "checksum": "",
                    "blob": 0,
                },
                b"w",
            ),
            "base_version",
        ),
        (
            _frame(
                {
                    "type": "hello",
                    "id": 0,
                    "att": [],
                    "role": "boss",
                    "protocol": 1,
                    "distrl_version": "0",
                    "host": "h",
                    "devices": [],
                    "compute": {},
                    "device_settings": "",
                    "run_folder": "",
                }
            ),
            "role",
        ),
        (
            _frame(
                {
                    "type": "error_report",
                    "id": 0,
                    "att": [],
                    "ref": 0,
                    "error": {"type": "WireError", "message": "m", "fields": {"reason": {}}},
                }
            ),
            "error.fields.reason",
        ),
    ],
)
def test_decode_refuses_malformed_frames_with_a_reason(frame: bytes, needle: str) -> None:
    with pytest.raises(WireError) as caught:
        decode(frame)
    assert needle in str(caught.value)
    assert caught.value.reason is not None


def test_decode_and_encode_say_exactly_what_is_wrong() -> None:
    frame = encode(Heartbeat(seq=1, sent_at_s=0.0))
    with pytest.raises(TruncatedFrame) as cut:
        decode(frame[:-1])
    assert str(cut.value) == f"the frame announces {len(frame)} bytes, got {len(frame) - 1}"
    with pytest.raises(WireError) as overlong:
        decode(frame + b"xy")
    assert str(overlong.value) == "2 bytes follow the end of the frame"
    with pytest.raises(WireError) as negative:
        decode(_frame({"type": "shutdown", "id": 0, "att": [2, -1], "reason": "x"}, b"!"))
    assert "header.att[1] must be >= 0" in str(negative.value)
    with pytest.raises(WireError) as unsendable:
        encode(Heartbeat(seq=1, sent_at_s=0.0, id=-1))
    assert str(unsendable.value) == "Heartbeat.id must be >= 0, not -1"


def test_an_attachment_used_twice_is_refused() -> None:
    trajectory: dict[str, Any] = {
        "id": "x",
        "task": _TASK,
        "host": "h",
        "device": "d",
        "steps": [_STEP],
        "final_observation": _OBS,
        "end_reason": "complete",
        "success": None,
        "verdict": "",
        "started_at_s": 0,
        "duration_s": 0,
        "temperature": None,
        "group": "",
    }
    header = {"type": "trajectory_report", "id": 0, "att": [3], "trajectory": trajectory}
    with pytest.raises(WireError, match="already uses"):
        decode(_frame(header, b"png"))
    header["att"] = [1, 2]
    trajectory["final_observation"] = {**_OBS, "screenshot": 1}
    assert isinstance(decode(_frame(header, b"png")), TrajectoryReport)
    trajectory["end_reason"] = "bored"
    with pytest.raises(WireError, match="not an end reason"):
        decode(_frame(header, b"png"))


def test_decode_checks_the_prefix_before_the_body() -> None:
    huge = MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 10, 2**31)
    with pytest.raises(FrameTooLarge) as caught:
        decode(huge)
    assert (caught.value.size, caught.value.limit) == (PREFIX_BYTES + 10 + 2**31, distrl.wire.MAX_FRAME_BYTES)
    with pytest.raises(FrameTooLarge) as caught:
        decode(MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 2**21, 0))
    assert (caught.value.size, caught.value.limit) == (2**21, distrl.wire.MAX_HEADER_BYTES)
    frame = encode(Shutdown(reason="bye"))
    with pytest.raises(FrameTooLarge):
        decode(frame, max_frame_bytes=len(frame) - 1)
    with pytest.raises(FrameTooLarge):
        decode(frame, max_header_bytes=len(frame) - PREFIX_BYTES - 1)
    with pytest.raises(ProtocolMismatch) as mismatch:
        decode(_frame({"type": "shutdown"}, version=PROTOCOL_VERSION + 1))
    assert (mismatch.value.ours, mismatch.value.theirs) == (PROTOCOL_VERSION, PROTOCOL_VERSION + 1)
    with pytest.raises(TruncatedFrame) as truncated:
        decode(frame[:-3])
    assert (truncated.value.expected, truncated.value.received) == (len(frame), len(frame) - 3)


def test_equal_messages_encode_to_identical_bytes() -> None:
    def hello(compute: dict[str, Any]) -> Hello:
        return Hello(role="worker", protocol=1, distrl_version="0", host="h", devices=(), compute=compute)

    assert encode(hello({"b": 1, "a": "x"})) == encode(hello({"a": "x", "b": 1}))
    assert encode(Heartbeat(seq=1, sent_at_s=2)) == encode(Heartbeat(seq=1, sent_at_s=2.0))


def test_an_unexpected_error_while_decoding_becomes_a_wire_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one boundary: even a failure this module did not foresee reaches the caller as a WireError."""
    frame = encode(EpisodeRequest(episode_id="e", device="d", task=_trajectory().task))

    def broken_task(**fields: object) -> Task:
        raise TypeError("surprise")

    monkeypatch.setattr(distrl.records.forms, "Task", broken_task)
    with pytest.raises(WireError, match="surprise") as caught:
        decode(frame)
    assert isinstance(caught.value.__cause__, TypeError)


def test_decode_takes_bytearray_and_memoryview() -> None:
    frame = encode(TrajectoryReport(trajectory=_trajectory()))
    assert decode(bytearray(frame)) == decode(memoryview(frame)) == decode(frame)


# -- fuzz -------------------------------------------------------------------------------------------


@given(st.binary(max_size=200))
@example(MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 2, 0) + b"{}")
def test_decode_of_any_bytes_is_a_message_or_a_wire_error(data: bytes) -> None:
    _check_consistent(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | finite | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(json_values, st.binary(max_size=16))
def test_decode_of_any_json_header_is_a_message_or_a_wire_error(header: object, attachments: bytes) -> None:
    _check_consistent(_frame(header, attachments))


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    frame = bytearray(encode(draw(messages)))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, max(len(frame) - 1, 0)))
        match draw(st.sampled_from(["flip", "insert", "delete", "truncate", "set"])):
            case "flip" if frame:
                frame[position] ^= 1 << draw(st.integers(0, 7))
            case "insert":
                frame[position:position] = draw(st.binary(min_size=1, max_size=4))
            case "delete":
                del frame[position : position + draw(st.integers(1, 4))]
            case "truncate":
                del frame[position:]
            case "set" if frame:
                frame[position] = draw(st.integers(0, 255))
    return bytes(frame)


@given(mutated_frames())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_mutated_frames_decode_consistently_or_raise_wire_error(frame: bytes) -> None:
    _check_consistent(frame)


Path_ = tuple[str | int, ...]
_FREE_FORM = {"params", "compute", "fields"}
"""Header objects whose keys are data, not a schema: adding or removing keys there can be valid."""
_FIXED_ARRAYS = {"att", "touch", "lift", "steps"}
"""Arrays that cannot lose or gain an entry: a point has two values, an attachment is used once."""
_ONE_OF_EACH_KIND: list[object] = [None, True, 7, 0.5, "text", [], {}, [1, 2]]


@dataclass(frozen=True)
class _Edit:
    operation: str
    path: Path_
    value: object
    must_fail: bool
    """True where the edit makes the frame invalid; otherwise it must decode consistently."""


def _paths(value: object, path: Path_ = ()) -> list[Path_]:
    found: list[Path_] = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _get(value: Any, path: Path_) -> Any:
    for key in path:
        value = value[key]
    return value


def _free_form(path: Path_) -> bool:
    return bool(path) and path[-1] in _FREE_FORM


def _edits(header: dict[str, Any]) -> list[_Edit]:
    """Every single edit of ``header``'s JSON, and whether it must make the frame invalid.

    Every field is required, no field may be added, each field has one JSON type (an integer may stand
    for a number; null is valid where a field is optional, so that case is checked for consistency),
    and the attachment lengths must add up.
    """
    edits = []
    for path in _paths(header):
        value = _get(header, path)
        if isinstance(value, dict):
            edits.append(_Edit("add", path, 1, not _free_form(path)))
        if not path:
            continue
        where = path[:-1]
        container = _get(header, where)
        in_schema = not _free_form(where)
        removal_breaks = in_schema if isinstance(container, dict) else where[-1] in _FIXED_ARRAYS
        edits.append(_Edit("remove", path, None, removal_breaks))
        if isinstance(value, list):
            edits.append(_Edit("append", path, value[-1] if value else 0, path[-1] in _FIXED_ARRAYS))
        if path[-1] in ("screenshot", "blob"):
            for other in range(len(header["att"]) + 1):
                if other != value:  # another field's attachment, or one past the end
                    edits.append(_Edit("set", path, other, True))
        for new in _ONE_OF_EACH_KIND:
            if type(new) is not type(value) or new == [1, 2]:
                # a null field is an optional one, whose type the header does not show: a value there is
                # checked for consistency only (``success`` may be true, ``final_observation`` an object)
                refused = (
                    in_schema
                    and new is not None
                    and value is not None
                    and not (type(value) is float and type(new) is int)
                )
                edits.append(_Edit("set", path, new, refused))
    for index, _ in enumerate(header["att"]):
        edits.append(_Edit("set", ("att", index), header["att"][index] + 1, True))
        if index:
            edits.append(_Edit("swap", ("att", index), None, False))
    return edits


def _apply(header: dict[str, Any], edit: _Edit) -> dict[str, Any]:
    edited = copy.deepcopy(header)
    container, key = _get(edited, edit.path[:-1]), edit.path[-1] if edit.path else None
    match edit.operation:
        case "add":
            _get(edited, edit.path)["unexpected_field"] = edit.value
        case "remove":
            del container[key]
        case "append":
            _get(edited, edit.path).append(edit.value)
        case "set":
            container[key] = edit.value
        case "swap":
            assert isinstance(key, int)
            container[key - 1], container[key] = container[key], container[key - 1]
    return edited


def _check_edit(frame: bytes, edit: _Edit) -> None:
    edited = _frame(_apply(_header(frame), edit), _attachments(frame))
    if edit.must_fail:
        with pytest.raises(WireError):
            decode(edited)
    else:
        _check_consistent(edited)


@pytest.mark.parametrize(
    "message", _sample_messages(screen_bytes=8, blob_bytes=8), ids=lambda m: type(m).__name__
)
def test_every_single_header_edit_is_refused_or_decodes_consistently(message: Message) -> None:
    frame = encode(message)
    edits = _edits(_header(frame))
    assert any(edit.must_fail for edit in edits)
    for edit in edits:
        _check_edit(frame, edit)


@given(messages, st.data())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_random_header_edits_are_refused_or_decode_consistently(
    message: Message, data: st.DataObject
) -> None:
    frame = encode(message)
    _check_edit(frame, data.draw(st.sampled_from(_edits(_header(frame))), label="edit"))


# -- streams ----------------------------------------------------------------------------------------


class _MemoryByteSendStream(ByteSendStream):
    """A byte send stream over a memory object stream, for tests without sockets."""

    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _memory_pipe(buffer: float = 4) -> tuple[_MemoryByteSendStream, BufferedByteReceiveStream]:
    send, receive = anyio.create_memory_object_stream[bytes](buffer)
    return _MemoryByteSendStream(send), BufferedByteReceiveStream(receive)


@asynccontextmanager
async def _connected(transport: str) -> AsyncIterator[tuple[FrameStream, ByteStream]]:
    """A FrameStream and the raw byte stream of its peer, over ``transport``."""
    if transport == "tcp":
        async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            accept = cast(SocketListener, listener.listeners[0]).accept
            async with await anyio.connect_tcp("127.0.0.1", port) as client, await accept() as server:
                yield FrameStream(client), server
    else:
        to_peer, from_us = _memory_pipe()
        to_us, from_peer = _memory_pipe()
        ours = FrameStream.from_pair(receive=from_peer, send=to_peer)
        async with ours, StapledByteStream(send_stream=to_us, receive_stream=from_us) as peer:
            yield ours, peer


transports = pytest.mark.parametrize("transport", ["tcp", "memory"])


@pytest.mark.anyio
@transports
async def test_many_messages_arrive_in_order_and_iteration_ends_at_eof(transport: str) -> None:
    sent = _sample_messages() * 10
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer), anyio.create_task_group() as tg:
            theirs = FrameStream(peer)

            async def send_all() -> None:
                for message in sent:
                    await theirs.send(message)
                await theirs.send_eof()

            tg.start_soon(send_all)
            received = [message async for message in ours]
            assert received == sent
            with pytest.raises(anyio.EndOfStream):
                await ours.receive()


@pytest.mark.anyio
@transports
async def test_concurrent_senders_never_interleave_frames(transport: str) -> None:
    senders, each = 6, 5

    def message(sender: int, i: int) -> Weights:
        blob = bytes([sender]) * (1_200_000 + i)  # over the single-write size: sent in parts
        return Weights(version=sender * 100 + i, base_version=None, kind="full", checksum="", blob=blob)

    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer), anyio.create_task_group() as tg:
            theirs = FrameStream(peer)

            async def send(sender: int) -> None:
                for i in range(each):
                    await theirs.send(message(sender, i))

            async def send_all() -> None:
                async with anyio.create_task_group() as senders_tg:
                    for sender in range(senders):
                        senders_tg.start_soon(send, sender)
                await theirs.send_eof()

            tg.start_soon(send_all)
            received = [m async for m in ours]
    weights = [m for m in received if isinstance(m, Weights)]
    assert len(weights) == len(received) == senders * each
    assert sorted(weights, key=lambda m: m.version) == [
        message(s, i) for s in range(senders) for i in range(each)
    ]
    for sender in range(senders):
        mine = [m.version for m in received if isinstance(m, Weights) and m.version // 100 == sender]
        assert mine == sorted(mine)


@pytest.mark.anyio
@transports
@pytest.mark.parametrize("cut", [5, PREFIX_BYTES, 40])
async def test_a_stream_that_ends_inside_a_frame_is_truncated(transport: str, cut: int) -> None:
    frame = encode(StepReport(episode_id="e", step=_trajectory().steps[0]))
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            await peer.send(encode(Heartbeat(seq=1, sent_at_s=0.0)) + frame[:cut])
            await peer.send_eof()
            assert await ours.receive() == Heartbeat(seq=1, sent_at_s=0.0)
            with pytest.raises(TruncatedFrame) as caught:
                await ours.receive()
    expected = PREFIX_BYTES if cut < PREFIX_BYTES else len(frame)
    assert (caught.value.expected, caught.value.received) == (expected, cut)
    said = f"the stream ended {cut} bytes into a frame of {expected} bytes"
    assert (str(caught.value), caught.value.reason) == (said, said)


@pytest.mark.anyio
@transports
async def test_an_oversized_frame_is_refused_from_its_prefix_alone(transport: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            # announce 3 GiB and send nothing more: waiting for the body would hang until the timeout
            await peer.send(MAGIC + struct.pack(">BII", PROTOCOL_VERSION, 100, 3 * 2**30))
            with pytest.raises(FrameTooLarge) as caught:
                await ours.receive()
            assert caught.value.limit == distrl.wire.MAX_FRAME_BYTES
            assert caught.value.size == PREFIX_BYTES + 100 + 3 * 2**30
            with pytest.raises(anyio.BrokenResourceError):
                await ours.receive()


@pytest.mark.anyio
async def test_stream_limits_are_the_streams_own() -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with _connected("memory") as (ours, peer):
            small = FrameStream(peer, max_frame_bytes=1000)
            big = Weights(version=1, base_version=None, kind="full", checksum="", blob=bytes(2000))
            with pytest.raises(FrameTooLarge):
                await small.send(big)
            await FrameStream(peer).send(big)
            ours.max_frame_bytes = 1000
            with pytest.raises(FrameTooLarge):
                await ours.receive()


@pytest.mark.anyio
@transports
async def test_another_protocol_version_is_a_mismatch(transport: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            await peer.send(_frame({"type": "heartbeat"}, version=PROTOCOL_VERSION + 1))
            with pytest.raises(ProtocolMismatch) as caught:
                await ours.receive()
    assert (caught.value.ours, caught.value.theirs) == (PROTOCOL_VERSION, PROTOCOL_VERSION + 1)
    said = f"the peer speaks protocol version {PROTOCOL_VERSION + 1}, this side {PROTOCOL_VERSION}"
    assert (str(caught.value), caught.value.reason) == (said, said)


@pytest.mark.anyio
@transports
async def test_a_frame_with_a_bad_header_is_refused_and_the_next_one_read(transport: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            await peer.send(_frame({"type": "shutdown", "id": 0, "att": [], "reason": 1}))
            await peer.send(encode(Shutdown(reason="done")))
            with pytest.raises(WireError, match="reason"):
                await ours.receive()
            assert await ours.receive() == Shutdown(reason="done")


@pytest.mark.anyio
@transports
async def test_a_non_finite_float_is_refused_before_anything_is_written(transport: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            theirs = FrameStream(peer)
            with pytest.raises(WireError, match=r"sent_at_s .*non-finite"):
                await theirs.send(Heartbeat(seq=1, sent_at_s=math.nan))
            await theirs.send(Heartbeat(seq=2, sent_at_s=2.0))
            assert await ours.receive() == Heartbeat(seq=2, sent_at_s=2.0)


@pytest.mark.anyio
@transports
async def test_a_cancelled_receive_loses_nothing(transport: str) -> None:
    message = TrajectoryReport(trajectory=_trajectory(screen_bytes=1000))
    frame = encode(message)
    with anyio.fail_after(TIMEOUT_S):
        async with _connected(transport) as (ours, peer):
            for cut in (5, len(frame) // 2):
                await peer.send(frame[:cut])
                with anyio.move_on_after(0.05) as scope:
                    await ours.receive()
                assert scope.cancelled_caught
                await peer.send(frame[cut:])
                assert await ours.receive() == message


@pytest.mark.anyio
async def test_a_send_cancelled_mid_frame_breaks_later_sends() -> None:
    to_peer, from_us = _memory_pipe(buffer=0)
    unused_send, unused_receive = _memory_pipe()
    ours = FrameStream.from_pair(receive=unused_receive, send=to_peer)
    big = Weights(version=1, base_version=None, kind="full", checksum="", blob=bytes(2_000_000))
    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ours.send, big)
            assert (await from_us.receive(PREFIX_BYTES)).startswith(MAGIC)  # the first part is out
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        with pytest.raises(anyio.BrokenResourceError):
            await ours.send(Heartbeat(seq=1, sent_at_s=0.0))
        await ours.aclose()
        await from_us.aclose()
        await unused_send.aclose()


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("cat") is None, reason="needs the cat program")
async def test_a_subprocess_pipe_pair_carries_frames() -> None:
    """Frames out through ``cat``'s stdin and back from its stdout: two one-way pipes, one FrameStream."""
    sent = _sample_messages()
    with anyio.fail_after(TIMEOUT_S):
        async with await anyio.open_process(["cat"]) as process, anyio.create_task_group() as tg:
            assert process.stdin is not None
            assert process.stdout is not None
            stream = FrameStream.from_pair(receive=process.stdout, send=process.stdin)

            async def send_all() -> None:
                for message in sent:
                    await stream.send(message)
                await stream.send_eof()

            tg.start_soon(send_all)
            assert [message async for message in stream] == sent
            await stream.aclose()


def test_an_error_report_carries_the_error_by_class_name() -> None:
    frame = encode(ErrorReport(ref=0, error=DistrlError("plain")))
    assert _header(frame)["error"] == {"type": "DistrlError", "message": "plain", "fields": {}}


def test_decode_takes_a_strided_memoryview() -> None:
    frame = encode(Heartbeat(seq=1, sent_at_s=2.5))
    doubled = bytes(b for byte in frame for b in (byte, 0))
    assert decode(memoryview(doubled)[::2]) == decode(frame)


def test_an_error_report_with_a_field_its_class_lacks_is_refused() -> None:
    header = _header(encode(ErrorReport(ref=1, error=DistrlError("x"))))
    header["error"] = {"type": "ConfigError", "message": "m", "fields": {"path": "a", "colour": "red"}}
    with pytest.raises(WireError, match="colour is not a field of ConfigError"):
        decode(_frame(header))
    header["error"]["fields"] = {"path": "a"}
    report = decode(_frame(header))
    assert isinstance(report, ErrorReport)
    assert isinstance(report.error, ConfigError)


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["frame", "header"])
async def test_a_stream_from_a_pair_keeps_the_limits_it_was_given(limit: str) -> None:
    """A worker reads the learner from a pipe pair: the limits given to ``from_pair`` are the ones it
    enforces, whatever the defaults."""
    to_ours, from_peer = anyio.create_memory_object_stream[bytes](16)
    to_peer, _unused = anyio.create_memory_object_stream[bytes](16)
    frame = encode(StepReport(episode_id="e" * 500, step=_trajectory().steps[0]))
    header_bytes = struct.unpack(">BII", frame[len(MAGIC) : PREFIX_BYTES])[1]
    limits = (
        {"max_frame_bytes": len(frame) - 1} if limit == "frame" else {"max_header_bytes": header_bytes - 1}
    )
    ours = FrameStream.from_pair(receive=_BytesFrom(from_peer), send=_BytesTo(to_peer), **limits)
    await to_ours.send(frame)
    with anyio.fail_after(TIMEOUT_S), pytest.raises(FrameTooLarge):
        await ours.receive()


class _BytesFrom(ByteReceiveStream):
    """A byte stream over a memory object stream of chunks, at most ``max_bytes`` a read."""

    def __init__(self, source: MemoryObjectReceiveStream[bytes]) -> None:
        self._source = source
        self._left = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._left:
            self._left = await self._source.receive()
        chunk, self._left = self._left[:max_bytes], self._left[max_bytes:]
        return chunk

    async def aclose(self) -> None:
        await self._source.aclose()


class _BytesTo(ByteSendStream):
    """A byte stream into a memory object stream, a chunk a send."""

    def __init__(self, sink: MemoryObjectSendStream[bytes]) -> None:
        self._sink = sink

    async def send(self, item: bytes) -> None:
        await self._sink.send(item)

    async def aclose(self) -> None:
        await self._sink.aclose()
