"""Algorithms as loss modules: the registry, the group-relative ones (GRPO, RLOO, PPO's group baseline),
a user's own algorithm, the guards around any algorithm, and task groups from the sampler to the replay."""

from __future__ import annotations

import collections
import dataclasses
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch
from support import short_train_tasks, small_run
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from distrl.config import Inventory, LearnerSettings, PolicySettings, parse_inventory
from distrl.episodes import read_episodes
from distrl.errors import ConfigError, LearnerError
from distrl.fleet import collect, train
from distrl.fleet.ledger import Groups
from distrl.fleet.stop import Stop
from distrl.learner.algorithm import AdvantageTargets, Plan
from distrl.learner.algorithms import build, configure, names, resolve, with_options
from distrl.learner.contract import Guard, losses_problem
from distrl.learner.core import Learner
from distrl.learner.replay import ReplayBuffer
from distrl.learner.scoring import score
from distrl.local.play import rollouts
from distrl.policy import Policy
from distrl.records import EndReason, Trajectory
from distrl.sim.suites import tasks
from distrl.tasks.sampler import TaskSampler

USER_ALGORITHM = "examples.my_algorithm:Reinforce"


def _policy() -> Policy:
    return Policy.load(PolicySettings(max_new_tokens=24), device="cpu", seed=0)


@pytest.fixture(scope="session")  # built once per test process, however its tests interleave
def played() -> list[Trajectory]:
    """Two episodes of an untrained tiny, of two tasks, each cut to 5 steps (updates train on them all)."""
    chosen = short_train_tasks(2)
    return rollouts(_policy(), chosen, version=0, seed=1, parallel=2, width=270, height=600)


def _group(trajectory: Trajectory, key: str, outcomes: list[bool]) -> list[Trajectory]:
    """Plays of ``trajectory``'s task as one group, with these outcomes."""
    return [
        dataclasses.replace(trajectory, id=f"{trajectory.id}/{i}", group=key, success=success)
        for i, success in enumerate(outcomes)
    ]


def _learner(algorithm: str, groups: list[Trajectory], **changes: Any) -> Learner:
    settings = LearnerSettings(
        algorithm=algorithm, batch_size=len(groups), micro_batch=8, lr_actor=1e-2, critic_warmup_updates=0
    )
    learner = Learner(_policy(), with_options(settings, **changes), seed=0)
    for trajectory in groups:
        assert learner.add(trajectory)
    return learner


def test_the_registry_finds_every_built_in_and_a_users_own_by_module_and_class() -> None:
    assert names() == ["a-ride", "digirl", "filtered-bc", "grpo", "ppo", "rloo"]
    for name in names():
        assert resolve(name).name == name
    assert resolve(USER_ALGORITHM).name == "reinforce"
    with pytest.raises(ConfigError, match=r"learner\.algorithm: no algorithm 'sac' \(known: a-ride, digirl"):
        resolve("sac")
    settings = with_options(LearnerSettings(algorithm=USER_ALGORITHM), baseline="none")
    algorithm, options = configure(settings)
    assert (algorithm.name, options.baseline) == ("reinforce", "none")
    with pytest.raises(ConfigError, match=r"learner\.reinforce\.baseline: expected one of 'group', 'none'"):
        configure(with_options(LearnerSettings(algorithm=USER_ALGORITHM), baseline="mean"))


_REINFORCE = "from examples.my_algorithm import Reinforce, ReinforceSettings\n"


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (
            'raise RuntimeError("boom at import")\n',
            "does not load (RuntimeError: boom at import, {module}.py line 1)",
        ),
        ("class Algo(:\n    pass\n", "does not load (SyntaxError: invalid syntax, {module}.py line 1)"),
        (
            "import no_such_dependency\n",
            "does not load (ModuleNotFoundError: No module named 'no_such_dependency'",
        ),
        (
            _REINFORCE + "class Algo(Reinforce):\n    name = 42\n",
            "is not an algorithm: its name is not a string",
        ),
        (_REINFORCE + "class Algo(Reinforce):\n    name = 'a-ride'\n", "its name 'a-ride' is taken"),
        (_REINFORCE + "class Algo(Reinforce):\n    name = 'a_ride'\n", "its name 'a_ride' is taken"),
        (
            _REINFORCE + "class Algo(Reinforce):\n    name = 'my algo!'\n",
            "its name 'my algo!' is not lower-case",
        ),
        (
            "import dataclasses\n" + _REINFORCE + "@dataclasses.dataclass(frozen=True, kw_only=True)\n"
            "class Needs:\n    x: int\nclass Algo(Reinforce):\n    name = 'needs'\n    Settings = Needs\n",
            "its Settings field 'x' has no default",
        ),
        ("class Algo:\n    name = 'bare'\n", "it has no Settings, prioritised, plan, targets, loss"),
    ],
    ids=[
        "raises",
        "syntax",
        "dependency",
        "name-42",
        "name-taken",
        "name-taken-as-table",
        "name-weird",
        "required",
        "bare",
    ],
)
def test_a_users_class_that_does_not_load_or_is_not_an_algorithm_is_one_line_naming_what(
    tmp_path: Path, request: pytest.FixtureRequest, source: str, words: str
) -> None:
    module = f"algo_{abs(hash(request.node.name))}"  # each case its own module: imported once per process
    (tmp_path / f"{module}.py").write_text(source)
    inventory = str(tmp_path / "hosts.toml")  # its folder is where the module is found
    with pytest.raises(ConfigError) as refused:
        resolve(f"{module}:Algo", source=inventory)
    message = str(refused.value)
    assert message.startswith(f"{inventory}: learner.algorithm: '{module}:Algo' "), message
    assert words.format(module=module) in message
    assert "\n" not in message


class _InitRaises:
    name, Settings, prioritised = "initraises", dataclasses.make_dataclass("S", []), False
    networks: object = None
    plan = targets = loss = None

    def __init__(self, settings: Any, *, features: int) -> None:
        raise RuntimeError("init is broken")


class _NoFeatures(_InitRaises):
    name = "nofeatures"

    def __init__(self, settings: Any) -> None:
        pass


class _NetworksNotModule(_InitRaises):
    name = "netsnotmodule"
    networks = "critic"

    def __init__(self, settings: Any, *, features: int) -> None:
        pass


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        (
            _InitRaises,
            "the algorithm 'initraises' (test_algorithms:_InitRaises) failed to start (RuntimeError: init is"
            " broken, test_algorithms.py line",
        ),
        (
            _NoFeatures,
            "failed to start (TypeError: _NoFeatures.__init__() got an unexpected keyword argument"
            " 'features'): it is built as Class(settings, *, features=H)",
        ),
        (
            _NetworksNotModule,
            "the algorithm 'netsnotmodule' (test_algorithms:_NetworksNotModule): its networks are"
            " str 'critic', not a torch.nn.Module or None",
        ),
    ],
)
def test_an_algorithm_that_fails_to_start_is_one_line_naming_it(cls: Any, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        build(cls, cls.Settings(), features=8, source="hosts.toml")
    assert str(refused.value).startswith("hosts.toml: learner.algorithm: ")
    assert words in str(refused.value)


def test_the_learner_builds_its_algorithm_as_check_does(monkeypatch: pytest.MonkeyPatch) -> None:
    reinforce = resolve(USER_ALGORITHM)

    def broken(self: Any, settings: Any, *, features: int) -> None:
        raise RuntimeError("init is broken")

    monkeypatch.setattr(reinforce, "__init__", broken)
    with pytest.raises(
        ConfigError, match=r"the algorithm 'reinforce' .* failed to start \(RuntimeError: init"
    ):
        Learner(_policy(), LearnerSettings(algorithm=USER_ALGORITHM), seed=0)


@pytest.mark.parametrize(
    ("learner", "words"),
    [
        ("grpo = 3\n", "learner.grpo: an algorithm's settings are a table, [learner.grpo]"),
        ("a_ride = 3\n", "learner.a_ride: an algorithm's settings are a table, [learner.a_ride]"),
        ("a-ride = 3\n", "learner.a-ride: an algorithm's settings are a table, [learner.a_ride]"),
        ("[learner.a_ride]\nrho_clip = nan\n", "learner.a_ride.rho_clip: must be a number, not nan"),
        (
            "[learner.a_ride]\nrho_clip = 1.5\nrho_floor = 2\n",
            "learner.a_ride.rho_floor: must be at most rho_clip (1.5), got 2",
        ),
    ],
    ids=["grpo", "a_ride", "a-ride", "nan", "floor-over-clip"],
)
def test_an_algorithms_table_as_a_value_or_a_bad_value_in_it_says_so(learner: str, words: str) -> None:
    text = f'[learner]\n{learner}\n[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = {{ sim = 2 }}\n'
    with pytest.raises(ConfigError) as refused:
        configure(parse_inventory(text, source="hosts.toml").learner, source="hosts.toml")
    assert str(refused.value) == f"hosts.toml: {words}"


def test_grpo_contrasts_the_plays_of_a_task_and_drops_the_groups_that_all_scored_alike(
    played: list[Trajectory],
) -> None:
    mixed = _group(played[0], "g1", [True, False])
    uniform = _group(played[1], "g2", [True, True])
    learner = _learner("grpo", [*mixed, *uniform])
    start = learner.policy.adapter.state()
    sample = learner.replay.sample(4, whole_groups=True)
    assert sorted(t.group for t in sample.trajectories) == ["g1", "g1", "g2", "g2"]  # whole groups
    batch = score(learner.policy, sample, micro_batch=8, hidden=learner.hidden, ranks=learner.ranks).batch
    plan = learner.algorithm.plan(batch)
    assert plan.advantages is not None
    # the group of a success and a failure: mean 1/2, deviation 1/2, so ±1 on every step; the other: 0
    for trajectory, (start_row, end_row) in zip(sample.trajectories, batch.spans, strict=True):
        expected = (1.0 if trajectory.success else -1.0) if trajectory.group == "g1" else 0.0
        assert plan.advantages[start_row:end_row].tolist() == [expected] * (end_row - start_row)
    assert plan.stats["uniform_groups"] == 0.5
    targets = learner.algorithm.targets(batch, plan)
    assert isinstance(targets, AdvantageTargets)
    assert int(targets.trained.sum()) == 2 * len(played[0].steps)

    report = learner.update()
    assert report is not None
    assert report.trained_steps == 2 * len(played[0].steps)
    assert report.stats["uniform_groups"] == 0.5
    assert set(report.losses) == {"surrogate"}
    assert math.isfinite(report.losses["surrogate"])
    assert any(not torch.equal(v, start[k]) for k, v in learner.policy.adapter.state().items())


def test_rloo_and_a_users_reinforce_give_the_success_the_push_up_and_the_failure_the_push_down(
    played: list[Trajectory],
) -> None:
    """With π_θ = π_prox at the step and ρ = 1, each loss's gradient on an answer's log π is −A/N: the
    success's log-likelihood rises, the failure's falls."""
    for algorithm, loss_name in (("rloo", "surrogate"), (USER_ALGORITHM, "reinforce")):
        learner = _learner(algorithm, _group(played[0], "g1", [True, False]), kl_coef=0.0)
        report = learner.update()
        assert report is not None
        assert set(report.losses) == {loss_name}
        assert report.trained_steps == 2 * len(played[0].steps)
        # RLOO: A = R − the other's R = ±1; REINFORCE, group mean: ±1/2. Each trains both plays.
        assert report.mean_advantage == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("baseline", ["value", "group"])
def test_ppo_trains_every_step_with_either_baseline(played: list[Trajectory], baseline: str) -> None:
    groups = [*_group(played[0], "g1", [True, False]), *_group(played[1], "g2", [False, False])]
    learner = _learner("ppo", groups, baseline=baseline)
    assert (learner.networks is not None) == (baseline == "value")
    report = learner.update()
    assert report is not None
    assert report.trained_steps == report.steps
    assert set(report.losses) == {"surrogate"}
    assert math.isfinite(report.actor_loss)
    assert (report.critic_loss > 0) == (baseline == "value")
    assert "capped_share" in report.stats


_FAULTS: dict[str, tuple[str, Any, str]] = {
    # fault: (the method broken, its broken body, what the refusal says after "the algorithm 'reinforce' ")
    "raises": ("loss", lambda *a: {"a": 1}["b"], "failed in its loss (KeyError: 'b')"),
    "nan": (
        "loss",
        lambda s, b, t, c: {"reinforce": c.logprob.sum() * math.nan},
        "loss 'reinforce' is not finite",
    ),
    "float": (
        "loss",
        lambda *a: 3.0,
        "broke its contract: its loss returned a float, not a dict of scalar tensors",
    ),
    "list": ("loss", lambda s, b, t, c: [c.logprob.sum()], "its loss returned a list, not a dict of scalar"),
    "empty": ("loss", lambda *a: {}, "its loss returned no loss for steps it trains"),
    "vector": (
        "loss",
        lambda s, b, t, c: {"v": -c.logprob},
        "its loss 'v' is a tensor of shape (",
    ),
    "constant": ("loss", lambda *a: {"x": torch.tensor(1.0)}, "its loss 'x' has no gradient"),
    "plan": ("plan", lambda *a: None, "broke its contract: its plan returned None, not a Plan"),
    # were taken: the update then failed after its steps, the adapter changed and the update not counted
    "negative priorities": (
        "plan",
        lambda s, b: Plan(network_loss=None, advantages=None, priorities=[-1.0] * len(b.trajectories)),
        "its plan's priorities hold -1: a priority is a sampling weight, 0 or more",
    ),
    "integer advantages": (
        "plan",
        lambda s, b: Plan(network_loss=None, advantages=torch.ones(len(b.logprob), dtype=torch.long)),
        "its plan's advantages are a tensor of torch.int64, not of floating point",
    ),
    # was taken silently: a critic kept outside ``networks`` was never trained, saved or moved
    "loss without networks": (
        "plan",
        lambda s, b: Plan(network_loss=b.logprob.sum() * 0, advantages=None),
        "its plan returned a network_loss, but its networks are None",
    ),
    "targets": (
        "targets",
        lambda *a: [True, False],
        "its targets' trained is None, not a tensor of the batch's",
    ),
}


@pytest.mark.parametrize("fault", list(_FAULTS))
def test_an_algorithm_that_fails_ends_the_update_naming_it_and_changes_nothing(
    played: list[Trajectory], monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    reinforce = resolve(USER_ALGORITHM)  # found as a run finds it, whatever ran before in this process
    method, body, words = _FAULTS[fault]
    monkeypatch.setattr(reinforce, method, body)
    learner = _learner(USER_ALGORITHM, _group(played[0], "g1", [True, False]))
    adapter = learner.policy.adapter.state()
    with pytest.raises(LearnerError) as refused:
        learner.update()
    message = str(refused.value)
    assert message.startswith("update 1 refused: "), message
    assert "'reinforce'" in message
    assert words in message, message
    assert message.count("\n") == 0
    # a user's own loss is among the causes named for a NaN; not for its other faults
    assert (f"{USER_ALGORITHM}'s own loss" in message) == (fault == "nan")
    assert learner.updates == 0
    assert all(torch.equal(v, adapter[k]) for k, v in learner.policy.adapter.state().items())
    assert not any(state for state in learner.actor_optimiser.state.values())


def test_losses_each_finite_whose_sum_is_not_are_refused_naming_the_sum_or_the_anchor(
    played: list[Trajectory], monkeypatch: pytest.MonkeyPatch
) -> None:
    reinforce = resolve(USER_ALGORITHM)
    huge = 3e38  # finite in float32; two of them are not
    monkeypatch.setattr(
        reinforce,
        "loss",
        lambda s, b, t, c: {"a": c.logprob.sum() * 0 + huge, "b": c.logprob.sum() * 0 + huge},
    )
    for kl_coef, words in (
        (1.0, "refused: the loss with its KL anchor is not finite"),
        (0.0, "refused: the sum of the 'reinforce' losses is not finite"),
    ):
        learner = _learner(USER_ALGORITHM, _group(played[0], "g1", [True, False]), kl_coef=kl_coef)
        with pytest.raises(LearnerError, match=words):
            learner.update()
        assert learner.updates == 0


def test_a_non_finite_quantity_names_the_part_of_a_users_algorithm_that_computed_it() -> None:
    guard = Guard(update=3, algorithm="mine", source="pkg.mod:Mine")
    said = {}
    for quantity in ("actor_loss", "critic_loss", "advantage", "kl", "logprob"):
        with pytest.raises(LearnerError) as refused:
            guard.finite(quantity, torch.tensor([1.0, math.nan]))
        said[quantity] = str(refused.value)
    assert said["actor_loss"].endswith("damaged weights or pkg.mod:Mine's own loss do this")
    assert said["critic_loss"].endswith("damaged weights or pkg.mod:Mine's own plan's network_loss do this")
    assert said["advantage"].endswith("damaged weights or pkg.mod:Mine's own plan do this")
    for theirs in ("kl", "logprob"):  # the core's and the policy's, not the algorithm's
        assert said[theirs].endswith("A learning rate too high, or damaged weights, do this")
    built_in = Guard(update=3, algorithm="a-ride", source="a-ride")
    with pytest.raises(LearnerError, match=r"or damaged weights, do this$"):
        built_in.finite("actor_loss", torch.tensor(math.inf))
    assert losses_problem({"x": torch.tensor(1.0)}) == (
        "its loss 'x' has no gradient: it is not computed from the chunk's log-probs (a constant, or"
        " detached)"
    )


@pytest.mark.anyio
async def test_the_sampler_hands_a_group_to_k_devices_on_different_hosts_and_keeps_a_lost_member_in_it() -> (
    None
):
    pool = tasks("general", "train")[:5]
    sampler = TaskSampler(pool, random.Random(0), run_name="t", limit=None, stop=Stop(), group_size=3)
    devices = [("a", "sim-0"), ("b", "sim-0"), ("c", "sim-0"), ("a", "sim-1"), ("b", "sim-1"), ("c", "sim-1")]
    jobs = []
    for host, device in devices:
        job = await sampler.take(device, host)
        assert job is not None
        jobs.append((host, device, job))
    groups: dict[str, list[tuple[str, str, Any]]] = collections.defaultdict(list)
    for host, device, job in jobs:
        groups[job.group].append((host, device, job))
    assert len(groups) == 2
    for members in groups.values():
        assert len(members) == 3
        assert len({job.task.id for _, _, job in members}) == 1  # one task
        assert len({host for host, _, _ in members}) == 3  # on three hosts, as there are three
    # a member lost on the way is handed out again, in its group
    _, _, lost = jobs[0]
    sampler.failed_episode(lost.task, "link_lost", lost.group)
    again = await sampler.take("sim-1", "c")
    assert again is not None
    assert (again.group, again.task.id) == (lost.group, lost.task.id)
    # one device that holds a member of every open group starts a new one
    taken = await sampler.take("sim-0", "a")
    assert taken is not None
    second = await sampler.take("sim-0", "a")
    assert second is not None
    assert second.group != taken.group
    assert sampler.groups == 4
    # on one host, a group fills from its devices
    alone = TaskSampler(pool, random.Random(0), run_name="t", limit=None, stop=Stop(), group_size=3)
    one_host = [await alone.take(f"sim-{k}", "local") for k in range(6)]
    assert [job.group.rsplit("/", 1)[1] for job in one_host if job] == ["g0000001"] * 3 + ["g0000002"] * 3


def test_the_ledger_hands_a_group_on_whole_or_short_and_says_which(
    played: list[Trajectory], caplog: pytest.LogCaptureFixture
) -> None:
    groups = Groups(3)
    first, second, third = _group(played[0], "g1", [True, False, True])
    assert groups.arrived(first, trainable=True) == []
    assert groups.arrived(second, trainable=True) == []
    assert groups.waiting == 1
    assert groups.arrived(third, trainable=True) == [first, second, third]
    assert (groups.whole, groups.short, groups.waiting) == (1, 0, 0)
    # a member that arrives unscored: the group goes on without it, counted short, and the log says so
    one, two, three = _group(played[1], "g2", [True, False, True])
    with caplog.at_level("INFO", logger="distrl.fleet.ledger"):
        assert groups.arrived(one, trainable=False) == []
        assert groups.arrived(two, trainable=True) == []
        assert groups.arrived(three, trainable=True) == [two, three]
    assert (groups.whole, groups.short) == (1, 1)
    assert f"member {one.id} arrived with no score" in caplog.text
    assert "group g2 delivered short: 2 of 3 members" in caplog.text
    # a member cut short by its device is no data either (the learner refuses it): the group is short,
    # where it was counted whole and handed on with a member the learner then dropped
    cut, kept, other = _group(played[1], "g3", [True, False, True])
    cut = dataclasses.replace(cut, end_reason=EndReason.DEVICE_ERROR)
    with caplog.at_level("INFO", logger="distrl.fleet.ledger"):
        assert groups.arrived(cut, trainable=True) == []
        assert groups.arrived(kept, trainable=True) == []
        assert groups.arrived(other, trainable=True) == [kept, other]
    assert (groups.whole, groups.short) == (1, 2)
    assert f"member {cut.id} was cut short (device_error)" in caplog.text
    # outside a group, or without groups, a trajectory passes at once
    assert Groups(1).arrived(first, trainable=True) == [first]
    assert groups.arrived(dataclasses.replace(first, group=""), trainable=True) == [
        dataclasses.replace(first, group="")
    ]


def test_the_replay_samples_whole_groups(played: list[Trajectory]) -> None:
    buffer = ReplayBuffer(10_000, alpha=0.0, beta=1.0, seed=0)
    held = [
        *_group(played[0], "g1", [True, False, False]),
        *_group(played[1], "g2", [True, True, False]),
        dataclasses.replace(played[0], id="alone"),
    ]
    for trajectory in held:
        assert buffer.add(trajectory, learner_version=0)
    for _ in range(20):
        sample = buffer.sample(4, whole_groups=True)
        counts = collections.Counter(t.group for t in sample.trajectories)
        assert all(counts[g] in (0, 3) for g in ("g1", "g2"))  # a group is in whole or not at all
        assert counts[""] <= 1  # a trajectory of no group is drawn once too (it was drawn again)
        assert len(sample.trajectories) >= 4
        assert len(sample.weights) == len(sample.trajectories) == len(sample.keys)
    assert buffer.sample(1, whole_groups=True).trajectories  # a draw of one brings its group
    plain = buffer.sample(4)
    assert len(plain.trajectories) == 4


def _fleet(tmp_path: Path, algorithm: str) -> Inventory:
    """Two simulated phones on this machine, task groups of two, and ``algorithm``."""
    run = small_run(tmp_path / "runs", run="max_trajectories = 8").replace(
        "[learner]\n", f'[learner]\nalgorithm = "{algorithm}"\ncritic_warmup_updates = 0\n'
    )
    text = f"""{run}
[tasks]
group_size = 2

[sim]
width = 270
height = 600
latency = "off"
nuisances = false

[[hosts]]
name = "local"
address = "localhost"
[hosts.devices]
sim = 2
"""
    return parse_inventory(text, source=str(tmp_path / "hosts.toml"))


@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_a_users_algorithm_trains_through_the_fleet_by_name_on_task_groups(tmp_path: Path) -> None:
    stats = await train(_fleet(tmp_path, USER_ALGORITHM))
    assert stats.completed == 8
    assert stats.updates >= 1
    board = EventAccumulator(str(tmp_path / "runs" / "t" / "tensorboard"))
    board.Reload()  # TensorBoard's own reader: what the algorithm reported, every update
    shares = [event.value for event in board.Scalars("learner/trained_share")]
    assert len(shares) == stats.updates
    assert all(0 <= share <= 1 for share in shares)
    recorded = await anyio.to_thread.run_sync(
        lambda: list(read_episodes(tmp_path / "runs" / "t" / "episodes"))
    )
    groups = collections.defaultdict(list)
    for episode in recorded:
        groups[episode.group].append(episode)
    assert "" not in groups
    for members in groups.values():  # each group: one task, on both phones
        assert len({m.task.id for m in members}) == 1
        assert len({m.device for m in members}) == len(members) <= 2


@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_collect_plays_each_task_on_k_devices_for_pass_at_k(tmp_path: Path) -> None:
    inventory = _fleet(tmp_path, "a-ride")
    result = await collect(inventory, tasks=tasks("general", "test")[:3], episodes=6, group_size=2)
    groups = collections.defaultdict(list)
    for trajectory in result.trajectories:
        groups[trajectory.group].append(trajectory)
    assert sorted(len(members) for members in groups.values()) == [2, 2, 2]
    for members in groups.values():
        assert len({m.task.id for m in members}) == 1
        assert {m.device for m in members} == {"sim-0", "sim-1"}
    with pytest.raises(ValueError, match="group_size must be between 1 and the fleet's 2 device"):
        await collect(inventory, episodes=2, group_size=3)
    with pytest.raises(ValueError, match="episodes 5 is not a multiple of group_size 2: each task is played"):
        await collect(inventory, episodes=5, group_size=2)  # no task is played by a group cut short


@pytest.mark.parametrize(
    ("learner", "words"),
    [
        (
            'algorithm = "grpx"\n',
            "learner.algorithm: no algorithm 'grpx' (known: a-ride, digirl, filtered-bc",
        ),
        ("[learner.grpo]\nclip = -1\n", "learner.grpo.clip: must be greater than 0"),
        ("gamma = 0.5\n", "learner.gamma is now learner.a_ride.gamma"),
        (  # check builds the algorithm once, as the learner will
            'algorithm = "broken_start:Broken"\n',
            "learner.algorithm: the algorithm 'broken' (broken_start:Broken) failed to start"
            " (RuntimeError: init is broken, broken_start.py line 7)",
        ),
        (  # was taken, then failed to build in a traceback (AttributeError: no __qualname__)
            'algorithm = "broken_start:INSTANCE"\n',
            "learner.algorithm: 'broken_start:INSTANCE' is not an algorithm: it is a Broken object, not a"
            " class (name the class: module:Class)",
        ),
        (  # was taken: each update of grpo then trained 4 trajectories, not the 3 asked for
            'algorithm = "grpo"\nbatch_size = 3\n[tasks]\ngroup_size = 2\n',
            "learner.batch_size: is 3, not a multiple of tasks.group_size (2): 'grpo' trains whole task"
            " groups, so each update would take 4 trajectories",
        ),
        (  # was taken: each member added evicted the one before, and no group was ever whole
            'algorithm = "grpo"\nreplay_capacity = 15\n[tasks]\ngroup_size = 2\n',
            "learner.replay_capacity: is 15 steps, less than one task group's episodes can take (2 × 10,"
            " the longest task's step limit = 20): 'grpo' trains whole groups",
        ),
        (  # was "no algorithm 'broken_start:NOTHING'", as if nothing had that name
            'algorithm = "broken_start:NOTHING"\n',
            "learner.algorithm: 'broken_start:NOTHING' is not an algorithm: it is None, not a class",
        ),
    ],
)
def test_check_refuses_an_algorithm_or_its_table_in_one_line(
    tmp_path: Path, learner: str, words: str
) -> None:
    (tmp_path / "broken_start.py").write_text(
        "import dataclasses\n\n\nclass Broken:\n"
        "    name, Settings, prioritised = 'broken', dataclasses.make_dataclass('S', []), False\n"
        "    def __init__(self, settings, *, features):\n"
        "        raise RuntimeError('init is broken')\n"
        "    plan = targets = loss = None\n"
        "\n\nINSTANCE, NOTHING = object.__new__(Broken), None\n"
    )
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[learner]\n{learner}\n[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = {{ sim = 2 }}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "distrl", "check", str(inventory)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert words in lines[0]
    assert lines[0].startswith(f"distrl: error: {inventory}: ")


def test_losses_on_two_devices_are_refused_naming_each() -> None:
    """Summing them was torch's own RuntimeError, outside the update's guard: a traceback on a GPU run
    whose algorithm computed a regulariser on the CPU."""
    on_cpu = torch.tensor(1.0, requires_grad=True) * 2
    elsewhere = torch.tensor(1.0, device="meta", requires_grad=True) * 2
    assert losses_problem({"actor": on_cpu}) == ""
    assert losses_problem({"actor": on_cpu, "regulariser": elsewhere}) == (
        "its losses are on different devices ('actor' on cpu, 'regulariser' on meta): compute each on the"
        " batch's device"
    )
