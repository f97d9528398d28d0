"""Behaviour cloning: demonstrations with a controlled share of mistakes, ``pretrain``, ``evaluate``, and
the ``pretrain`` and ``eval`` commands."""

from __future__ import annotations

import io
import json
import math
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import peft
import pytest
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText

from distrl.actions import format_action, parse_action
from distrl.config import PolicySettings, cannot_create
from distrl.local.demos import _Branches, demonstrations
from distrl.local.evaluation import Evaluation, Outcome, pass_at_k, standard_error
from distrl.local.play import episode_phone, evaluate
from distrl.local.pretrain import Progress, _examples, pretrain
from distrl.policy import Policy, PolicyInput, Sample, build_tiny
from distrl.policy.tiny import build_pretrained
from distrl.records import Action, ActionType, Task
from distrl.sim.phone import Phone
from distrl.sim.suites import expert_action, tasks, template_of
from distrl.sim.suites.expert import perform


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


def test_randomised_demonstrations_play_drawn_tasks_and_never_a_held_out_one() -> None:
    """``randomise`` swaps a share of the train tasks for drawn ones (fresh values and wordings): none is
    a ``test`` or ``unseen`` task or holds a held-out value or wording, and the expert solves them."""
    episodes = list(
        demonstrations("general", episodes=40, mistake_rate=0.0, seed=3, width=270, height=600, randomise=0.5)
    )
    fixed = tasks("general")
    train = {t.id for t in fixed if t.split == "train"}
    held_params = [dict(t.params) for t in fixed if t.split != "train"]
    held_goals = {t.goal for t in fixed if t.split != "train"}
    drawn = [e.task for e in episodes if e.task.id not in train]
    assert 10 <= len(drawn) <= 30
    for episode in episodes:
        task = episode.task
        params = {k: v for k, v in task.params.items() if k != "template"}
        template = template_of(task)
        assert episode.success, task.goal
        assert task.split == template.split_of(params) == "train", task.goal
        assert not template.held_out.holds(params), task.goal
        assert dict(task.params) not in held_params, task.goal
        assert task.goal not in held_goals, task.goal
        assert task.id in train or "/draw-" in task.id
    before = [e.task.id for e in demonstrations("general", episodes=6, seed=3, width=270, height=600)]
    assert before == [
        e.task.id for e in demonstrations("general", episodes=6, seed=3, width=270, height=600, randomise=0.0)
    ]  # no randomising: the same demonstrations as ever


def test_typing_drills_ask_the_typing_screen_again_with_drawn_goals() -> None:
    """A drill is a typing step's screen and history again, with the goal of a task drawn from the same
    template: what the expert types there for that goal, which is what it types when it plays that task."""
    episodes = list(
        demonstrations("general", episodes=30, mistake_rate=0.0, seed=4, width=270, height=600, drills=2)
    )
    drills = [(episode, drill) for episode in episodes for drill in episode.drills]
    typing = [s for e in episodes for s in e.steps if s.action.type is ActionType.TYPE]
    assert typing
    assert len(drills) == 2 * len(typing)  # every typing template here draws
    for episode, drill in drills:
        step = episode.steps[len(drill.history)]
        assert step.action.type is drill.action.type is ActionType.TYPE
        assert (drill.observation, drill.history) == (step.observation, step.history)
        assert template_of(drill.task) is template_of(episode.task)
        assert "/draw-" in drill.task.id
        assert drill.task.goal != episode.task.goal
    # the drill's typing is the expert's when it plays the drawn task itself
    for _, drill in drills[:4]:
        phone = episode_phone(drill.task, seed=4, width=270, height=600)
        for _ in range(drill.task.max_steps):
            action = expert_action(drill.task, phone)
            if action.type is ActionType.TYPE:
                assert action == drill.action, drill.task.goal
                break
            perform(phone, action)
        else:
            pytest.fail(f"the expert never typed for {drill.task.goal!r}")

    def played(drills: int) -> list[tuple[str, list[Action]]]:
        shown = demonstrations("general", episodes=6, seed=4, width=270, height=600, drills=drills)
        return [(e.task.id, [step.action for step in e.steps]) for e in shown]

    assert played(3) == played(0)  # drills change no demonstration


def test_contrasts_ask_a_screen_again_with_goals_of_the_template_that_part_there() -> None:
    """A contrast is a step's screen and history again with the goal of another task of its template,
    where the expert's action for that goal differs: what teaches a small model to read the goal instead
    of learning each template's usual action."""
    episodes = list(
        demonstrations("general", episodes=40, mistake_rate=0.0, seed=4, width=270, height=600, contrasts=3)
    )
    contrasts = [(episode, contrast) for episode in episodes for contrast in episode.contrasts]
    assert len({episode.task.params["template"] for episode, _ in contrasts}) >= 3
    for episode, contrast in contrasts:
        step = episode.steps[len(contrast.history)]
        assert (contrast.observation, contrast.history) == (step.observation, step.history)
        assert step.action.type is not ActionType.TYPE  # typing is the drills' part
        assert template_of(contrast.task) is template_of(episode.task)
        assert contrast.task.split == "train"
        assert contrast.task.goal != episode.task.goal
        assert contrast.action != step.action
        assert not contrast.action.type.ends_episode
    assert all(len(episode.contrasts) <= 3 for episode in episodes)

    def played(contrasts: int) -> list[tuple[str, list[Action]]]:
        shown = demonstrations("general", episodes=6, seed=4, width=270, height=600, contrasts=contrasts)
        return [(e.task.id, [step.action for step in e.steps]) for e in shown]

    assert played(3) == played(0)  # contrasts change no demonstration


def test_a_contrast_is_where_the_expert_for_the_other_goal_first_parts_from_the_demonstration() -> None:
    brightness = {t.goal: t for t in tasks("general", "train") if t.params["template"] == "brightness"}
    played = brightness["Set the brightness to max"]
    others = [brightness["Set the brightness to min"], brightness["Turn the brightness all the way up"]]
    branches = _Branches(others)
    phone = episode_phone(played, seed=0, width=270, height=600)
    parted: list[tuple[int, Task, Action]] = []
    for index in range(played.max_steps):
        expert = expert_action(played, phone)
        for other, action in branches.parting(index, phone, expert):
            assert action == expert_action(other, phone) != expert
            parted.append((index, other, action))
        if expert.type.ends_episode:
            break
        perform(phone, expert)
    # "min" parts once, at the slider (the screens before are every level's way there); "all the way
    # up" is the same goal in other words and never parts
    assert [(other.goal, action.type) for _, other, action in parted] == [
        ("Set the brightness to min", ActionType.DUAL_POINT)
    ]
    assert parted[0][0] > 0
    # a mistake in between leaves no task on the demonstration's path
    after_mistake = _Branches(others)
    start = episode_phone(played, seed=0, width=270, height=600)
    assert after_mistake.parting(0, start, expert_action(played, start)) == []
    assert after_mistake.parting(2, phone, expert_action(played, phone)) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mistake_rate": 1.5}, "mistake_rate"),
        ({"episodes": -1}, "episodes"),
        ({"split": "dev"}, "no 'dev'"),
        ({"randomise": 1.5}, "randomise"),
        ({"randomise": 0.5, "split": "test"}, "train tasks only"),
        ({"drills": -1}, "drills"),
        ({"contrasts": -1}, "contrasts"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"episodes": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        next(demonstrations("general", **args))  # type: ignore[arg-type]


# -- behaviour cloning ---------------------------------------------------------------------------------------


def test_a_short_pretrain_writes_a_model_folder_that_policy_and_transformers_load(tmp_path: Path) -> None:
    out = tmp_path / "tiny-bc"
    seen: list[Progress] = []
    report = pretrain(
        out,
        episodes=2,
        max_steps=2,
        minutes=None,
        batch_size=2,
        width=270,
        height=600,
        on_progress=seen.append,
    )
    assert report.steps == 2
    assert report.out == out
    assert seen
    assert seen[0].step == 1
    assert seen[0].examples_per_s > 0
    assert {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"} <= {
        p.name for p in out.iterdir()
    }
    assert [p.name for p in tmp_path.iterdir()] == ["tiny-bc"]  # no staging folder left behind
    trained = AutoModelForImageTextToText.from_pretrained(str(out))
    fresh, _ = build_tiny(0)
    assert any(
        not torch.equal(a, b)
        for a, b in zip(trained.state_dict().values(), fresh.state_dict().values(), strict=True)
    )
    policy = Policy.load(PolicySettings(model=str(out)), device="cpu")
    assert isinstance(policy.model, peft.PeftModel)
    base = policy.model.get_base_model().state_dict()
    for name, tensor in trained.state_dict().items():
        module, _, leaf = name.rpartition(".")
        loaded = base.get(name, base.get(f"{module}.base_layer.{leaf}"))  # LoRA wraps the linear layers
        assert loaded is not None, name
        assert torch.equal(loaded, tensor), name
    with pytest.raises(FileExistsError):
        pretrain(out, episodes=1, max_steps=1, minutes=None)


def test_pretrain_learns_from_drawn_tasks_when_asked() -> None:
    _, prompter = build_tiny(0)
    goals = {t.goal for t in tasks("general")}

    def learnt(randomise: float) -> set[str]:
        examples = _examples(("general",), 8, 0.0, 0, 270, 600, prompter, randomise)
        return {example.prompt.goal for example in examples}

    assert learnt(0.0) <= goals
    assert not learnt(1.0) <= goals  # drawn goals: fresh values and wordings


def test_pretrain_overfits_a_small_fixed_demonstration_set(tmp_path: Path) -> None:
    report = pretrain(
        tmp_path / "m",
        episodes=1,
        mistake_rate=0.0,
        max_steps=60,
        minutes=None,
        batch_size=4,
        lr=3e-3,
        warmup_steps=5,
        width=270,
        height=600,
        seed=3,
    )
    assert report.demonstrations <= 6
    assert report.final_loss < report.first_loss / 4, report


def test_pretrain_goes_on_from_a_trained_model_when_asked(tmp_path: Path) -> None:
    def first_loss(out: str, start: str | None) -> float:
        kwargs = {"episodes": 2, "mistake_rate": 0.0, "max_steps": 1, "minutes": None, "batch_size": 4}
        return pretrain(tmp_path / out, start=start, lr=1e-6, seed=5, **kwargs).first_loss  # type: ignore[arg-type]

    fresh = first_loss("fresh", None)
    went_on = first_loss("went-on", "tiny-bc")
    assert went_on < fresh / 20, (went_on, fresh)  # tiny-bc already imitates the expert; a fresh tiny cannot
    saved = AutoModelForImageTextToText.from_pretrained(str(tmp_path / "went-on")).state_dict()
    shipped = build_pretrained("tiny-bc")[0].state_dict()
    assert saved.keys() == shipped.keys()
    # one step at lr 1e-6 from the shipped weights (AdamW moves each weight by about the lr at most)
    assert all(torch.allclose(saved[name], shipped[name], atol=1e-4) for name in saved)


def test_bad_budgets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="budget"):
        pretrain(tmp_path / "m", max_steps=None, minutes=None)
    with pytest.raises(ValueError, match="no task source 'nope'"):
        pretrain(tmp_path / "m", suites=("nope",), max_steps=1, minutes=None)
    assert not (tmp_path / "m").exists()


def test_an_output_that_cannot_be_created_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f").write_text("x")
    assert (
        cannot_create(tmp_path / "f" / "model")
        == f"cannot create {tmp_path}/f/model: {tmp_path}/f is a file, not a folder"
    )
    assert cannot_create(tmp_path / "f" / "deeper" / "model").endswith(
        f": {tmp_path}/f is a file, not a folder"
    )
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    assert cannot_create(tmp_path / "gone" / "model").endswith(
        f": {tmp_path}/gone is a link to nothing, not a folder"
    )
    assert cannot_create(tmp_path / "new" / "deeper" / "model") == ""  # missing parents are made
    with pytest.raises(ValueError, match="f is a file, not a folder"):
        pretrain(
            tmp_path / "f" / "model",
            max_steps=1,
            minutes=None,
            on_progress=lambda _: pytest.fail("it trained"),
        )
    monkeypatch.chdir(tmp_path)
    from distrl.cli import main

    assert main(["pretrain", "--out", "f/model", "--steps", "30", "--minutes", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # nothing announced, nothing trained
    assert err == "distrl: error: cannot create f/model: f is a file, not a folder\n"


# -- evaluation --------------------------------------------------------------------------------------------


class ExpertReplay:
    """Plays the expert: a shadow of each episode's phone (``episode_phone``, the same operations) says
    what the expert would do on the phone ``evaluate`` shows."""

    def __init__(self, suite: str, split: str, *, seed: int, width: int, height: int) -> None:
        self.tasks = {task.goal: task for task in tasks(suite, split)}
        self.shadows: dict[str, Phone] = {}
        self.seed, self.width, self.height = seed, width, height
        self.batches: list[int] = []

    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> list[Sample]:
        self.batches.append(len(batch))
        out = []
        for item in batch:
            task = self.tasks[item.goal]
            if not item.history:
                self.shadows[item.goal] = episode_phone(
                    task, seed=self.seed, width=self.width, height=self.height
                )
            shadow = self.shadows[item.goal]
            shadow.screenshot("jpeg")  # the same clock as the phone evaluate observed
            action = expert_action(task, shadow)
            perform(shadow, action)
            out.append(_sample(action))
        return out


class GiveUp:
    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> list[Sample]:
        return [_sample(Action(type=ActionType.STATUS_TASK_COMPLETE)) for _ in batch]


def _sample(action: Action) -> Sample:
    text = format_action(action)
    return Sample(
        text=text,
        action=action,
        logprob=0.0,
        tokens=1,
        truncated=False,
        canonical=True,
        token_ids=(),
        sampled_logprob=0.0,
    )


def test_evaluate_scores_the_expert_as_perfect_and_giving_up_as_zero() -> None:
    chosen = [t.id for t in tasks("general", "test")[::20]]  # held-out values and wordings
    expert = ExpertReplay("general", "test", seed=4, width=270, height=600)
    result = evaluate(expert, "general", "test", task_ids=chosen, seed=4, parallel=4, width=270, height=600)
    assert [o.task.id for o in result.outcomes] == chosen
    assert result.success_rate == 1.0, [o.task.id for o in result.outcomes if not o.success]
    assert all(o.ended for o in result.outcomes)
    assert max(expert.batches) == 4
    quitter = evaluate(GiveUp(), "general", "test", task_ids=chosen, seed=4, width=270, height=600)
    assert quitter.success_rate == 0.0
    assert all(o.steps == 1 for o in quitter.outcomes)
    assert sum(total for _, total in quitter.by_template().values()) == len(chosen)


def test_evaluate_picks_a_seeded_sample_of_tasks() -> None:
    def ids(seed: int) -> list[str]:
        result = evaluate(GiveUp(), "web_shopping", "train", episodes=5, seed=seed, width=270, height=600)
        return [o.task.id for o in result.outcomes]

    assert ids(1) == ids(1) != ids(2)
    assert len(ids(1)) == 5
    with pytest.raises(ValueError, match="not a task"):
        evaluate(GiveUp(), "general", "test", task_ids=["general/nope/0000"])


class SeedRecorder(GiveUp):
    """Gives up at once, and records the seed of each ``sample`` call."""

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> list[Sample]:
        self.seeds.append(seed)
        return super().sample(batch, seed=seed)


def test_evaluate_plays_each_task_samples_times_each_play_seeded_apart() -> None:
    chosen = [t.id for t in tasks("general", "train")[:3]]
    heard: list[tuple[int, int, int]] = []
    actor = SeedRecorder()
    result = evaluate(
        actor, "general", "train", task_ids=chosen, seed=5, samples=3, width=270, height=600,
        on_episode=lambda *args: heard.append(args),
    )  # fmt: skip
    assert result.samples == 3
    assert [o.task.id for o in result.outcomes] == [task_id for task_id in chosen for _ in range(3)]
    assert [(task.id, won, plays) for task, won, plays in result.per_task()] == [(t, 0, 3) for t in chosen]
    assert actor.seeds == [5 * 1_000_003, 6 * 1_000_003, 7 * 1_000_003]  # one batch per play, seeds 5, 6, 7
    assert [done for done, _, _ in heard] == list(range(1, 10))
    assert {total for _, total, _ in heard} == {9}
    single = evaluate(GiveUp(), "general", "train", task_ids=chosen, seed=5, width=270, height=600)
    assert single.samples == 1
    assert [o.task.id for o in single.outcomes] == chosen
    with pytest.raises(ValueError, match="samples"):
        evaluate(GiveUp(), "general", "train", task_ids=chosen, samples=0)


def test_pass_at_k_and_standard_error_by_hand() -> None:
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)  # 1 - C(2,2)/C(4,2) = 1 - 1/6
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)  # pass@1 is c/n
    assert pass_at_k(4, 3, 2) == 1.0  # fewer failures than k: always solved
    assert pass_at_k(4, 0, 4) == 0.0
    assert pass_at_k(4, 1, 4) == 1.0
    for n, c, k in [(4, 5, 1), (4, 1, 5), (4, 1, 0), (4, -1, 1)]:
        with pytest.raises(ValueError, match="need"):
            pass_at_k(n, c, k)
    assert standard_error(0.25, 4) == pytest.approx(math.sqrt(0.25 * 0.75 / 4))  # 0.2165
    assert standard_error(0.5, 100) == pytest.approx(0.05)
    assert standard_error(0.0, 10) == standard_error(1.0, 10) == 0.0
    assert standard_error(0.0, 0) == 0.0
    with pytest.raises(ValueError, match="need"):
        standard_error(1.5, 4)


def test_an_evaluations_pass_at_k_groups_each_tasks_plays() -> None:
    pool = tasks("general", "train")
    apps = [t for t in pool if t.params.get("template") == "open_app"][:2]
    alarm = next(t for t in pool if t.params.get("template") == "alarm")

    def plays(task: Task, *wins: bool) -> list[Outcome]:
        return [Outcome(task=task, success=won, steps=1, actions=(), ended=True) for won in wins]

    outcomes = (
        plays(apps[0], True, False, False, False)  # c = 1 of n = 4
        + plays(alarm, True, True, False, True)  # c = 3
        + plays(apps[1], False, False, False, False)  # c = 0
    )
    result = Evaluation(suite="general", split="train", outcomes=tuple(outcomes), wall_s=0.0, samples=4)
    assert result.success_rate == pytest.approx(4 / 12)
    assert result.standard_error == pytest.approx(math.sqrt((1 / 3) * (2 / 3) / 12))  # over the 12 episodes
    assert [(task.id, won, n) for task, won, n in result.per_task()] == [
        (apps[0].id, 1, 4),
        (alarm.id, 3, 4),
        (apps[1].id, 0, 4),
    ]
    # pass@2 per task: 1 - C(3,2)/C(4,2) = 0.5, 1 - C(1,2)/C(4,2) = 1, 0; mean 0.5, SE over the 3 tasks
    # sqrt(((0.5 - 0.5)² + 0.5² + 0.5²) / 3 / 3)
    rate, se = result.pass_at_k(2)
    assert rate == pytest.approx(0.5)
    assert se == pytest.approx(math.sqrt((0 + 0.25 + 0.25) / 3 / 3))
    rate, se = result.pass_at_k(1)  # 0.25, 0.75, 0
    assert rate == pytest.approx(1 / 3)
    assert se == pytest.approx(math.sqrt(((0.25 - 1 / 3) ** 2 + (0.75 - 1 / 3) ** 2 + (1 / 3) ** 2) / 9))
    assert result.pass_at_k(4) == pytest.approx((2 / 3, math.sqrt(2 / 9 / 3)))  # 1, 1, 0
    with pytest.raises(ValueError, match="need"):
        result.pass_at_k(5)
    assert result.solved_by_template() == {"open_app": (1, 2), "alarm": (1, 1)}
    assert result.by_template() == {"open_app": (1, 8), "alarm": (3, 4)}
    once = Evaluation(suite="general", split="train", outcomes=tuple(outcomes[:4]), wall_s=0.0)
    assert once.pass_at_k(1) == pytest.approx((0.25, standard_error(0.25, 4)))
    empty = Evaluation(suite="general", split="train", outcomes=(), wall_s=0.0, samples=2)
    assert empty.pass_at_k(1) == (0.0, 0.0)
    assert empty.standard_error == 0.0


# -- the command line --------------------------------------------------------------------------------------


def _distrl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "distrl", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def _one_sentence(result: subprocess.CompletedProcess[str], status: int, *words: str) -> None:
    assert result.returncode == status, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("distrl: error: ")
    assert all(word in lines[0] for word in words), lines[0]


def test_cli_errors_are_one_sentence(tmp_path: Path) -> None:
    _one_sentence(_distrl("eval", str(tmp_path / "missing"), cwd=tmp_path), 2, "does not exist")
    _one_sentence(_distrl("eval", "tiny", "--suite", "nope", cwd=tmp_path), 2, "unknown task suite")
    _one_sentence(_distrl("pretrain", "--out", "m", "--suite", "nope", cwd=tmp_path), 2, "'nope'")
    (tmp_path / "taken").mkdir()
    _one_sentence(_distrl("pretrain", "--out", "taken", cwd=tmp_path), 2, "already exists")
    gone = _distrl("pretrain", "--out", "m", "--start", "nowhere", "--steps", "1", cwd=tmp_path)
    _one_sentence(gone, 2, "does not exist")
    assert gone.stdout == ""  # refused before it announced anything
    assert not (tmp_path / "m").exists()


def test_cli_pretrain_then_eval(tmp_path: Path) -> None:
    trained = _distrl("pretrain", "--out", "m", "--steps", "1", "--episodes", "1", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "step     1  loss" in trained.stdout
    assert "saved" in trained.stdout
    result = _distrl("eval", "m", "--split", "train", "--episodes", "1", "--temperature", "0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("general train, 1 tasks"), result.stdout
    assert re.search(r"^greedy +success \d+\.\d% ± 0\.0% \(\d/1\) in", result.stdout, re.M), result.stdout
    assert "temperature" not in result.stdout  # --temperature: that decoding alone
    assert re.search(r"eval: 1/1 episodes, \d success(es)? so far \(greedy\)", result.stderr), result.stderr


def _percent(text: str) -> float:
    return float(text) / 100


def test_cli_eval_reports_greedy_and_temperature_1_with_errors_and_pass_at_k(tmp_path: Path) -> None:
    result = _distrl("eval", "tiny-bc", "--split", "train", "--episodes", "4", "--samples", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("general train, 4 tasks (± one standard error)\n"), out
    greedy = re.search(r"^greedy +success (\d+\.\d)% ± (\d+\.\d)% \((\d)/4\) in \d+ s$", out, re.M)
    assert greedy, out
    won = int(greedy[3])
    assert _percent(greedy[1]) == pytest.approx(won / 4, abs=5e-4)
    assert _percent(greedy[2]) == pytest.approx(standard_error(won / 4, 4), abs=5e-4)
    sampled = re.search(
        r"^temperature 1 +success (\d+\.\d)% ± (\d+\.\d)% \((\d)/8, 2 plays of each task\) in \d+ s$",
        out,
        re.M,
    )
    assert sampled, out
    won = int(sampled[3])
    assert _percent(sampled[2]) == pytest.approx(standard_error(won / 8, 8), abs=5e-4)
    passes = re.search(r"^ +pass@1 (\d+\.\d)% ± (\d+\.\d)% +pass@2 (\d+\.\d)% ± (\d+\.\d)%$", out, re.M)
    assert passes, out
    assert _percent(passes[1]) == pytest.approx(won / 8, abs=5e-4)  # pass@1 is the mean success
    assert _percent(passes[1]) <= _percent(passes[3]) <= min(1.0, 2 * _percent(passes[1]) + 1e-9)
    table = out.split("solved at least once in 2 plays, per template:\n")[1].split("\ngreedy fails")[0]
    counts = [re.fullmatch(r" +(\w+) +(\d)/(\d)", line) for line in table.splitlines()]
    assert all(counts), table
    assert sum(int(m[3]) for m in counts if m) == 4
    assert sum(int(m[2]) for m in counts if m) == pytest.approx(4 * _percent(passes[3]), abs=0.01)
    failures = re.search(r"^greedy fails (\d) of 4 tasks; sampling at temperature 1 solves (\d)", out, re.M)
    assert failures, out
    assert int(failures[2]) <= int(failures[1]) == 4 - int(greedy[3])
    assert re.search(r"eval: 4/4 episodes, \d success(es)? so far \(greedy\)", result.stderr), result.stderr
    assert f"eval: 8/8 episodes, {won} success{'es' * (won != 1)} so far (temperature 1)" in result.stderr


def test_the_greedy_failures_that_sampling_solves_are_counted_task_by_task() -> None:
    pool = tasks("general", "train")[:4]

    def evaluation(samples: int, *wins: bool) -> Evaluation:
        outcomes = tuple(
            Outcome(task=pool[i // samples], success=won, steps=1, actions=(), ended=True)
            for i, won in enumerate(wins)
        )
        return Evaluation(suite="general", split="train", outcomes=outcomes, wall_s=0.0, samples=samples)

    greedy = evaluation(1, True, False, False, False)
    sampled = evaluation(2, False, False, True, False, False, False, False, True)
    # tasks 1-3 fail greedily; sampling solves task 1 (first play) and task 3 (second), not task 2
    assert greedy.failures_solved_by(sampled) == (3, 2)
    assert sampled.failures_solved_by(greedy) == (2, 1)  # sampling fails 0 and 2; greedy solves 0
    with pytest.raises(ValueError, match="same tasks"):
        greedy.failures_solved_by(evaluation(1, True, True, True))


def test_cli_eval_json_has_both_decodings_and_pass_at_k(tmp_path: Path) -> None:
    args = (
        "eval",
        "tiny-bc",
        "--split",
        "train",
        "--episodes",
        "2",
        "--samples",
        "2",
        "--json",
        "--per-task",
    )
    result = _distrl(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 1, result.stdout
    figures = json.loads(result.stdout)
    assert (figures["suite"], figures["split"], figures["tasks"]) == ("general", "train", 2)
    greedy, sampled = figures["greedy"], figures["sampled"]
    assert (greedy["temperature"], greedy["samples"], greedy["episodes"]) == (0.0, 1, 2)
    assert (sampled["temperature"], sampled["samples"], sampled["episodes"]) == (1.0, 2, 4)
    for decoding in (greedy, sampled):
        rate = decoding["successes"] / decoding["episodes"]
        assert decoding["success_rate"] == pytest.approx(rate)
        assert decoding["standard_error"] == pytest.approx(standard_error(rate, decoding["episodes"]))
        assert decoding["pass_at_k"]["1"]["rate"] == pytest.approx(rate)
        assert len(decoding["outcomes"]) == decoding["episodes"]
    assert set(greedy["pass_at_k"]) == {"1"}
    assert set(sampled["pass_at_k"]) == {"1", "2"}
    per_task: dict[str, int] = {}
    for outcome in sampled["outcomes"]:
        per_task[outcome["task"]] = per_task.get(outcome["task"], 0) + outcome["success"]
    assert [outcome["play"] for outcome in sampled["outcomes"]] == [1, 2, 1, 2]
    two = [pass_at_k(2, won, 2) for won in per_task.values()]
    assert sampled["pass_at_k"]["2"]["rate"] == pytest.approx(sum(two) / 2)
    solved = sum(entry["solved"] for entry in sampled["solved_by_template"].values())
    assert solved == sum(won > 0 for won in per_task.values())
    greedy_won = {o["task"]: o["success"] for o in greedy["outcomes"]}
    failed = [task for task, won in greedy_won.items() if not won]
    assert figures["greedy_failures"] == {
        "tasks": len(failed),
        "solved_sampled": sum(per_task[task] > 0 for task in failed),
    }


def test_an_evaluation_minus_another_pairs_them_task_by_task() -> None:
    pool = tasks("general", "train")[:3]

    def evaluation(*wins: tuple[bool, bool]) -> Evaluation:
        outcomes = [
            Outcome(task=task, success=won, steps=1, actions=(), ended=True)
            for task, plays in zip(pool, wins, strict=True)
            for won in plays
        ]
        return Evaluation(suite="general", split="train", outcomes=tuple(outcomes), wall_s=0.0, samples=2)

    before = evaluation((True, False), (False, False), (True, True))  # 0.5, 0, 1
    after = evaluation((True, True), (True, False), (True, True))  # 1, 0.5, 1
    mean, error = after.minus(before)
    # differences 0.5, 0.5, 0: mean 1/3, sample variance ((1/6)² + (1/6)² + (1/3)²) / 2 = 1/12
    assert mean == pytest.approx(1 / 3)
    assert error == pytest.approx(math.sqrt(1 / 12 / 3))
    assert before.minus(after) == pytest.approx((-1 / 3, error))
    assert after.minus(after) == (0.0, 0.0)
    # what the mean nets out: the second task is gained (solved once, never before), none is lost
    assert after.changes_from(before) == (1, 0)
    assert before.changes_from(after) == (0, 1)
    assert after.changes_from(after) == (0, 0)
    reordered = Evaluation(
        suite="general",
        split="train",
        outcomes=after.outcomes[2:] + after.outcomes[:2],
        wall_s=0.0,
        samples=2,
    )
    with pytest.raises(ValueError, match="same tasks in the same order"):
        reordered.minus(before)


@pytest.mark.timeout(240)  # five evaluations, each loading the policy in a process of its own
def test_cli_eval_against_the_start_pairs_the_adapter_with_its_model(tmp_path: Path) -> None:
    policy = Policy.load(PolicySettings(model="tiny-bc"), seed=0)
    generator = torch.Generator().manual_seed(1)
    policy.adapter.load_state(
        {name: torch.randn(t.shape, generator=generator) * 0.08 for name, t in policy.adapter.state().items()}
    )
    policy.adapter.save(tmp_path / "adapter")
    args = ("eval", "tiny-bc", "--adapter", "adapter", "--split", "train", "--episodes", "4")
    result = _distrl(*args, "--against-start", "--json", "--per-task", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert "(start, greedy)" in result.stderr
    assert "(start, temperature 1)" in result.stderr
    for decoding in ("greedy", "sampled"):
        after, before = figures[decoding], figures["start"][decoding]
        assert len(after["outcomes"]) == len(before["outcomes"]) == 4
        differences = [
            a["success"] - b["success"] for a, b in zip(after["outcomes"], before["outcomes"], strict=True)
        ]
        assert [a["task"] for a in after["outcomes"]] == [b["task"] for b in before["outcomes"]]
        mean = sum(differences) / 4
        spread = math.sqrt(sum((d - mean) ** 2 for d in differences) / 3 / 4)
        gained = sum(d == 1 for d in differences)  # one play each: a task is gained or lost whole
        lost = sum(d == -1 for d in differences)
        assert figures["difference"][decoding] == pytest.approx(
            {"mean": mean, "standard_error": spread, "gained": gained, "lost": lost}
        )
        assert mean == pytest.approx(after["success_rate"] - before["success_rate"])
    alone = json.loads(
        _distrl(
            "eval",
            "tiny-bc",
            "--split",
            "train",
            "--episodes",
            "4",
            "--temperature",
            "0",
            "--json",
            cwd=tmp_path,
        ).stdout
    )
    assert alone["greedy"]["successes"] == figures["start"]["greedy"]["successes"]  # the start is the model
    assert figures["greedy"]["successes"] != alone["greedy"]["successes"]  # and the adapter changes it

    text = _distrl(*args, "--against-start", "--temperature", "0", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert (
        "against the start (tiny-bc without the adapter), same tasks and seeds, paired by task:"
        in text.stdout
    )
    line = re.search(
        r"^greedy +start (\d+\.\d)% ± \d+\.\d% +difference ([+-]\d+\.\d) ± \d+\.\d points"
        r" +\(solves (\d+) tasks the start never does, never solves (\d+) it does\)$",
        text.stdout,
        re.M,
    )
    assert line, text.stdout
    assert [int(line[3]), int(line[4])] == [
        figures["difference"]["greedy"]["gained"],
        figures["difference"]["greedy"]["lost"],
    ]
    greedy = figures["greedy"]["success_rate"] - figures["start"]["greedy"]["success_rate"]
    assert float(line[2]) == pytest.approx(100 * greedy, abs=0.05)
    _one_sentence(_distrl("eval", "tiny-bc", "--against-start", cwd=tmp_path), 2, "--adapter")


def test_ctrl_c_during_pretrain_leaves_nothing_behind(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "distrl", "pretrain", "--out", "m", "--episodes", "2", "--minutes", "1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT at its default, as from a terminal (a test runner started in the background ignores it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("step     1"):
            break
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert stderr.strip().splitlines() == ["distrl: error: interrupted"]
    assert list(tmp_path.iterdir()) == []
