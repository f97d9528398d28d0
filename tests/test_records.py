"""Records validate what they hold and derive what they promise."""

from __future__ import annotations

import pytest

from distrl.records import (
    Action,
    ActionType,
    CollectionStats,
    EndReason,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
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
