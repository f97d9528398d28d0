"""The learner: what each update trains, what it must leave alone, and resuming from a checkpoint."""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import torch
from support import short_train_tasks

from distrl.actions import format_action
from distrl.config import LearnerSettings, PolicySettings
from distrl.errors import CheckpointError, ConfigError, LearnerError
from distrl.learner.algorithm import ActorTargets
from distrl.learner.algorithms import with_options
from distrl.learner.checkpoint import Checkpoints, load_tensors, save_tensors
from distrl.learner.core import Learner, UpdateReport
from distrl.learner.losses import kl_to_reference
from distrl.learner.scoring import policy_input as _input
from distrl.learner.scoring import score
from distrl.local.play import rollouts
from distrl.local.train import Round, train_local
from distrl.policy import Policy
from distrl.records import Action, ActionType, Trajectory
from distrl.tasks.draw import LearnabilityDraw, TaskDraw, split_tasks, task_draw

WIDTH, HEIGHT = 270, 600


def _policy() -> Policy:
    return Policy.load(PolicySettings(max_new_tokens=24), device="cpu", seed=0)


@pytest.fixture(scope="session")  # built once per test process, however its tests interleave
def played() -> list[Trajectory]:
    """Three episodes of an untrained tiny (mostly invalid answers), the last one marked successful. Each
    runs to its task's step limit, cut to 5 here: every update in these tests trains on all their steps."""
    chosen = short_train_tasks(3)
    trajectories = rollouts(_policy(), chosen, version=0, seed=1, parallel=3, width=WIDTH, height=HEIGHT)
    last = trajectories[-1]
    steps = (*last.steps[:-1], dataclasses.replace(last.steps[-1], reward=1.0))
    return [*trajectories[:-1], dataclasses.replace(last, steps=steps, success=True)]


def _settings(algorithm: str = "a-ride", **changes: Any) -> LearnerSettings:
    """Learner settings with ``changes``: the core's keys, the rest the algorithm's table's."""
    changes.setdefault("critic_warmup_updates", 0)
    settings = LearnerSettings(algorithm=algorithm, batch_size=3, micro_batch=8, lr_actor=1e-2)
    return with_options(settings, **changes)


def _learner(algorithm: str = "a-ride", **changes: Any) -> Learner:
    return Learner(_policy(), _settings(algorithm, **changes), seed=0)


def _filled(algorithm: str, played: list[Trajectory], **changes: Any) -> Learner:
    learner = _learner(algorithm, **changes)
    for trajectory in played:
        assert learner.add(trajectory)
    return learner


def _scored(learner: Learner, sample: Any) -> Any:
    """``sample`` scored as an update scores it: the ``Batch`` its algorithm reads."""
    return score(
        learner.policy,
        sample,
        micro_batch=learner.settings.micro_batch,
        hidden=learner.hidden,
        ranks=learner.ranks,
    ).batch


def _networks(learner: Learner) -> Any:
    """The learner's algorithm's networks, which these tests' algorithms have."""
    assert learner.networks is not None
    return learner.networks


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in module.state_dict().items()}


def _grads(module: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    return {
        name: None if p.grad is None else p.grad.detach().clone() for name, p in module.named_parameters()
    }


def _spy(optimiser: torch.optim.Optimizer, record: Callable[[], None]) -> None:
    step = optimiser.step

    def spied(*args: Any, **kwargs: Any) -> Any:
        record()
        return step(*args, **kwargs)

    optimiser.step = spied  # type: ignore[method-assign]


def _nonzero(grads: dict[str, torch.Tensor | None], prefix: str) -> bool:
    chosen = [g for name, g in grads.items() if name.startswith(prefix)]
    return (
        bool(chosen)
        and all(g is not None for g in chosen)
        and any(bool(g.abs().sum() > 0) for g in chosen if g is not None)
    )


def _none(grads: dict[str, torch.Tensor | None], prefix: str) -> bool:
    chosen = [g for name, g in grads.items() if name.startswith(prefix)]
    return bool(chosen) and all(g is None for g in chosen)


@pytest.mark.parametrize(("algorithm", "trained_head"), [("a-ride", "trajectory"), ("digirl", "instruction")])
def test_each_loss_reaches_what_it_trains_and_nothing_else(
    played: list[Trajectory], algorithm: str, trained_head: str
) -> None:
    learner = _filled(algorithm, played)
    seen: dict[str, Any] = {}

    def at_critic_step() -> None:
        seen["critic.adapter"] = [p.grad for p in learner.policy.trainable_parameters()]
        seen["critic.critics"] = _grads(_networks(learner))

    def at_actor_step() -> None:
        seen["actor.adapter"] = [p.grad for p in learner.policy.trainable_parameters()]
        seen["actor.critics"] = _grads(_networks(learner))

    networks = learner.networks
    assert networks is not None
    assert learner.critic_optimiser is not None
    assert {name.split(".")[0] for name, _ in networks.named_parameters()} == {"step", trained_head}
    _spy(learner.critic_optimiser, at_critic_step)
    _spy(learner.actor_optimiser, at_actor_step)
    base = {n: p.detach().clone() for n, p in learner.policy.model.named_parameters() if not p.requires_grad}
    report = learner.update()
    assert report is not None
    assert report.trained_steps > 0
    # the critic losses reach their heads and never the policy
    assert all(g is None for g in seen["critic.adapter"])
    assert _nonzero(seen["critic.critics"], "step.")
    assert _nonzero(seen["critic.critics"], f"{trained_head}.")
    # the actor loss reaches the adapter (LoRA B starts at zero, so its gradient is the live one) ...
    lora_b = [p.grad for n, p in learner.policy.model.named_parameters() if p.requires_grad and "lora_B" in n]
    assert lora_b
    assert all(g is not None and bool(g.abs().sum() > 0) for g in lora_b)
    # ... and leaves the critics' gradients as the critic step left them
    for name, grad in seen["critic.critics"].items():
        after = seen["actor.critics"][name]
        assert (grad is None and after is None) or torch.equal(grad, after)
    # the base model never moves
    for name, value in learner.policy.model.named_parameters():
        if name in base:
            assert torch.equal(value, base[name]), name


def test_filtered_bc_trains_only_on_successes(played: list[Trajectory]) -> None:
    failures = _filled("filtered-bc", [t for t in played if not t.success])
    before = _snapshot(failures.policy.model)
    report = failures.update()
    assert report is not None
    assert report.trained_steps == 0
    assert report.critic_loss == 0.0
    assert all(torch.equal(v, before[k]) for k, v in failures.policy.model.state_dict().items())

    mixed = _filled("filtered-bc", played)
    report = mixed.update()
    assert report is not None
    successes = sum(len(t.steps) for t in played if t.success)
    assert 0 < report.trained_steps <= report.steps
    assert report.trained_steps % successes == 0  # whole successful trajectories, maybe drawn twice


def _failures(played: list[Trajectory]) -> list[Trajectory]:
    """The failed episodes, every step a valid action (PRESS_HOME, said canonically)."""
    home = Action(type=ActionType.PRESS_HOME)
    return [
        dataclasses.replace(
            t, steps=tuple(dataclasses.replace(s, action=home, output=format_action(home)) for s in t.steps)
        )
        for t in played
        if not t.success
    ]


@pytest.mark.parametrize("mode", ["positive", "binary"])
def test_positive_a_ride_trains_only_the_steps_it_weighs(played: list[Trajectory], mode: str) -> None:
    # failed episodes of valid actions: on-policy, every advantage is −V(s_t) < 0, so with positive
    # (or binary) advantages no step has a weight, and the actor must not move: not even by the entropy
    # bonus, which is taken over the trained steps only
    failures = _failures(played)
    learner = _filled("a-ride", failures, advantages=mode, entropy_coef=0.05)
    start = _adapter(learner)
    report = learner.update()
    assert report is not None
    assert report.steps > 0
    assert report.trained_steps == 0
    assert all(torch.equal(v, start[k]) for k, v in _adapter(learner).items())

    # with a success (and invalid answers, which the penalty weighs) some steps train, not all of them
    mixed = _filled("a-ride", [*failures, played[-1]], advantages=mode)
    report = mixed.update()
    assert report is not None
    assert 0 < report.trained_steps < report.steps


def test_a_ride_learns_from_failures_on_their_decision_tokens_only(played: list[Trajectory]) -> None:
    """Decision advantages: the batch's worse steps are pushed down on their decision tokens (the
    action type, points, typed text) and never on the format every answer shares; its better steps are
    pushed up on both. An update trains every step, failures included."""
    failures = _failures(played)
    success = dataclasses.replace(
        _failures([dataclasses.replace(played[-1], success=False)])[0], success=True
    )
    learner = _learner("a-ride", advantages="decision", kl_coef=0.0)
    for trajectory in [*failures, success]:  # on-policy: the behaviour log-probs of these weights
        _, trajectory_inputs, trajectory_texts = _flat([trajectory])
        with torch.no_grad():
            logprob, _ = learner.policy.logprobs(trajectory_inputs, trajectory_texts)
        on_policy = tuple(
            dataclasses.replace(s, behaviour_logprob=float(lp))
            for s, lp in zip(trajectory.steps, logprob.tolist(), strict=True)
        )
        assert learner.add(dataclasses.replace(trajectory, steps=on_policy))
    batch = _scored(learner, learner.replay.sample(8))
    plan = learner.algorithm.plan(batch)
    targets = learner.algorithm.targets(batch, plan)
    assert isinstance(targets, ActorTargets)
    valid = batch.invalid == 0
    down = valid & (targets.decision < 0)
    assert bool(down.any())  # some failed choices are pushed down ...
    assert bool((targets.shared[valid] >= 0).all())  # ... and no valid answer's format ever is
    up = valid & (targets.decision > 0)
    assert bool(up.any())
    torch.testing.assert_close(targets.shared[up], targets.decision[up])  # the better ones: the whole answer
    assert bool(targets.trained.all())

    report = learner.update()
    assert report is not None
    assert report.trained_steps == report.steps


def _flat(trajectories: list[Trajectory]) -> tuple[list[Any], list[Any], list[str]]:
    steps = [(i, s) for i, t in enumerate(trajectories) for s in t.steps]
    return steps, [_input(trajectories[i], s) for i, s in steps], [s.output for _, s in steps]


def test_the_anchor_is_zero_at_the_start_and_grows_as_the_policy_moves(played: list[Trajectory]) -> None:
    wins = [dataclasses.replace(t, success=True) for t in played]  # every update imitates something
    learner = _filled("filtered-bc", wins, kl_coef=1.0)
    assert learner.reference is None  # a fresh adapter: π_ref is the model with its adapter disabled
    first = learner.update()
    assert first is not None
    assert first.trained_steps > 0
    assert first.kl == pytest.approx(0.0, abs=1e-6)  # LoRA B = 0: π is π_ref at the first step
    second = learner.update()
    assert second is not None
    assert second.kl > 1e-4

    # a learner built on a trained adapter anchors to a frozen copy of it, not to the bare model
    trained = _learner("filtered-bc", kl_coef=1.0)
    trained.policy.adapter.load_state(learner.policy.adapter.state())
    anchored = Learner(trained.policy, trained.settings, seed=0)
    assert anchored.reference is not None
    assert all(torch.equal(v, learner.policy.adapter.state()[k]) for k, v in anchored.reference.items())


def test_a_stronger_anchor_keeps_the_policy_nearer_its_start(played: list[Trajectory]) -> None:
    def drift(kl_coef: float) -> float:
        wins = [dataclasses.replace(t, success=True) for t in played]
        # steps of Adam small enough not to overshoot the anchor's pull (at 1e-2 they can, and land further)
        learner = _filled("filtered-bc", wins, kl_coef=kl_coef, lr_actor=1e-3)
        reports = [learner.update() for _ in range(4)]
        assert all(r is not None for r in reports)
        inputs, texts = _flat(played)[1:]
        with torch.no_grad():
            reference = learner.policy.reference_log_probs(inputs, texts, None)
            scores = learner.policy.token_scores(inputs, texts)
            return float(kl_to_reference(scores.log_probs, reference, scores.answer).mean())

    assert drift(10.0) < drift(0.0)


def test_a_rides_actor_loss_is_a_mean_over_the_steps_it_trains(played: list[Trajectory]) -> None:
    # two weighted steps alone, or among steps of weight 0: the same loss and the same gradient, so that
    # a batch with few better-than-expected steps moves the adapter as much as one with many
    trajectory = played[-1]
    assert len(trajectory.steps) >= 3
    inputs = [_input(trajectory, step) for step in trajectory.steps]
    texts = [step.output for step in trajectory.steps]
    coefficients = torch.zeros(len(inputs))
    coefficients[:2] = torch.tensor([1.0, 0.5])
    weights = torch.ones(len(inputs))

    def step(count: int) -> tuple[float, list[torch.Tensor]]:
        learner = _learner("a-ride", grad_clip=1e9)  # no clipping: the gradient as the loss makes it
        torch.manual_seed(0)  # the same LoRA dropout draws
        targets = ActorTargets(
            decision=coefficients[:count], shared=coefficients[:count], sample_weights=weights[:count]
        )
        batch = SimpleNamespace(weights=weights[:count])  # all the anchor reads of the batch
        loss, _, _ = learner._actor_step(batch, inputs[:count], texts[:count], targets)  # type: ignore[arg-type]
        return loss, [p.grad.clone() for p in learner.policy.trainable_parameters() if p.grad is not None]

    among_all, grads_all = step(len(inputs))
    alone, grads_alone = step(2)
    assert among_all == pytest.approx(alone)
    assert len(grads_all) == len(grads_alone) > 0
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads_all, grads_alone, strict=True))


def test_the_critic_targets_and_the_actor_advantages_each_follow_their_own_lambda(
    played: list[Trajectory],
) -> None:
    def first(retrace_lambda: float, advantage_lambda: float) -> UpdateReport:
        learner = _filled("a-ride", played, retrace_lambda=retrace_lambda, advantage_lambda=advantage_lambda)
        report = learner.update()
        assert report is not None
        return report

    both_one = first(1.0, 1.0)
    critic_changed = first(0.0, 1.0)
    actor_changed = first(1.0, 0.0)
    # the same batch, critics and weights: the targets (and so the critic's loss) follow retrace_lambda,
    # the advantages advantage_lambda, and neither λ reaches the other's
    assert critic_changed.critic_loss != pytest.approx(both_one.critic_loss)
    assert critic_changed.mean_advantage == pytest.approx(both_one.mean_advantage)
    assert actor_changed.critic_loss == pytest.approx(both_one.critic_loss)
    assert actor_changed.mean_advantage != pytest.approx(both_one.mean_advantage)


def test_a_ride_reports_on_policy_ratios_and_refreshes_priorities(played: list[Trajectory]) -> None:
    learner = _filled("a-ride", played)
    assert learner.stats().max_priority == pytest.approx(1.0)
    report = learner.update()
    assert report is not None
    # the behaviour log-probs came from these very weights: ρ = 1 up to float noise
    assert report.mean_rho == pytest.approx(1.0, abs=1e-3)
    assert report.staleness == (0,) * report.steps
    assert learner.version == 1
    assert learner.stats().mean_priority != pytest.approx(1.0)


def test_stale_trajectories_leave_the_buffer(played: list[Trajectory]) -> None:
    learner = Learner(_policy(), LearnerSettings(batch_size=2, micro_batch=8), max_policy_lag=0, seed=0)
    learner.add(played[0])
    assert learner.update() is not None  # version 0 data at version 0
    assert learner.update() is None  # now one version behind, past a lag of 0
    assert learner.stats().dropped_stale == 1


def _adapter(learner: Learner) -> dict[str, torch.Tensor]:
    return learner.policy.adapter.state()


def test_resume_gives_the_update_an_uninterrupted_run_makes(played: list[Trajectory], tmp_path: Path) -> None:
    original = _filled("a-ride", played)
    original.update()
    original.update()
    checkpoints = Checkpoints(tmp_path / "checkpoints")
    folder = checkpoints.write(original.updates, original.save)
    assert (folder / "adapter" / "adapter_config.json").exists()
    expected = original.update()

    resumed = _learner("a-ride")
    resumed.load(checkpoints.latest() or folder)
    assert resumed.updates == 2
    assert len(resumed.replay) == len(played)
    got = resumed.update()
    assert got is not None
    assert expected is not None
    assert dataclasses.replace(got, wall_s=0.0) == dataclasses.replace(expected, wall_s=0.0)
    for name, value in _adapter(original).items():
        assert torch.equal(value, _adapter(resumed)[name]), name
    for name, value in _networks(original).state_dict().items():
        assert torch.equal(value, _networks(resumed).state_dict()[name]), name


def test_a_checkpoint_of_another_algorithm_is_refused(played: list[Trajectory], tmp_path: Path) -> None:
    learner = _filled("a-ride", played)
    folder = Checkpoints(tmp_path).write(0, learner.save)
    with pytest.raises(CheckpointError, match="a-ride") as caught:
        _learner("digirl").load(folder)
    assert caught.value.reason == "mismatch"
    with pytest.raises(CheckpointError) as missing:
        _learner("a-ride").load(tmp_path / "nowhere")
    assert missing.value.reason == "missing"


def test_a_checkpoint_that_does_not_load_leaves_the_learner_as_it_was(
    played: list[Trajectory], tmp_path: Path
) -> None:
    trained = _filled("a-ride", played)
    assert trained.update() is not None
    folder = Checkpoints(tmp_path).write(trained.updates, trained.save)

    # another adapter shape: refused as a mismatch; the critics, which fit, are as they were
    other = Learner(Policy.load(PolicySettings(max_new_tokens=24, lora_rank=8), device="cpu", seed=0),
                    trained.settings, seed=1)  # fmt: skip
    critics, adapter = _snapshot(_networks(other)), _adapter(other)
    with pytest.raises(CheckpointError, match="does not fit") as caught:
        other.load(folder)
    assert caught.value.reason == "mismatch"
    assert all(torch.equal(v, critics[k]) for k, v in _networks(other).state_dict().items())
    assert all(torch.equal(v, adapter[k]) for k, v in _adapter(other).items())

    # learner state whose metadata lacks a part: a clear error, not a KeyError
    state = folder / "learner.safetensors"
    tensors, meta = load_tensors(state)
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    save_tensors(broken / "learner.safetensors", tensors, {k: v for k, v in meta.items() if k != "rng"})
    with pytest.raises(CheckpointError, match="incomplete") as incomplete:
        _learner("a-ride").load(broken)
    assert incomplete.value.reason == "corrupt"
    for updates in (-7, 2**70):  # counts no run makes: refused, not a ValueError nor a silent load
        save_tensors(broken / "learner.safetensors", tensors, {**meta, "updates": updates})
        with pytest.raises(CheckpointError, match=f"counts {updates} updates") as counted:
            _learner("a-ride").load(broken)
        assert counted.value.reason == "corrupt"

    # a damaged replay file, read after the critics: nothing changes either
    fresh = _learner("a-ride")
    critics = _snapshot(_networks(fresh))
    (folder / "replay.bin").write_bytes((folder / "replay.bin").read_bytes()[:100])
    with pytest.raises(CheckpointError):
        fresh.load(folder)
    assert all(torch.equal(v, critics[k]) for k, v in _networks(fresh).state_dict().items())
    assert fresh.updates == 0
    assert len(fresh.replay) == 0


def test_train_local_plays_trains_and_checkpoints(tmp_path: Path) -> None:
    learner = Learner(_policy(), LearnerSettings(batch_size=2, micro_batch=8), seed=0)
    seen: list[Round] = []
    checkpoints = Checkpoints(tmp_path)
    rounds = train_local(
        learner,
        rounds=2,
        episodes=2,
        updates=1,
        width=WIDTH,
        height=HEIGHT,
        checkpoints=checkpoints,
        on_round=seen.append,
    )
    assert [r.round for r in rounds] == [1, 2]
    assert seen == rounds
    assert [r.version for r in rounds] == [0, 1]
    assert learner.updates == 2
    assert all(len(r.updates) == 1 for r in rounds)
    assert all(r.episodes == 2 and r.steps >= 2 for r in rounds)
    assert learner.stats().added == 4
    latest = checkpoints.latest()
    assert latest is not None
    assert latest.name == "step-000000002"
    with pytest.raises(ValueError, match="budget"):
        train_local(learner)


def test_train_local_draws_by_its_curriculum_from_every_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    import distrl.local.train as local_train

    draws: list[LearnabilityDraw] = []

    def kept(*args: Any, **kwargs: Any) -> TaskDraw:
        draw = task_draw(*args, **kwargs)
        assert isinstance(draw, LearnabilityDraw)
        draws.append(draw)
        return draw

    monkeypatch.setattr(local_train, "task_draw", kept)
    learner = Learner(_policy(), LearnerSettings(batch_size=2, micro_batch=8), seed=0)
    rounds = train_local(
        learner, rounds=2, episodes=2, updates=0, width=WIDTH, height=HEIGHT, curriculum="learnability"
    )
    assert [r.episodes for r in rounds] == [2, 2]
    (draw,) = draws  # one draw for the whole run, told every episode's outcome
    played = [task for task in split_tasks("general", "train") if draw.learnability(task) < 0.25]
    assert len(played) == 4  # 4 tasks of the first sweep, each now less uncertain than an unplayed one


def test_train_local_plays_its_greedy_share_greedily(monkeypatch: pytest.MonkeyPatch) -> None:
    learner = Learner(_policy(), LearnerSettings(batch_size=2, micro_batch=8), seed=0)
    added: list[Trajectory] = []
    monkeypatch.setattr(learner, "add", added.append)
    train_local(learner, rounds=2, episodes=4, updates=0, width=WIDTH, height=HEIGHT, greedy_share=0.25)
    assert [t.temperature for t in added] == [1.0, 1.0, 1.0, 0.0] * 2
    for trajectory in added:
        greedy = trajectory.temperature == 0.0
        assert all((step.behaviour_logprob == 0.0) == greedy for step in trajectory.steps)


def test_the_actor_waits_for_the_critic_warm_up(played: list[Trajectory]) -> None:
    learner = _filled("a-ride", played, critic_warmup_updates=2)
    start = _adapter(learner)
    critics = _snapshot(_networks(learner))
    for _ in range(2):
        report = learner.update()
        assert report is not None
        assert report.trained_steps == 0
    assert all(torch.equal(v, start[k]) for k, v in _adapter(learner).items())
    assert not all(torch.equal(v, critics[k]) for k, v in _networks(learner).state_dict().items())
    report = learner.update()
    assert report is not None
    assert report.trained_steps > 0
    assert not all(torch.equal(v, start[k]) for k, v in _adapter(learner).items())


def test_the_actors_learning_rate_rises_over_its_warm_up(played: list[Trajectory]) -> None:
    plain = _filled("a-ride", played)
    warming = _filled("a-ride", played, lr_warmup_updates=4)
    start = _adapter(plain)
    moved = []
    for learner in (plain, warming):
        torch.manual_seed(1)  # the same dropout masks
        learner.update()
        moved.append({k: v - start[k] for k, v in _adapter(learner).items()})
    # Adam's first step moves each weight by about lr (its sign is the gradient's): a quarter of lr_actor
    # at the first of 4 warm-up updates
    for name, step in moved[0].items():
        torch.testing.assert_close(moved[1][name], step / 4, rtol=1e-3, atol=1e-7)
    assert any(bool(step.abs().max() > 1e-3) for step in moved[0].values())

    learner = _filled("a-ride", played, critic_warmup_updates=1, lr_warmup_updates=4)
    rates = []
    for _ in range(6):
        assert learner.update() is not None
        rates.append(learner.actor_optimiser.param_groups[0]["lr"])
    # the first update trains only the critics; the actor's first 4 at 1/4 ... 4/4 of lr_actor, then lr_actor
    assert rates[1:] == pytest.approx([1e-2 * k / 4 for k in (1, 2, 3, 4)] + [1e-2])


def test_gradient_checkpointing_trains_the_same_adapter(played: list[Trajectory]) -> None:
    # the same updates, activations kept or recomputed: the same weights (dropout draws included)
    plain = _filled("a-ride", played)
    recomputed = _filled("a-ride", played, gradient_checkpointing=True)
    assert _checkpointing(recomputed)
    assert not _checkpointing(plain)
    for learner in (plain, recomputed):
        torch.manual_seed(1)  # the same dropout masks
        learner.update()
        learner.update()
    before = _adapter(_learner("a-ride"))
    for name, value in _adapter(plain).items():
        assert not torch.equal(value, before[name]) or "lora_A" in name, name  # the adapter moved
        torch.testing.assert_close(_adapter(recomputed)[name], value, rtol=1e-4, atol=1e-6)


def _checkpointing(learner: Learner) -> bool:
    """Whether the model's layers recompute their activations in training."""
    return any(getattr(m, "gradient_checkpointing", False) is True for m in learner.policy.model.modules())


@pytest.mark.parametrize("poisoned", ["adapter", "critic"])
def test_an_update_that_meets_nan_is_refused_whole(played: list[Trajectory], poisoned: str) -> None:
    learner = _filled("a-ride", played)
    if poisoned == "adapter":  # damaged weights: the policy's log-probs become NaN
        state = learner.policy.adapter.state()
        name = next(iter(state))
        learner.policy.adapter.load_state({**state, name: torch.full_like(state[name], math.nan)})
    else:
        with torch.no_grad():
            next(iter(_networks(learner).step.parameters())).fill_(math.nan)
    adapter, critics = learner.policy.adapter.state(), _snapshot(_networks(learner))
    with pytest.raises(LearnerError, match=r"update 1 refused: the .* is not finite") as refused:
        learner.update()
    assert refused.value.quantity == ("logprob" if poisoned == "adapter" else "value")
    assert learner.updates == 0
    after = learner.policy.adapter.state()
    assert all(torch.equal(adapter[k], after[k]) or torch.isnan(adapter[k]).all() for k in adapter)
    for name, value in _snapshot(_networks(learner)).items():
        assert torch.equal(value.nan_to_num(), critics[name].nan_to_num()), name


def test_a_nan_actor_loss_undoes_the_critic_step(
    played: list[Trajectory], monkeypatch: pytest.MonkeyPatch
) -> None:
    learner = _filled("a-ride", played)
    critics = _snapshot(_networks(learner))
    real = Policy.token_scores

    def nan_logprobs(self: Policy, *args: Any, **kwargs: Any) -> Any:
        scores = real(self, *args, **kwargs)
        return scores._replace(logprob=scores.logprob * math.nan)

    monkeypatch.setattr(Policy, "token_scores", nan_logprobs)
    with pytest.raises(LearnerError) as refused:
        learner.update()
    assert refused.value.quantity == "actor_loss"
    assert learner.updates == 0
    for name, value in _snapshot(_networks(learner)).items():  # the critic had stepped: put back
        assert torch.equal(value, critics[name]), name


def _all_successful(played: list[Trajectory]) -> list[Trajectory]:
    out = []
    for trajectory in played:
        steps = (*trajectory.steps[:-1], dataclasses.replace(trajectory.steps[-1], reward=1.0))
        out.append(dataclasses.replace(trajectory, steps=steps, success=True))
    return out


@pytest.mark.parametrize(
    ("algorithm", "setting"),
    [("digirl", {"top": 0.3}), ("a-ride", {"trajectory_filter": "value", "trajectory_top": 0.3})],
)
def test_a_curriculum_trains_the_actor_on_its_top_share_of_the_batch_only(
    played: list[Trajectory], algorithm: str, setting: dict[str, Any]
) -> None:
    successes = _all_successful(played)
    longest = max(len(t.steps) for t in successes)
    everything = _filled(algorithm, successes).update()
    top = _filled(algorithm, successes, **setting).update()
    assert everything is not None
    assert top is not None
    assert top.steps == everything.steps  # the same batch; the critics see it all
    assert 0 < top.trained_steps <= longest  # ⌈0.3 × 3⌉ = one trajectory's steps at most
    assert everything.trained_steps > top.trained_steps


def _halved_targets(played: list[Trajectory], **changes: Any) -> tuple[torch.Tensor, list[ActorTargets]]:
    """A-RIDE's actor targets on failures whose last 3 steps were played by likelier answers (ρ = 1/2),
    with its settings as they are and with ``changes``: the batch's ρ and the two targets."""
    failures = _failures(played)
    plain = _filled("a-ride", failures, kl_coef=0.0)
    floored = _filled("a-ride", failures, kl_coef=0.0, **changes)
    # played by these weights (ρ = 1), but the last 3 steps of each by likelier ones (ρ = 1/2)
    with torch.no_grad():
        now = [
            plain.policy.logprobs([_input(t, step) for step in t.steps], [step.output for step in t.steps])[0]
            for t in failures
        ]
    shrunk = [
        dataclasses.replace(
            t,
            steps=tuple(
                dataclasses.replace(step, behaviour_logprob=value + math.log(2) * (i >= len(t.steps) - 3))
                for i, (step, value) in enumerate(zip(t.steps, logprobs.tolist(), strict=True))
            ),
        )
        for t, logprobs in zip(failures, now, strict=True)
    ]
    for learner in (plain, floored):
        learner.replay = _filled("a-ride", shrunk).replay
        with torch.no_grad():  # critics that expect little: advantages fall towards a failure's end
            for head in (_networks(learner).step, _networks(learner).trajectory):
                last = head[-1]
                assert isinstance(last, torch.nn.Linear)
                last.bias.fill_(-4.0)
    sample = plain.replay.sample(3)
    batches = [_scored(learner, sample) for learner in (plain, floored)]
    targets = [
        cast(ActorTargets, learner.algorithm.targets(batch, learner.algorithm.plan(batch)))
        for learner, batch in zip((plain, floored), batches, strict=True)
    ]
    assert all(isinstance(t, ActorTargets) for t in targets)
    return batches[0].rhos, targets


def test_a_push_down_stops_at_its_floor(played: list[Trajectory]) -> None:
    """Steps whose answers have lost enough likelihood since they were played (ρ below the floor) stop
    being pushed down; the others are weighed as before."""
    rhos, targets = _halved_targets(played, push_down_floor=0.9)
    spent = rhos < 0.9
    assert bool(spent.any())
    assert bool((~spent).any())
    assert bool((targets[0].decision[spent] < 0).any())
    assert bool((targets[1].decision[spent] >= 0).all())  # no push down past the floor
    torch.testing.assert_close(targets[1].decision[~spent], targets[0].decision[~spent])


def test_a_rho_floor_weighs_the_steps_below_it_as_if_at_the_floor(played: list[Trajectory]) -> None:
    """``rho_floor = 1``: a step played by a likelier answer (ρ = 1/2) weighs its advantage alone, twice
    what min(ρ, 1) gave it; the other steps are weighed as before."""
    rhos, targets = _halved_targets(played, rho_floor=1.0)
    low = rhos < 0.9
    assert bool(low.any())
    assert bool((~low).any())
    assert bool((targets[0].decision[low] != 0).any())
    for part in ("decision", "shared"):
        plain, floored = getattr(targets[0], part), getattr(targets[1], part)
        torch.testing.assert_close(floored[low], plain[low] / rhos[low])
        torch.testing.assert_close(floored[~low], plain[~low])


def test_learner_settings_built_in_python_are_checked_as_the_inventory_checks_them() -> None:
    """A batch of 0 was accepted; a negative learning rate was torch's error, naming no setting."""
    policy = Policy.load(PolicySettings(max_new_tokens=24), device="cpu", seed=0)
    for settings, said in [
        (LearnerSettings(batch_size=0), "learner.batch_size: must be greater than 0, got 0"),
        (LearnerSettings(lr_actor=-1.0), "learner.lr_actor: must be greater than 0, got -1"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(said)):
            Learner(policy, settings)
    with pytest.raises(ValueError, match="seed must be an integer from 0 to 9223372036854775807, not -1"):
        Learner(policy, LearnerSettings(), seed=-1)


def test_a_trajectory_no_update_could_train_on_is_refused_in_words(played: list[Trajectory]) -> None:
    """An unscored trajectory, a nan reward, an infinite log-prob or a version from the future were taken
    into the buffer; the update then trained on a failure, or met nan and was refused with no cause."""
    learner = _learner()
    good = played[-1]
    last = good.steps[-1]

    def last_step(**changes: Any) -> Trajectory:
        return dataclasses.replace(good, steps=(*good.steps[:-1], dataclasses.replace(last, **changes)))

    for trajectory, said in [
        (dataclasses.replace(good, success=None), "it has no score (success is None)"),
        (last_step(reward=math.nan), f"step {last.index}'s reward is nan, not a finite number"),
        (last_step(behaviour_logprob=-math.inf), f"step {last.index}'s behaviour log-prob is -inf"),
        (
            last_step(policy_version=1),
            f"step {last.index} was played by policy version 1; the learner is at 0",
        ),
    ]:
        refused = f"trajectory {good.id!r} cannot be trained on: {said}"
        with pytest.raises(ValueError, match=re.escape(refused)):
            learner.add(trajectory)
    assert len(learner.replay) == 0  # none of them went in
    assert learner.add(good)
    assert len(learner.replay) == 1
