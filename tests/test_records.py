"""Records validate what they hold and derive what they promise."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from dataclasses import replace
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


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (
            {"reward": math.nan},
            "reward is nan, and non-finite floats cannot be sent as JSON",
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
