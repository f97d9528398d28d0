"""What the board writes to TensorBoard is true: no rate before there is one, no actor loss while only the
critics train, and the shutdown's snapshot does not read as hosts down and episodes failed."""

from __future__ import annotations

import collections
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from distrl.fleet.board import Board, Curves
from distrl.fleet.ledger import RunStats
from distrl.learner.core import UpdateReport
from distrl.learner.replay import ReplayStats


def _report(update: int, trained_steps: int) -> UpdateReport:
    return UpdateReport(
        update=update,
        trajectories=2,
        steps=10,
        trained_steps=trained_steps,
        actor_loss=0.0 if not trained_steps else 0.7,
        critic_loss=0.3,
        entropy=1.2,
        mean_rho=1.0,
        clipped_share=0.0,
        mean_advantage=0.1,
        mean_value=0.2,
        mean_priority=0.5,
        staleness=(0, 1),
        wall_s=0.1,
        kl=0.02 * update,
        losses={"surrogate": 0.5} if trained_steps else {},
        stats={"uniform_groups": 0.25 * update},
    )


def _replay(trajectories: int) -> ReplayStats:
    return ReplayStats(
        trajectories=trajectories,
        steps=5 * trajectories,
        screenshot_bytes=0,
        raw_screenshot_bytes=0,
        added=trajectories,
        evicted=0,
        dropped_stale=0,
        refused_empty=0,
        sampled=0,
        mean_priority=1.0,
        max_priority=1.0,
        oldest_version=0,
        beta=0.4,
    )


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    board = EventAccumulator(str(folder))
    board.Reload()  # TensorBoard's own reader
    return {tag: [(e.step, e.value) for e in board.Scalars(tag)] for tag in board.Tags()["scalars"]}


def test_the_board_writes_only_what_is_true(tmp_path: Path) -> None:
    now = [RunStats(hosts=2, hosts_up=2, handed_out=4)]
    curves = Curves(tmp_path, devices=4)
    board = Board(lambda: dataclasses.replace(now[0]), curves=curves)
    board.tick()  # nothing has come back yet
    curves.update(_report(1, trained_steps=0), _replay(2))  # warm-up
    curves.update(_report(2, trained_steps=8), _replay(4))
    now[0] = RunStats(
        hosts=2,
        hosts_up=2,
        handed_out=8,
        completed=4,
        successes=1,
        steps_streamed=30,
        recent=collections.deque([True, False] * 2),
        recent_greedy=collections.deque([True, True, False]),
    )
    board.tick()
    # the stop: hosts down, the episodes in flight stopped
    now[0] = dataclasses.replace(now[0], hosts_up=0, failed=collections.Counter(stopped=4, timeout=1))
    board.close()
    scalars = _scalars(tmp_path)
    assert set(scalars["collect/success_rate"]) == {(30, 0.25)}  # not a 0 before the first episode
    ((step, value), *_) = scalars["collect/greedy_success_rate_last_100"]
    assert step == 30
    assert value == pytest.approx(2 / 3)
    assert [step for step, _ in scalars["learner/actor_loss"]] == [2]  # not during the warm-up
    assert [step for step, _ in scalars["learner/critic_loss"]] == [1, 2]
    assert [step for step, _ in scalars["learner/kl"]] == [1, 2]  # the anchor's distance to the start
    assert [value for _, value in scalars["learner/kl"]] == pytest.approx([0.02, 0.04])
    assert scalars["learner/loss/surrogate"] == [(2, 0.5)]  # the algorithm's own named losses
    assert scalars["learner/uniform_groups"] == [(1, 0.25), (2, 0.5)]  # and what else it reports
    assert [value for _, value in scalars["fleet/hosts_up"]] == [2, 2]  # the shutdown's 0 is not written
    assert scalars["collect/failed"][-1][1] == 1  # the stopped episodes are not failures


def test_the_final_numbers_rate_the_whole_run() -> None:
    """The board's ticks rate the steps since the last tick; its last (``close``, what ``train`` and
    ``collect`` return) rates the whole run, however many ticks there were (none, without on_progress)."""
    stats = RunStats(steps_streamed=120)
    stats.started = stats.taken - 60  # 120 steps in 60 s
    board = Board(lambda: dataclasses.replace(stats))
    assert board.close().steps_per_s == pytest.approx(2.0)
    ticked = Board(lambda: dataclasses.replace(stats))
    ticked.tick()
    assert ticked.close().steps_per_s == pytest.approx(2.0)  # not 0: no step since the last tick


def _training(**changes: Any) -> RunStats:
    """A training run's numbers after 100 s: 50 episodes of a budget of 150, within an hour."""
    stats = RunStats(
        hosts=2,
        hosts_up=2,
        handed_out=60,
        completed=50,
        successes=10,
        training=True,
        updates=12,
        actor_loss=0.0421,
        entropy=1.73,
        goal_episodes=150,
        deadline_s=3600,
        steps_per_s=8.5,
        policy_version=12,
        lag_p50=1,
        failed=collections.Counter(timeout=1),
        recent=collections.deque([True, False, True, True] * 5),
    )
    stats = dataclasses.replace(stats, **changes)
    stats.taken = stats.started + 100
    return stats


def _skeleton(line: str) -> list[str]:
    """The line's fields with their numbers taken out: what it shows, not how much."""
    return [re.sub(r"-?[\d.]+(e[-+]?\d+)?%?|(?<= )-$", "#", part) for part in line.split("  ")]


def test_the_progress_line_fits_its_width_and_says_what_is_left() -> None:
    stats = _training()
    assert stats.time_left_s == 200  # 50 episodes in 100 s: 100 more take 200 s, before the deadline
    full = stats.line()  # a log's line: every field, in full
    assert full == (
        "1:40  episodes 50 (20% success)  8.5 steps/s  3:20 left  updates 12  loss 0.0421  entropy 1.73"
        "  last 20: 75% success  hosts 2/2 up  9 running, 1 failed  policy v12 lag p50 1"
    )
    # a terminal's line at 80 and 120 columns: the fields shortened, in the same order; those left out
    # are the least telling
    assert stats.line(80) == "1:40  50 ep 20%  8.5/s  last 75%  hosts 2/2  9 run 1 fail  v12 lag 1"
    assert stats.line(120) == (
        "1:40  50 ep 20%  8.5/s  3:20 left  upd 12  loss 0.0421  last 75%  hosts 2/2  9 run 1 fail  v12 lag 1"
    )
    for width in (20, 40, 60, 80, 100, 120, 160, 200):
        line = stats.line(width)
        assert len(line) <= width
        assert line.startswith("1:40  ")  # what matters most comes first
    assert RunStats().time_left_s is None  # no budget, no estimate
    stopped = RunStats(handed_out=34, failed=collections.Counter(stopped=32, timeout=2))
    assert "0 running, 2 failed, 32 stopped" in stopped.line()  # a stop's cut-short episodes are no failures
    assert "greedy" not in full  # no greedy episode, no greedy figure
    greedy = _training(
        recent=collections.deque(), recent_greedy=collections.deque([True, False, False, False])
    )
    assert "last 0: - success  greedy 25% of 4  hosts 2/2 up" in greedy.line()
    collecting = RunStats(hosts=1, hosts_up=1, handed_out=3, completed=2, steps_per_s=2.0)
    assert collecting.line() == (
        "0:00  episodes 2 (0% success)  2.0 steps/s  last 0: - success  hosts 1/1 up  1 running, 0 failed"
    )  # no training: no updates, loss or policy lag


def test_the_progress_line_shows_the_same_fields_whatever_the_numbers() -> None:
    """As the numbers grow and shrink, a width shows the same fields, in the same order: no field gives
    way to another because a number grew a digit."""
    early = _training(actor_loss=None, entropy=None, updates=0, policy_version=0, completed=9, successes=1)
    later = [
        _training(actor_loss=0.03),
        _training(actor_loss=-0.0119, completed=1234, handed_out=1300, hosts_up=1, lag_p50=12),
        _training(entropy=0.5, steps_per_s=123.4, updates=4321, policy_version=4321, successes=49),
    ]
    wider: list[str] = []
    for width in (140, 120, 100, 80, 60):
        shown = _skeleton(early.line(width))
        assert all(_skeleton(stats.line(width)) == shown for stats in later), width
        if wider:  # a narrower line: some of the wider one's fields left out, none moved
            assert shown == [field for field in wider if field in shown]
            assert len(shown) < len(wider)
        wider = shown
    assert {"hosts #/#", "# run # fail", "v# lag #"} <= set(_skeleton(early.line(80)))


def test_sample_episodes_go_to_tensorboard_as_a_screen_and_text(tmp_path: Path) -> None:
    import io

    from PIL import Image

    from distrl.fleet.board import SAMPLE_EVERY
    from distrl.records import Action, ActionType, EndReason, Observation, Step, Task, Trajectory

    png = io.BytesIO()
    Image.new("RGB", (30, 60), (0, 128, 255)).save(png, "PNG")
    screen = Observation(screenshot=png.getvalue(), width=30, height=60)
    step = Step(
        index=0,
        observation=screen,
        output="Action Decision: tap",
        action=Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.5), lift=(0.5, 0.5)),
        policy_version=0,
        behaviour_logprob=-1.0,
        reward=1.0,
    )
    episode = Trajectory(
        id="e",
        task=Task(id="t/1", suite="t", goal="Go home"),
        host="h",
        device="d",
        steps=(step,),
        final_observation=screen,
        end_reason=EndReason.COMPLETE,
        success=True,
        verdict="the launcher shows",
    )
    curves = Curves(tmp_path, devices=1)
    for _ in range(SAMPLE_EVERY + 1):
        curves.sample(episode)
    curves.close()
    reader = EventAccumulator(str(tmp_path))
    reader.Reload()
    images = reader.Images("episodes/final_screen")
    assert [image.step for image in images] == [1, SAMPLE_EVERY + 1]  # the first, then one in SAMPLE_EVERY
    assert (images[0].width, images[0].height) == (30, 60)
    text = reader.Tensors("episodes/steps/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "**Go home** (t/1): success" in text
    assert "judge: the launcher shows" in text
    assert "| 0 | Action Decision: tap | 1 |" in text
    (strip,) = reader.Images("episodes/steps")[:1]
    with Image.open(io.BytesIO(strip.encoded_image_string)) as drawn:
        assert drawn.width == 160 + 4  # one screen, scaled to the strip's width
        pixel = drawn.convert("RGB").getpixel((80, 160))  # the tap, drawn where it went
        assert isinstance(pixel, tuple)
        red, green, blue = pixel
    assert red > 200, (red, green, blue)
    assert blue < 150, (red, green, blue)
    assert drawn.height == 320


def test_a_resumed_runs_curves_go_on_where_the_last_run_stopped(tmp_path: Path) -> None:
    board = Board(
        lambda: RunStats(completed=3, steps_streamed=20, successes=1),
        curves=Curves(tmp_path, devices=1, env_steps_before=500, episodes_before=40),
    )
    board.tick()
    board.close()
    scalars = _scalars(tmp_path)
    step, episodes = scalars["collect/trajectories"][0]
    assert (step, episodes) == (520, 43.0)  # x: environment steps; y: every episode, the earlier runs' too
    assert {step for step, _ in scalars["collect/success_rate"]} == {520}
