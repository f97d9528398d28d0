"""The learner on several ranks (``distrl.learner.ranks``, gloo on the CPU): the same update as one rank,
checkpoints that do not depend on the number of ranks, and ranks that fail ending the run with one
error, never a hang."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from support import short_train_tasks

from distrl.config import (
    LearnerSettings,
    PolicySettings,
    learner_settings_json,
    parse_inventory,
    parse_learner_settings,
)
from distrl.errors import ConfigError, LearnerError, RankError
from distrl.learner.algorithms import check, with_options
from distrl.learner.core import Learner
from distrl.learner.rank_processes import Child
from distrl.learner.ranks import Ranks, _bounds
from distrl.local.play import rollouts
from distrl.policy import Policy
from distrl.records import Trajectory

pytestmark = pytest.mark.timeout(300)  # each starts rank processes that load torch and the policy

POLICY = PolicySettings(max_new_tokens=24, lora_dropout=0.0)
"""No LoRA dropout: each rank would draw its own masks, and the comparison with one rank is exact."""


@pytest.fixture(autouse=True)
def no_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 0 never sends a Python object through torch.distributed (which would pickle it): tensors and
    the project's own frames only."""
    import torch.distributed.distributed_c10d as c10d

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an object collective pickled something between ranks")

    monkeypatch.setattr(c10d, "_object_to_tensor", refuse)


def _policy() -> Policy:
    return Policy.load(POLICY, device="cpu", seed=0)


@pytest.fixture(scope="session")  # built once per test process, however its tests interleave
def played() -> list[Trajectory]:
    """Five episodes of tiny on the sim, two of them marked successful (so every algorithm trains), each cut
    to 5 steps (updates train on them all)."""
    chosen = short_train_tasks(5)
    trajectories = rollouts(_policy(), chosen, version=0, seed=3, parallel=5, width=270, height=600)
    return [dataclasses.replace(t, success=i % 2 == 1) for i, t in enumerate(trajectories)]


def _learner(played: list[Trajectory], algorithm: str, ranks: int, **changes: Any) -> Learner:
    changes.setdefault("collective_timeout_s", 60)
    settings = with_options(
        LearnerSettings(
            algorithm=algorithm,
            batch_size=4,
            micro_batch=3,
            lr_actor=1e-2,
            critic_warmup_updates=0,
            ranks=ranks,
        ),
        **changes,
    )
    learner = Learner(_policy(), settings, seed=0)
    for trajectory in played:
        assert learner.add(trajectory)
    return learner


def _state(learner: Learner) -> dict[str, torch.Tensor]:
    state = {f"adapter.{k}": v for k, v in learner.policy.adapter.state().items()}
    if learner.networks is not None:
        state.update({f"critics.{k}": v.detach().clone() for k, v in learner.networks.state_dict().items()})
    return state


def _recording_gradients(learner: Learner) -> list[list[torch.Tensor]]:
    """The gradients each optimiser step of ``learner`` applies (after the all-reduce and the clip)."""
    steps: list[list[torch.Tensor]] = []
    for optimiser in (learner.actor_optimiser, learner.critic_optimiser):
        if optimiser is None:
            continue
        step = optimiser.step

        def recorded(*args: Any, _step: Any = step, _optimiser: Any = optimiser, **kwargs: Any) -> Any:
            params = [p for group in _optimiser.param_groups for p in group["params"]]
            steps.append([torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in params])
            return _step(*args, **kwargs)

        optimiser.step = recorded  # type: ignore[method-assign]
    return steps


def _assert_same_gradients(ours: list[list[torch.Tensor]], theirs: list[list[torch.Tensor]]) -> None:
    assert len(ours) == len(theirs) > 0
    for mine, other in zip(ours, theirs, strict=True):
        scale = max(float(g.abs().max()) for g in other)
        assert scale > 0  # the step trains something: the comparison is not of zeros
        for a, b in zip(mine, other, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("algorithm", ["a-ride", "digirl", "filtered-bc"])
def test_two_ranks_take_the_same_update_as_one(played: list[Trajectory], algorithm: str) -> None:
    """The same batch, the same gradients (summed over the ranks' shares), so the same step. Compared on
    the first update's gradients: Adam's first step is about lr·sign(g), so after it a gradient element
    within rounding of 0 may differ by 2·lr whatever the ranks do."""
    one = _learner(played, algorithm, 1)
    alone = _recording_gradients(one)
    report = one.update()
    with _learner(played, algorithm, 2) as two:
        together = _recording_gradients(two)
        shared = two.update()
        assert isinstance(two.ranks, Ranks)
        assert two.ranks.reduced_bytes > 0
        torch.testing.assert_close(_state(two), _state(one), rtol=1e-4, atol=2.5e-2)  # the same step, near
    _assert_same_gradients(together, alone)
    assert report is not None
    assert shared is not None
    assert (report.trained_steps, report.steps) == (
        shared.trained_steps,
        shared.steps,
    )
    assert report.trained_steps > 0
    assert shared.actor_loss == pytest.approx(report.actor_loss, rel=1e-4, abs=1e-6)
    assert shared.critic_loss == pytest.approx(report.critic_loss, rel=1e-5)
    assert shared.kl == pytest.approx(report.kl, rel=1e-4, abs=1e-6)


def test_a_checkpoint_of_two_ranks_resumes_with_one_and_the_reverse(
    played: list[Trajectory], tmp_path: Path
) -> None:
    with _learner(played, "a-ride", 2) as two:
        two.update()
        two.save(tmp_path / "two")
        saved = _state(two)
    one = _learner(played, "a-ride", 1)
    one.load(tmp_path / "two")
    assert one.updates == 1
    torch.testing.assert_close(_state(one), saved, rtol=0, atol=0)
    one.update()
    one.save(tmp_path / "one")
    # two ranks resume a checkpoint of one: rank 1 must train from what rank 0 loaded (adapter, critics and
    # optimiser moments), or its share of the next updates' gradients would differ
    expected = _learner(played, "a-ride", 1)
    expected.load(tmp_path / "one")
    alone = _recording_gradients(expected)
    expected.update()
    expected.update()
    with _learner(played, "a-ride", 2) as resumed:
        resumed.load(tmp_path / "one")
        assert resumed.updates == 2
        together = _recording_gradients(resumed)
        resumed.update()
        resumed.update()
    _assert_same_gradients(together, alone)


def test_a_rank_that_dies_ends_the_update_with_one_error_naming_it(played: list[Trajectory]) -> None:
    learner = _learner(played, "a-ride", 2, collective_timeout_s=30)
    try:
        assert isinstance(learner.ranks, Ranks)
        child = learner.ranks._children[0]
        assert isinstance(child, Child)
        child.kill()
        with pytest.raises(RankError, match=r"learner rank 1 died") as caught:
            learner.update()
        assert (caught.value.rank, caught.value.reason) == (1, "died")
    finally:
        learner.close()  # closing after a death neither hangs nor raises


def test_an_update_that_breaks_on_rank_0_ends_without_waiting_for_the_others(
    played: list[Trajectory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 waits in an exchange rank 0 will never make: closing must not wait for it."""
    learner = _learner(played, "a-ride", 2, collective_timeout_s=120)
    assert isinstance(learner.ranks, Ranks)
    child = learner.ranks._children[0]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the screen could not be decoded")

    monkeypatch.setattr(learner.policy, "score", broken)
    with pytest.raises(RuntimeError, match="could not be decoded"):
        learner.update()
    started = time.monotonic()
    learner.close()
    assert time.monotonic() - started < 15  # not collective_timeout_s
    assert child.exited()


def test_a_loss_that_breaks_on_another_rank_refuses_the_update_on_rank_0_without_waiting(
    played: list[Trajectory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's algorithm whose loss is NaN on rank 1 only: rank 0 learns it through the update's one sum
    (``Ranks.total``), refuses the update naming the algorithm, and stays as it was."""
    (tmp_path / "rank_one_breaks.py").write_text(
        "import torch.distributed as dist\n"
        "from distrl.learner.algorithms.a_ride import ARide\n"
        "class Broken(ARide):\n"
        "    name = 'breaks-on-rank-one'\n"
        "    def loss(self, batch, targets, chunk):\n"
        "        losses = super().loss(batch, targets, chunk)\n"
        "        if dist.is_initialized() and dist.get_rank() == 1:\n"
        "            return {name: value * float('nan') for name, value in losses.items()}\n"
        "        return losses\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # rank 1's process imports it too
    with _learner(played, "rank_one_breaks:Broken", 2, collective_timeout_s=120) as learner:
        before = _state(learner)
        started = time.monotonic()
        with pytest.raises(LearnerError) as refused:
            learner.update()
        assert time.monotonic() - started < 60  # not collective_timeout_s
        assert str(refused.value).startswith(
            "update 1 refused: the algorithm 'breaks-on-rank-one''s loss failed on another rank"
        )
        assert learner.updates == 0
        torch.testing.assert_close(_state(learner), before, rtol=0, atol=0)


def test_a_rank_that_cannot_start_is_named_with_its_last_words(played: list[Trajectory]) -> None:
    with pytest.raises(RankError, match=r"learner rank 1 did not start \(exit code 1\): .*cuda") as caught:
        _learner(played, "a-ride", 2, devices=("cpu", "cuda:7"))
    assert caught.value.reason == "start"


def test_every_rank_finds_a_users_algorithm_where_the_inventory_check_found_it(
    played: list[Trajectory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``module:Class`` beside the inventory was found by rank 0 (its check looks there) and by no other
    rank, a process of its own: run from another folder, rank 1 did not start."""
    module = f"ranked_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(
        "from distrl.learner.algorithms.filtered_bc import FilteredBC\n\n\n"
        "class Mine(FilteredBC):\n    name = 'mine-ranked'\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    check(LearnerSettings(algorithm=f"{module}:Mine"), source=str(tmp_path / "hosts.toml"))  # as run does
    learner = _learner(played, f"{module}:Mine", 2)
    try:
        assert learner.update() is not None  # both ranks trained it
    finally:
        learner.close()


def test_shares_cover_the_batch_once_in_order() -> None:
    assert _bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert _bounds(1, 2) == [(0, 1), (1, 1)]  # a rank may have nothing to do, and still takes part


def test_rank_settings_travel_as_checked_json_and_devices_are_one_per_rank() -> None:
    learner = LearnerSettings(ranks=2, devices=("cuda:0", "cuda:1"), kl_coef=0.5)
    assert parse_learner_settings(learner_settings_json(POLICY, learner)) == (POLICY, learner)
    with pytest.raises(ConfigError, match=r"learner\.ranks"):
        parse_learner_settings('{"learner": {"ranks": 0}}')
    with pytest.raises(ConfigError, match=r"learner\.devices.*names 1 device\(s\) for learner\.ranks = 2"):
        parse_inventory('[learner]\nranks = 2\ndevices = ["cpu"]\n')


def test_distrl_run_under_torchrun_on_two_nodes_trains_with_both(tmp_path: Path) -> None:
    """Two "machines" on loopback: two ``torchrun`` launches meeting at one c10d rendezvous, each running
    the same ``python -m distrl run``. Rank 0 runs the fleet; the other trains with it and ends with it."""
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[run]\noutput_dir = "{tmp_path / "runs"}"\nmax_trajectories = 8\n'
        "[learner]\nbatch_size = 2\nmin_new_trajectories = 2\ncritic_warmup_updates = 0\nmicro_batch = 4\n"
        "collective_timeout_s = 120\n[policy]\nmax_new_tokens = 24\n"
        '[sim]\nlatency = "off"\nwidth = 270\nheight = 600\n'
        '[[hosts]]\nname = "here"\naddress = "localhost"\ndevices = { sim = 2 }\n'
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    torchrun = Path(sys.executable).with_name("torchrun")
    launches = [
        subprocess.Popen(
            [
                str(torchrun),
                "--nnodes",
                "2",
                "--nproc-per-node",
                "1",
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                f"127.0.0.1:{port}",
                "--rdzv-id",
                "test",
                "--rdzv-conf",
                f"is_host={host}",
                "-m",
                "distrl",
                "run",
                str(inventory),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: the whole launch is killed on a failure
        )
        for host in ("true", "false")
    ]
    outputs = []
    deadline = time.monotonic() + 270
    try:
        for launch in launches:
            out, err = launch.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outputs.append((launch.returncode, out, err))
    finally:
        for launch in launches:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(launch.pid, signal.SIGKILL)
    assert [code for code, _, _ in outputs] == [0, 0], outputs
    said = "".join(out for _, out, _ in outputs)
    assert "learner rank 1 of 2 on cpu: training with rank 0" in said
    updates = re.search(r"8 episodes .* (\d+) updates", said)
    assert updates is not None, said
    assert int(updates.group(1)) >= 1, said


@pytest.mark.parametrize(
    ("rank", "waited"),
    [
        (1, "for rank 0 at 127.0.0.1:{port}, which never answered"),
        (0, "at 127.0.0.1:{port} for rank 1, which"),
    ],
)
def test_a_torchrun_rank_whose_peers_never_come_names_them_in_one_line(
    tmp_path: Path, rank: int, waited: str
) -> None:
    """``distrl run`` as ``torchrun`` starts it, for a world of two whose other rank never comes."""
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[run]\noutput_dir = "{tmp_path / "runs"}"\n[learner]\ncollective_timeout_s = 2\n'
        '[[hosts]]\nname = "here"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {"RANK": str(rank), "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    result = subprocess.run(
        [sys.executable, "-m", "distrl", "run", str(inventory)],
        capture_output=True,
        text=True,
        env={**os.environ, **environment, "MASTER_PORT": str(port)},
        timeout=120,
    )
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"distrl: error: learner rank {rank} of 2 (torchrun) waited 2 s (learner.collective_timeout_s) "
        + waited.format(port=port)
    ), lines[0]
