"""Records validate what they hold and derive what they promise."""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from distrl.records import (
    Action,
    ActionType,
    CollectionStats,
    DocumentError,
    EndReason,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
)
from distrl.records.forms import (
    Inbox,
    Outbox,
    pack_trajectory,
    trajectory_from_json,
    trajectory_to_json,
    unpack_trajectory,
)

SCREEN = Observation(screenshot=b"\x89PNG", width=1080, height=2400)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"type": ActionType.DUAL_POINT, "touch": (0.5, 0.5)}, "both touch and lift"),
        ({"type": ActionType.DUAL_POINT, "touch": (0.5, 1.5), "lift": (0.5, 0.5)}, "touch point"),
        ({"type": ActionType.DUAL_POINT, "touch": (0.5, 0.5), "lift": (float("nan"), 0.5)}, "lift point"),
        ({"type": ActionType.PRESS_HOME, "touch": (0.5, 0.5)}, "takes no points"),
        ({"type": ActionType.TYPE}, "non-empty text"),
        ({"type": ActionType.PRESS_ENTER, "text": "x"}, "takes no text"),
    ],
)
def test_action_rejects_impossible_combinations(kwargs: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Action(**kwargs)  # type: ignore[arg-type]


def test_an_action_type_is_an_action_type() -> None:
    """Were accepted: an action no device could play, and a plain int that no ``is`` test matched."""
    with pytest.raises(
        TypeError, match=r"type must be an ActionType \(TYPE = 3, DUAL_POINT = 4, .*\), not 99"
    ):
        Action(type=99)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"type must be an ActionType .*, not 5"):
        Action(type=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"max_steps": -3}, "task 'g/1': max_steps must be a whole number of steps, 0 or more, not -3"),
        ({"max_steps": 2.5}, "task 'g/1': max_steps must be a whole number of steps, 0 or more, not 2.5"),
        ({"max_steps": True}, "task 'g/1': max_steps must be a whole number of steps, 0 or more, not True"),
    ],
)
def test_a_task_built_in_python_is_checked_as_a_task_file_is(changes: dict[str, object], said: str) -> None:
    """A step limit of -3 was taken: every episode of it ended before its first step."""
    with pytest.raises(ValueError, match=re.escape(said)):
        Task(id="g/1", suite="g", goal="Open the clock", **changes)  # type: ignore[arg-type]
    assert Task(id="g/1", suite="g", goal="Open the clock", max_steps=0).max_steps == 0
    # an evaluator a package registers is any name (distrl.tasks.registry): the run resolves it
    assert Task(id="g/1", suite="g", goal="Open the clock", evaluator="oracle").evaluator == "oracle"


def test_valid_actions_and_episode_enders() -> None:
    tap = Action(type=ActionType.DUAL_POINT, touch=(0.0, 1.0), lift=(0.0, 1.0))
    assert tap.touch == (0.0, 1.0)
    assert Action(type=ActionType.TYPE, text="hello").text == "hello"
    assert ActionType.STATUS_TASK_COMPLETE.ends_episode
    assert ActionType.STATUS_TASK_IMPOSSIBLE.ends_episode
    assert not ActionType.PRESS_BACK.ends_episode
    assert int(ActionType.PRESS_ENTER) == 7  # AitW ids


def _step(index: int, version: int, reward: float, action: Action | InvalidAction) -> Step:
    return Step(
        index=index,
        observation=SCREEN,
        output="...",
        action=action,
        policy_version=version,
        behaviour_logprob=-1.5,
        reward=reward,
    )


def test_trajectory_totals_and_versions() -> None:
    home = Action(type=ActionType.PRESS_HOME)
    bad = InvalidAction(text="???", reason="no action type")
    trajectory = Trajectory(
        id="t1",
        task=Task(id="general/0", suite="general", goal="Open the clock"),
        host="local",
        device="sim-0",
        steps=(_step(0, 3, 0.0, home), _step(1, 4, -1.0, bad), _step(2, 3, 1.0, home)),
        final_observation=SCREEN,
        end_reason=EndReason.COMPLETE,
        success=True,
    )
    assert trajectory.total_reward == 0.0
    assert trajectory.policy_versions == (3, 4)


def test_collection_stats_add_and_rates() -> None:
    a = CollectionStats(trajectories=3, steps=20, successes=1, elapsed_s=60.0)
    b = CollectionStats(trajectories=1, steps=5, successes=1, invalid_actions=2, elapsed_s=90.0)
    total = a + b
    assert (total.trajectories, total.steps, total.successes, total.invalid_actions) == (4, 25, 2, 2)
    assert total.elapsed_s == 90.0  # concurrent collectors: the longest, not the sum
    assert total.success_rate == 0.5
    assert total.trajectories_per_hour == pytest.approx(160.0)
    assert CollectionStats().success_rate == 0.0
    assert CollectionStats().trajectories_per_hour == 0.0


# -- the JSON form (records/forms.py) ----------------------------------------------------------------


def _trajectory(final: Observation | None = SCREEN) -> Trajectory:
    other = Observation(screenshot=b"\xff\xd8jpeg", width=2, height=3, image_format="jpeg", timestamp_s=1.5)
    tap = Action(type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.75, 0.5))
    steps = (
        _step(0, 3, 0.0, tap),
        replace(_step(1, 4, 1.0, InvalidAction(text="tap(", reason="unclosed")), observation=other),
        _step(2, 4, 0.5, Action(type=ActionType.TYPE, text="héllo")),
    )
    task = Task(id="t", suite="general", goal="open settings", max_steps=5, params={"b": 1, "a": "x"})
    return Trajectory(
        id="e",
        task=task,
        host="h",
        device="d",
        steps=steps,
        final_observation=final,
        end_reason=EndReason.COMPLETE,
        success=True,
    )


@pytest.mark.parametrize("final", [SCREEN, None])
def test_a_packed_trajectory_unpacks_to_an_equal_one(final: Observation | None) -> None:
    trajectory = _trajectory(final)
    packed = pack_trajectory(trajectory)
    assert unpack_trajectory(packed) == trajectory
    assert unpack_trajectory(memoryview(packed)) == trajectory
    assert pack_trajectory(unpack_trajectory(packed)) == packed


def test_a_trajectory_packed_before_it_kept_its_temperature_unpacks() -> None:
    """Replay buffers in checkpoints written before ``Trajectory.temperature``: resumed as not saying."""
    greedy = replace(_trajectory(), temperature=0.0)
    assert unpack_trajectory(pack_trajectory(greedy)).temperature == 0.0
    packed = pack_trajectory(_trajectory())
    (size,) = struct.unpack_from(">I", packed)
    form = orjson.loads(packed[4 : 4 + size])
    del form["trajectory"]["temperature"]
    data = orjson.dumps(form)
    older = struct.pack(">I", len(data)) + data + packed[4 + size :]
    assert unpack_trajectory(older) == _trajectory()


def test_screens_are_attachments_taken_once_each_not_json() -> None:
    outbox = Outbox()
    form = trajectory_to_json(_trajectory(), "t", outbox)
    assert outbox.blobs == [SCREEN.screenshot, b"\xff\xd8jpeg", SCREEN.screenshot, SCREEN.screenshot]
    assert [step["observation"]["screenshot"] for step in form["steps"]] == [0, 1, 2]  # type: ignore[attr-defined]
    data = b"".join(outbox.blobs)
    lengths = [len(blob) for blob in outbox.blobs]
    inbox = Inbox(data, lengths, "the test")
    assert trajectory_from_json(form, "t", inbox) == _trajectory()
    inbox.close("t.att")
    with pytest.raises(DocumentError, match=r"^t.steps\[0\].observation.screenshot refers to attachment 0, "):
        trajectory_from_json(form, "t", inbox)
    short = Inbox(data, lengths[:1], "the test")
    with pytest.raises(DocumentError, match=r"refers to attachment 1, but the test has 1$"):
        trajectory_from_json(form, "t", short)
    unused = Inbox(data + b"!", [*lengths, 1], "the test")
    trajectory_from_json(form, "t", unused)
    with pytest.raises(DocumentError, match=r"^t.att declares attachment\(s\) \[4\] that no field uses$"):
        unused.close("t.att")


def test_the_wire_the_replay_and_the_episodes_hold_one_form(tmp_path: Path) -> None:
    """A trajectory has one JSON form wherever it goes: a wire frame's header, a packed trajectory (the
    replay buffer, the ranks) and an episode's episode.json hold the same document, and each reads it back
    whole. A side with fields of its own fails here."""
    from distrl.episodes import EpisodeWriter, read_episode
    from distrl.wire import frames
    from distrl.wire.messages import TrajectoryReport

    jpeg = Observation(
        screenshot=b"\xff\xd8\xffscreen\xff\xd9", width=4, height=8, image_format="jpeg", timestamp_s=2.5
    )
    trajectory = replace(
        _trajectory(jpeg),  # JPEG screens: the store keeps them byte for byte
        steps=tuple(replace(step, observation=jpeg) for step in _trajectory().steps),
        temperature=0.5,
        group="g",
    )
    outbox = Outbox()
    form = trajectory_to_json(trajectory, "trajectory", outbox)

    packed = pack_trajectory(trajectory)
    (size,) = struct.unpack_from(">I", packed)
    assert orjson.loads(packed[4 : 4 + size])["trajectory"] == form
    assert unpack_trajectory(packed) == trajectory

    frame = frames.encode(TrajectoryReport(trajectory=trajectory, id=1))
    header_size = struct.unpack_from(">3sBII", frame)[2]
    assert orjson.loads(frame[frames.PREFIX_BYTES : frames.PREFIX_BYTES + header_size])["trajectory"] == form
    assert frames.decode(frame) == TrajectoryReport(trajectory=trajectory, id=1)

    folder = EpisodeWriter(tmp_path).write(trajectory)
    assert folder is not None
    document = json.loads((folder / "episode.json").read_text())
    assert document["trajectory"] == form
    assert [(folder / name).read_bytes() for name in document["screens"]] == outbox.blobs
    assert read_episode(folder) == trajectory


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (
            {"reward": math.nan},
            "reward is nan: a non-finite number, which JSON cannot hold",
        ),
        ({"policy_version": -1}, "policy_version must be >= 0, not -1"),
        (
            {"index": 2**63},
            "index is 9223372036854775808, outside the signed 64-bit range",
        ),
        ({"output": b"x"}, "output must be a string, not a bytes"),
        ({"action": "tap"}, "action must be Action or InvalidAction, not str"),
    ],
)
def test_a_value_with_no_json_form_is_named_by_its_path(broken: dict[str, object], said: str) -> None:
    trajectory = _trajectory()
    steps = list(trajectory.steps)
    steps[1] = replace(steps[1], **broken)  # type: ignore[arg-type]
    with pytest.raises(DocumentError) as caught:
        pack_trajectory(replace(trajectory, steps=tuple(steps)))
    assert str(caught.value) == f"trajectory.steps[1].{said}"
    assert isinstance(caught.value, ValueError)


def _repacked(packed: bytes, edit: Callable[[dict[str, Any]], object]) -> bytes:
    """``packed`` with its JSON edited in place by ``edit``."""
    (size,) = struct.unpack(">I", packed[:4])
    document = json.loads(packed[4 : 4 + size])
    edit(document)
    data = json.dumps(document).encode()
    return struct.pack(">I", len(data)) + data + packed[4 + size :]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda p: p[:3], "a packed trajectory needs 4 bytes, not 3"),
        (lambda p: p[:40], "its JSON claims"),
        (lambda p: p[:4] + b"[" + p[5:], "its JSON is not valid"),
        (lambda p: b"\x00\x00\x00\x02[]", "its JSON must be an object, not an array"),
        (lambda p: p[:-1], "att sums to"),
        (lambda p: p + b"!", "att sums to"),
        (lambda p: _repacked(p, lambda d: d.pop("att")), "att is missing"),
        (lambda p: _repacked(p, lambda d: d.update(extra=1)), "has unknown field(s) ['extra']"),
        (lambda p: _repacked(p, lambda d: d["trajectory"].pop("host")), "trajectory.host is missing"),
        (
            lambda p: _repacked(p, lambda d: d["trajectory"]["steps"][2]["action"].update(type=99)),
            "trajectory.steps[2].action.type is 99, not an AitW action type",
        ),
        (
            lambda p: _repacked(p, lambda d: d["trajectory"].update(end_reason="bored")),
            "trajectory.end_reason is 'bored', not an end reason",
        ),
        (
            lambda p: _repacked(p, lambda d: d["trajectory"]["task"]["params"].update(a=[1])),
            "trajectory.task.params.a must be a string, number or boolean, not an array",
        ),
        (lambda p: _repacked(p, lambda d: d.update(att=[*d["att"], 0])), "att declares attachment(s) [4]"),
    ],
)
def test_a_damaged_blob_is_a_document_error_saying_what(damage: Callable[[bytes], bytes], said: str) -> None:
    with pytest.raises(DocumentError) as caught:
        unpack_trajectory(damage(pack_trajectory(_trajectory())))
    assert said in str(caught.value)


def test_every_cut_of_a_blob_is_a_document_error() -> None:
    packed = pack_trajectory(_trajectory())
    for cut in range(len(packed)):
        with pytest.raises(DocumentError):
            unpack_trajectory(packed[:cut])


# -- the safetensors header (records/safetensors_header.py) ------------------------------------------


def _safetensors() -> bytes:
    import safetensors.torch
    import torch

    tensors = {
        "a": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "b": torch.ones(4, dtype=torch.bfloat16),
    }
    return safetensors.torch.save(tensors, metadata={"format": "x", "n": "1"})


def _with_header(header: object, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_a_safetensors_header_reads_with_its_tensors_and_metadata() -> None:
    from distrl.records.safetensors_header import TensorEntry, read_header

    blob = _safetensors()
    header = read_header(blob)
    assert header.metadata == {"format": "x", "n": "1"}
    assert header.tensors == {
        "a": TensorEntry(dtype="F32", shape=(2, 3), begin=0, end=24),
        "b": TensorEntry(dtype="BF16", shape=(4,), begin=24, end=32),
    }
    assert header.data_start == len(blob) - 32
    assert read_header(memoryview(blob)) == header
    assert read_header(_with_header({})).metadata == {}  # no tensors, no metadata


@pytest.mark.parametrize(
    ("blob", "reason", "said"),
    [
        (b"\x01\x00", "truncated", "2 bytes"),
        (struct.pack("<Q", 10) + b"{}", "truncated", "the header needs 10 bytes, 2 follow"),
        (struct.pack("<Q", 2**40), "corrupt", f"a header of {2**40} bytes"),
        (struct.pack("<Q", 2) + b"{]", "corrupt", "the header is not JSON"),
        (_with_header([]), "corrupt", "not a safetensors header: an array"),
        (_with_header({"__metadata__": {"n": 1}}), "corrupt", "__metadata__ is not a map of strings"),
        (_with_header({"t": 3}), "corrupt", "'t' is an integer, not a tensor's entry"),
        (_with_header({"t": {"dtype": "F32", "shape": [1]}}), "corrupt", "'t' has malformed data offsets"),
        (
            _with_header({"t": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}}),
            "corrupt",
            "dtype or shape",
        ),
        (
            _with_header({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"1234"),
            "corrupt",
            "ends (byte 0) before it begins (4)",
        ),
        (
            _with_header({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"12"),
            "truncated",
            "the tensors run past the end (4 bytes, 2 follow)",
        ),
        (
            _with_header({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"12345"),
            "corrupt",
            "1 bytes follow the tensors",
        ),
    ],
)
def test_a_malformed_safetensors_header_says_what_in_one_error(blob: bytes, reason: str, said: str) -> None:
    from distrl.records.safetensors_header import HeaderError, read_header

    with pytest.raises(HeaderError) as caught:
        read_header(blob)
    assert said in str(caught.value)
    assert caught.value.reason == reason


def test_the_weights_and_the_checkpoints_share_one_safetensors_header_reader() -> None:
    """No module but records/safetensors_header.py reads a safetensors header by hand (its length prefix),
    and both of its users call it."""
    import distrl

    package = Path(distrl.__file__).parent
    readers = sorted(
        str(path.relative_to(package)) for path in package.rglob("*.py") if '"<Q"' in path.read_text("utf-8")
    )
    assert readers == ["records/safetensors_header.py"]
    for user in ("weights/blobs.py", "learner/tensor_files.py"):
        assert "from distrl.records.safetensors_header import" in (package / user).read_text("utf-8")
