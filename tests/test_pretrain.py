"""Demonstrations for behaviour cloning: the expert's episodes, with a controlled share of mistakes."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from distrl.actions import format_action, parse_action
from distrl.pretrain import demonstrations
from distrl.records import ActionType
from distrl.sim.suites import tasks


def test_without_mistakes_every_demonstration_succeeds_and_ends_with_done() -> None:
    episodes = list(demonstrations("general", episodes=12, mistake_rate=0.0, seed=1, width=270, height=600))
    assert len(episodes) == 12
    train = {t.id for t in tasks("general", "train")}
    for episode in episodes:
        assert episode.success, episode.task.id
        assert episode.task.id in train
        assert episode.steps[-1].action.type is ActionType.STATUS_TASK_COMPLETE
        assert not any(step.mistake for step in episode.steps)
        for i, step in enumerate(episode.steps):
            assert len(step.history) == i
            assert parse_action(format_action(step.action)) == step.action
    first = episodes[0].steps[0].observation
    assert Image.open(io.BytesIO(first.screenshot)).size == (270, 600) == (first.width, first.height)


def test_mistakes_come_at_the_asked_rate_and_cost_successes() -> None:
    episodes = list(demonstrations("general", episodes=40, mistake_rate=0.3, seed=2, width=270, height=600))
    steps = [step for episode in episodes for step in episode.steps]
    share = sum(step.mistake for step in steps) / len(steps)
    assert 0.2 < share < 0.4
    assert 0 < sum(e.success for e in episodes) < len(episodes)
    kinds = {step.action.type for step in steps if step.mistake}
    assert ActionType.DUAL_POINT in kinds
    assert kinds & {ActionType.PRESS_BACK, ActionType.PRESS_HOME, ActionType.STATUS_TASK_COMPLETE}


def test_same_seed_same_demonstrations_and_the_test_split_on_request() -> None:
    def run(seed: int) -> list[tuple[str, tuple[str, ...]]]:
        return [
            (e.task.id, tuple(format_action(s.action) for s in e.steps))
            for e in demonstrations(
                "web_shopping", episodes=3, mistake_rate=0.2, seed=seed, split="test", width=270, height=600
            )
        ]

    assert run(5) == run(5)
    assert run(5) != run(6)
    assert all(task_id.startswith("web_shopping/") for task_id, _ in run(5))
    test_ids = {t.id for t in tasks("web_shopping", "test")}
    assert {task_id for task_id, _ in run(5)} <= test_ids


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"mistake_rate": 1.5}, "mistake_rate"), ({"episodes": -1}, "episodes"), ({"split": "dev"}, "no 'dev'")],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"episodes": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        next(demonstrations("general", **args))  # type: ignore[arg-type]
