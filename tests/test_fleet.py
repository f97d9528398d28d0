"""The fleet end to end on this machine: simulated phones, ``tiny``, and workers in this process.

What needs only a worker's behaviour runs it in this process (``memory_hosts``: a ``MemoryHost`` over
in-memory streams, the real worker agent and frames); what is about processes, signals, SSH or a worker
program of its own starts real ones (``LocalHost`` subprocesses, ``SshHost`` against a real sshd).
Every test checks the accounting: each task handed out is completed or failed (and then re-queued),
and each trajectory arrives once.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import getpass
import json
import os
import random
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from accounting import accounted
from memory_hosts import MemoryHosts, slow_to_take_weights
from support import small_run
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from distrl.actions import parse_action
from distrl.config import Inventory, PolicySettings, parse_inventory
from distrl.episodes import read_episodes
from distrl.errors import CheckpointError, ConfigError, LearnerError
from distrl.fleet import RunStats, board, collect, train
from distrl.fleet.stop import Stop
from distrl.fleet.wiring import Fleet
from distrl.records import EndReason, Trajectory
from distrl.sim.suites import drawn_task, tasks
from distrl.tasks.sampler import Job, TaskSampler
from distrl.testing.sshd import Sshd

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


@pytest.fixture
def memory_hosts() -> Iterator[MemoryHosts]:
    """What opens every host of a run given ``opener=memory_hosts.open``: a ``MemoryHost``, the worker
    agent in this process."""
    hosts = MemoryHosts()
    yield hosts
    assert hosts.opened, "the test opened no host in memory"


def _inventory(tmp_path: Path, **options: Any) -> Inventory:
    """``_inventory_text(tmp_path, **options)``, parsed."""
    return parse_inventory(_inventory_text(tmp_path, **options), source=str(tmp_path / "hosts.toml"))


def _inventory_text(
    tmp_path: Path,
    *,
    devices: int = 2,
    extra: str = "",
    hosts: str = "",
    local: bool = True,
    policy: str = "",
) -> str:
    """Simulated phones at 270×600 without latency, a worker on this machine (unless not ``local``),
    and ``hosts`` appended; ``extra`` and ``policy`` are more lines for ``[run]`` and ``[policy]``."""
    return f"""{small_run(tmp_path / "runs", run=extra, policy=policy)}
[sim]
width = 270
height = 600
latency = "off"
nuisances = false

{_local_host(devices) if local else ""}
{hosts}
"""


def _local_host(devices: int) -> str:
    return f'[[hosts]]\nname = "local"\naddress = "localhost"\n[hosts.devices]\nsim = {devices}\n'


def _ssh_host(server: Sshd) -> str:
    return (
        f'[[hosts]]\nname = "ssh"\naddress = "127.0.0.1"\ntransport = "ssh"\nport = {server.port}\n'
        f'user = "{getpass.getuser()}"\nidentity_file = "{server.client_key}"\n'
        f'known_hosts_file = "{server.known_hosts}"\npython = "{sys.executable}"\n'
        "[hosts.devices]\nsim = 2\n"
    )


async def test_collect_brings_back_every_episode_once(tmp_path: Path, memory_hosts: MemoryHosts) -> None:
    chosen = tasks("general", "test")[:3]
    result = await collect(_inventory(tmp_path), tasks=chosen, episodes=4, opener=memory_hosts.open)
    assert len(result.trajectories) == 4
    accounted(result.stats, result.trajectories)
    assert result.stats.failed == {}
    assert result.stats.in_flight == 0
    # without on_progress, no progress period ever ran: the rate is the whole run's, the hosts as they were
    stats = result.stats
    assert stats.steps_per_s > 0
    assert stats.steps_per_s == pytest.approx(stats.steps_streamed / stats.elapsed_s)
    assert stats.hosts_up == stats.hosts == 1
    assert {t.task.id for t in result.trajectories} <= {t.id for t in chosen}
    for trajectory in result.trajectories:
        assert trajectory.host == "local"
        assert trajectory.device in ("sim-0", "sim-1")
        assert trajectory.success is not None
        assert 1 <= len(trajectory.steps) <= trajectory.task.max_steps
        assert all(step.policy_version == 0 for step in trajectory.steps)
        assert [step.index for step in trajectory.steps] == list(range(len(trajectory.steps)))


async def test_a_greedy_share_of_the_episodes_is_played_greedily(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    """``[policy] greedy_share``: every other episode asked for at temperature 0, which the worker plays
    greedily (log μ = 0 at every step) and says so; the rest at the settings' temperature."""
    chosen = tasks("general", "test")[:2]
    inventory = _inventory(tmp_path, policy="greedy_share = 0.5\ntemperature = 1.0")
    result = await collect(inventory, tasks=chosen, episodes=8, opener=memory_hosts.open)
    accounted(result.stats, result.trajectories)
    by_temperature = collections.defaultdict(list)
    for trajectory in result.trajectories:
        by_temperature[trajectory.temperature].append(trajectory)
    assert set(by_temperature) == {0.0, 1.0}
    assert len(by_temperature[0.0]) == len(by_temperature[1.0]) == 4
    assert all(step.behaviour_logprob == 0.0 for t in by_temperature[0.0] for step in t.steps)
    assert all(step.behaviour_logprob < 0.0 for t in by_temperature[1.0] for step in t.steps)
    # greedy decoding is deterministic: a task's first greedy answer is the same each time
    first = {t.task.id: t.steps[0].output for t in by_temperature[0.0]}
    assert all(t.steps[0].output == first[t.task.id] for t in by_temperature[0.0])
    greedy = [bool(t.success) for t in by_temperature[0.0] if not t.cut_short]
    assert list(result.stats.recent_greedy) == greedy


async def test_a_randomised_run_plays_and_trains_on_drawn_tasks(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    """``[tasks] randomise = 1``: every train task of a template that draws is played as a drawn one
    (fresh values and wordings) by the worker's simulated phones, scored by the sim there, and trained
    on; the curriculum keeps the outcomes under the train tasks they stood for."""
    inventory = _inventory(tmp_path, extra="max_trajectories = 8")
    inventory = dataclasses.replace(
        inventory,
        tasks=dataclasses.replace(inventory.tasks, randomise=1.0, curriculum="learnability"),
    )
    stats = await train(inventory, opener=memory_hosts.open)
    accounted(stats)
    recorded = await anyio.to_thread.run_sync(
        lambda: list(read_episodes(tmp_path / "runs" / "t" / "episodes"))
    )
    assert len(recorded) == 8
    train_tasks = tasks("general", "train")
    drawing = {t.params["template"] for t in train_tasks if drawn_task(t, random.Random(0)) is not t}
    for episode in recorded:
        template = episode.task.id.split("/")[1]  # (the episode's file keeps no parameters)
        assert episode.success is not None, episode.task.id
        assert ("/draw-" in episode.task.id) == (template in drawing), episode.task.id
    assert any("/draw-" in e.task.id for e in recorded)
    latest = sorted((tmp_path / "runs" / "t" / "checkpoints").glob("step-*"))[-1]
    outcomes = json.loads((latest / "curriculum.json").read_text())["outcomes"]
    assert sum(map(len, outcomes.values())) == 8
    assert not [task_id for task_id in outcomes if "/draw-" in task_id]


async def test_train_from_python_finds_an_algorithm_beside_the_inventory_from_any_folder(
    tmp_path: Path, memory_hosts: MemoryHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run`` found a ``module:Class`` beside the inventory (its check looked there); ``train`` from
    Python did not, and its learner failed to start, once the policy had loaded, unless run from that
    folder."""
    module = f"beside_{tmp_path.name.replace('-', '_')}"  # a name of its own: the path keeps it found
    (tmp_path / f"{module}.py").write_text(
        "from distrl.learner.algorithms.filtered_bc import FilteredBC\n\n\n"
        "class Mine(FilteredBC):\n    name = 'mine'\n"
    )
    text = _inventory_text(tmp_path, extra="max_trajectories = 4").replace(
        "[learner]\n", f'[learner]\nalgorithm = "{module}:Mine"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    stats = await train(parse_inventory(text, source=str(tmp_path / "hosts.toml")), opener=memory_hosts.open)
    assert stats.completed == 4  # its learner started, and the run went to its end


async def test_the_expert_collects_demonstrations_and_cannot_be_trained(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    chosen = tasks("general", "train")[:6]
    result = await collect(
        _inventory(tmp_path, devices=3), policy="expert", tasks=chosen, episodes=6, opener=memory_hosts.open
    )
    accounted(result.stats, result.trajectories)
    assert result.stats.failed == {}
    # the scripted expert solves every task, deterministically, and the steps stream as it plays
    assert [t.success for t in result.trajectories] == [True] * 6
    assert result.stats.steps_streamed == result.stats.steps == sum(len(t.steps) for t in result.trajectories)
    for trajectory in result.trajectories:
        assert trajectory.end_reason == "complete"
        assert all(step.behaviour_logprob == 0.0 for step in trajectory.steps)
        assert all(parse_action(step.output) == step.action for step in trajectory.steps)
        assert trajectory.temperature is None  # no model played
    with pytest.raises(ConfigError, match=r"policy\.model: the expert is scripted"):
        await train(_inventory(tmp_path, policy='model = "expert"'), opener=memory_hosts.open)


async def test_train_updates_publishes_checkpoints_and_resumes(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    inventory = _inventory(tmp_path, extra="max_trajectories = 10")
    # the curriculum's outcomes live in the checkpoints, so that a resumed run draws on from them
    inventory = dataclasses.replace(
        inventory, tasks=dataclasses.replace(inventory.tasks, curriculum="learnability")
    )
    stats = await train(inventory, opener=memory_hosts.open)
    accounted(stats)
    assert stats.completed == 10
    assert stats.updates >= 1
    # every episode is on disk, as the ledger rewarded it
    recorded = await anyio.to_thread.run_sync(
        lambda: list(read_episodes(tmp_path / "runs" / "t" / "episodes"))
    )
    assert len(recorded) == 10
    assert sum(bool(e.success) for e in recorded) == stats.successes
    # a full snapshot at the start, then a diff after each update (one may be cut short by the stop)
    assert 2 <= stats.weight_pushes <= 1 + stats.updates
    checkpoints = sorted((tmp_path / "runs" / "t" / "checkpoints").glob("step-*"))
    assert checkpoints
    assert checkpoints[-1].name == f"step-{stats.updates:09d}"
    board = EventAccumulator(str(tmp_path / "runs" / "t" / "tensorboard"))
    board.Reload()  # TensorBoard's own reader
    scalars = set(board.Tags()["scalars"])
    # (no learner/actor_loss: these few updates are the critics' warm-up, when the actor does not train)
    expected = {"learner/critic_loss", "learner/entropy", "collect/success_rate", "weights/bytes"}
    assert expected <= scalars, scalars
    assert "learner/staleness" in board.Tags()["histograms"]
    first = board.Scalars("collect/trajectories")
    assert first[-1].value == 10
    learnt = json.loads((checkpoints[-1] / "curriculum.json").read_text())
    assert sum(map(len, learnt["outcomes"].values())) == 10  # every episode was scored and played out
    assert learnt["swept"] >= 10

    again = await train(inventory, resume=True, opener=memory_hosts.open)
    assert again.completed == 10
    # TensorBoard's curves go on where the first run's stopped: environment steps, episodes, updates
    board = EventAccumulator(str(tmp_path / "runs" / "t" / "tensorboard"))
    board.Reload()
    both = board.Scalars("collect/trajectories")
    assert both[-1].value == 20
    assert both[-1].step > first[-1].step
    assert min(e.step for e in both if e.wall_time > first[-1].wall_time) >= first[-1].step
    latest = sorted((tmp_path / "runs" / "t" / "checkpoints").glob("step-*"))[-1]
    # the update count goes on from the checkpoint: the learner resumed, it did not start over
    assert again.updates > stats.updates
    assert latest.name == f"step-{again.updates:09d}"
    # and the curriculum from what it had learnt: the first run's outcomes, then the second's
    relearnt = json.loads((latest / "curriculum.json").read_text())
    assert sum(map(len, relearnt["outcomes"].values())) == 20
    assert all(relearnt["outcomes"][task][: len(seen)] == seen for task, seen in learnt["outcomes"].items())
    assert relearnt["swept"] >= learnt["swept"] + 10

    # flipped bytes in the latest checkpoint: resuming refuses it, names it, and writes nothing
    damaged = next(path for path in sorted(latest.rglob("*.safetensors")))
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    before = sorted(p.name for p in latest.parent.iterdir())
    with pytest.raises(CheckpointError, match=f"cannot resume from .*{latest.name}.*SHA-256") as refused:
        await train(inventory, resume=True, opener=memory_hosts.open)
    assert f"move {latest.name} aside to resume from it" in str(refused.value)  # the one before it
    assert sorted(p.name for p in latest.parent.iterdir()) == before


async def test_each_version_is_encoded_once_whichever_workers_it_goes_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_hosts: MemoryHosts
) -> None:
    from distrl import weights

    encoded: list[tuple[str, int, int | None]] = []
    encode = weights.encode

    def counted(
        new: weights.Tensors,
        version: int,
        *,
        old: weights.Tensors | None = None,
        base_version: int | None = None,
    ) -> weights.Encoded:
        encoded.append(("full", version, None) if base_version is None else ("diff", version, base_version))
        return encode(new, version, old=old, base_version=base_version)

    monkeypatch.setattr(weights, "encode", counted)
    two = _local_host(2) + _local_host(2).replace('"local"', '"other"')
    stats = await train(
        _inventory(tmp_path, local=False, hosts=two, extra="max_trajectories = 8"), opener=memory_hosts.open
    )
    accounted(stats)
    assert stats.updates >= 1
    assert len(encoded) == len(set(encoded)), encoded  # nothing encoded twice
    assert ("full", 0, None) in encoded
    assert any(kind == "diff" for kind, _, _ in encoded)
    # both workers got the start and every diff: more pushes than encodings
    assert stats.weight_pushes > len(encoded)


async def test_trajectories_too_old_on_arrival_are_counted_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, memory_hosts: MemoryHosts
) -> None:
    # four phones, an update after every second arrival, and no lag allowed: most arrive too old
    extra = "max_trajectories = 24\nmax_policy_lag = 0"
    stats = await train(_inventory(tmp_path, devices=4, extra=extra), opener=memory_hosts.open)
    accounted(stats)
    assert stats.completed == 24
    assert stats.updates >= 2
    assert 6 <= stats.stale < stats.completed  # the first ones, begun by version 0, were trained on
    warnings = [r.getMessage() for r in caplog.records if "max_policy_lag" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "arrived more than run.max_policy_lag = 0 versions old" in warnings[0]


async def test_a_worker_slow_to_take_weights_holds_up_neither_updates_nor_other_hosts(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    # "slow" gets each weights message after its first 10 minutes late: were publishing to wait for
    # every worker's ack, each update would stall for weight_push_s (2 minutes) and the test time out
    memory_hosts.agents["slow"] = slow_to_take_weights(600)
    slow = _local_host(2).replace('"local"', '"slow"')
    inventory = _inventory(tmp_path, local=False, hosts=_local_host(2) + slow, extra="max_trajectories = 16")
    stats = await train(inventory, opener=memory_hosts.open)
    accounted(stats)
    assert stats.completed == 16
    assert stats.updates >= 4
    assert (
        stats.policy_version >= stats.updates - 1
    )  # every update was published (the last one may be cut by the stop)
    # the slow host played on with version 0 the whole run, the other kept up
    assert stats.host_lag_p50["slow"] >= 2
    assert stats.host_lag_p50["local"] < stats.host_lag_p50["slow"]


async def test_a_failed_update_ends_the_run_with_its_error_and_keeps_the_last_good_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_hosts: MemoryHosts
) -> None:
    from distrl.learner.core import Learner

    update = Learner.update

    def second_fails(self: Learner) -> Any:
        if self.updates == 1:
            raise LearnerError("update 2 refused: the logprob is not finite", quantity="logprob", update=2)
        return update(self)

    monkeypatch.setattr(Learner, "update", second_fails)
    inventory = _inventory(tmp_path, extra="max_trajectories = 30\ncheckpoint_every = 1")
    with pytest.raises(LearnerError, match="update 2 refused"):  # its own error, not an exception group
        await train(inventory, opener=memory_hosts.open)
    names = [p.name for p in (tmp_path / "runs" / "t" / "checkpoints").glob("step-*")]
    assert names == ["step-000000001"]  # nothing written after the failure


@pytest.mark.parametrize("keep", [None, 5])
async def test_checkpoints_follow_the_timer_when_updates_are_not_counted(
    tmp_path: Path, keep: int | None, memory_hosts: MemoryHosts
) -> None:
    timer = "max_trajectories = 10\ncheckpoint_every = 0\ncheckpoint_every_s = 0.001"
    if keep is not None:
        timer += f"\nkeep_checkpoints = {keep}"
    stats = await train(_inventory(tmp_path, extra=timer), opener=memory_hosts.open)
    assert stats.updates >= 2
    names = sorted(p.name for p in (tmp_path / "runs" / "t" / "checkpoints").glob("step-*"))
    # one after each update (the folder keeps the last ``keep``, 3 by default), not only the one at the stop
    first = max(1, stats.updates - (keep or 3) + 1)
    assert names == [f"step-{n:09d}" for n in range(first, stats.updates + 1)]


async def test_sync_mode_plays_rounds_with_a_barrier(tmp_path: Path, memory_hosts: MemoryHosts) -> None:
    inventory = _inventory(tmp_path, extra='mode = "sync"\nmax_trajectories = 6')
    stats = await train(inventory, opener=memory_hosts.open)
    accounted(stats)
    assert stats.completed == 6
    # three rounds of two episodes; the updates after the first two were published before the next
    # round began, so every step was chosen by the learner's current version
    assert stats.updates >= 2
    assert stats.weight_pushes >= 3
    assert stats.lag_p50 == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_collect_in_sync_mode_waits_for_every_device_between_rounds(
    tmp_path: Path, mode: str, memory_hosts: MemoryHosts
) -> None:
    # fast and slow tasks (the slowest app 50× the fastest), the calibrated latency at 1/50 speed
    inventory = parse_inventory(
        _inventory_text(tmp_path, devices=3, extra=f'mode = "{mode}"').replace(
            'latency = "off"', "time_scale = 0.02\ntask_spread = 50.0"
        ),
        source=str(tmp_path / "hosts.toml"),
    )
    result = await collect(
        inventory, policy="expert", tasks=tasks("general", "train")[:12], episodes=9, opener=memory_hosts.open
    )
    accounted(result.stats, result.trajectories)
    assert result.stats.failed == {}
    played = sorted(result.trajectories, key=lambda t: t.started_at_s)
    spans = [(t.started_at_s, t.started_at_s + t.duration_s) for t in played]
    # an episode that began while an earlier one was still playing on another device
    overtaking = [
        later
        for later, (start, _) in enumerate(spans)
        if any(end > start for _, end in spans[: later // 3 * 3])
    ]
    if mode == "sync":
        # rounds of three: none starts before every episode of the previous rounds has ended
        assert overtaking == []
        assert [len({t.device for t in played[i : i + 3]}) for i in (0, 3, 6)] == [3, 3, 3]
    else:
        assert overtaking  # devices that finish early go on at once


async def test_a_killed_worker_loses_only_its_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "PROGRESS_EVERY_S", 0.2)
    killed: list[int] = []

    def kill_once(stats: RunStats) -> None:
        if killed or stats.in_flight == 0 or stats.completed < 1:
            return
        for pid in _children():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    result = await collect(
        _inventory(tmp_path), tasks=tasks("general", "train")[:4], episodes=5, on_progress=kill_once
    )
    assert killed, "the worker was never killed"
    accounted(result.stats, result.trajectories)
    assert result.stats.completed == 5
    assert result.stats.failed["link_lost"] >= 1
    assert result.stats.restarts >= 1


async def test_a_worker_that_hangs_with_its_pipe_open_is_lost_by_the_heartbeat_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGSTOP freezes the worker: its pipes stay open, nothing reaches the learner, no connection drops
    # (no SSH keepalive either). Only the learner's own heartbeat timeout can tell; without it the
    # frozen worker would hold its episodes for episode_s (30 minutes) and the test would time out.
    monkeypatch.setattr(board, "PROGRESS_EVERY_S", 0.2)
    stopped: list[int] = []
    lost_after: list[float] = []

    def stop_once(stats: RunStats) -> None:
        if stopped:
            if not lost_after and stats.failed["link_lost"]:
                lost_after.append(time.monotonic() - stopped_at[0])
            return
        if stats.in_flight == 0 or stats.completed < 1:
            return
        for pid in _children():
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
            stopped_at.append(time.monotonic())

    stopped_at: list[float] = []
    beat = "[timeouts]\nheartbeat_interval_s = 0.5\nheartbeat_timeout_s = 3\ncleanup_s = 2\n"
    inventory = parse_inventory(_inventory_text(tmp_path) + beat, source=str(tmp_path / "hosts.toml"))
    try:
        result = await collect(
            inventory, tasks=tasks("general", "train")[:4], episodes=5, on_progress=stop_once
        )
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert stopped, "the worker was never stopped"
    accounted(result.stats, result.trajectories)
    assert result.stats.completed == 5
    assert result.stats.failed["link_lost"] >= 1  # the frozen worker's episodes went back to the sampler
    assert result.stats.restarts >= 1
    assert lost_after
    assert 2.0 <= lost_after[0] < 30.0  # lost by the 3 s heartbeat timeout, not by another limit


def _children() -> list[int]:
    """This process's child processes that run distrl (its workers)."""
    me = os.getpid()
    pids = [int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()]
    return [pid for pid in pids if b"distrl" in Path(f"/proc/{pid}/cmdline").read_bytes()]


async def test_collect_can_be_cancelled(tmp_path: Path) -> None:
    with anyio.move_on_after(20) as scope:
        await collect(_inventory(tmp_path), tasks=tasks("general", "train")[:2], episodes=10_000)
    assert scope.cancelled_caught
    assert not _children()


BAD_WORKER = """
import os, sys
from distrl import __version__
from distrl.build import build_id
from distrl.wire import PROTOCOL_VERSION, FrameStream, Hello
import anyio
from anyio.streams.file import FileReadStream, FileWriteStream

async def main() -> None:
    stream = FrameStream.from_pair(
        receive=FileReadStream(open(0, "rb", buffering=0)), send=FileWriteStream(open(1, "wb", buffering=0))
    )
    hello = await stream.receive()
    compute = {"pid": os.getpid(), "build": build_id()}
    await stream.send(Hello(id=hello.id, role="worker", protocol=PROTOCOL_VERSION, distrl_version=__version__,
                            host="bad", devices=hello.devices, compute=compute))
    await stream.receive()  # the Setup
    os.write(1, b"DRL" + bytes([PROTOCOL_VERSION]) + b"\\xff" * 64)  # a frame whose header cannot be read
    await anyio.sleep(30)

anyio.run(main)
"""


async def test_a_malformed_frame_closes_only_its_link(tmp_path: Path) -> None:
    script = tmp_path / "bad_worker.py"
    script.write_text(BAD_WORKER)
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    wrapper.chmod(0o755)
    bad = f'[[hosts]]\nname = "bad"\naddress = "localhost"\npython = "{wrapper}"\n[hosts.devices]\nsim = 2\n'
    inventory = _inventory(tmp_path, extra="max_restarts = 1", hosts=bad)
    result = await collect(inventory, tasks=tasks("general", "train")[:3], episodes=4)
    accounted(result.stats, result.trajectories)
    assert result.stats.completed == 4
    assert {t.host for t in result.trajectories} == {"local"}
    assert result.stats.restarts >= 1  # the bad host was tried again, then given up


async def test_training_over_ssh_survives_a_cut_connection(
    tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "PROGRESS_EVERY_S", 0.2)
    cut: list[int] = []

    def cut_once(stats: RunStats) -> None:
        if cut or stats.in_flight == 0 or stats.completed < 2:
            return
        for pid in _children_of(sshd.pid):  # sshd serves each connection in a child of its own
            os.kill(pid, signal.SIGKILL)
            cut.append(pid)

    inventory = _inventory(tmp_path, extra="max_trajectories = 8", hosts=_ssh_host(sshd), local=False)
    stats = await train(inventory, on_progress=cut_once)
    assert cut, "the connection was never cut"
    accounted(stats)
    assert stats.completed == 8
    assert stats.failed["link_lost"] >= 1
    assert stats.restarts >= 1
    assert stats.updates >= 1


def _children_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


async def test_device_faults_cut_episodes_short_and_are_not_trained_on(
    tmp_path: Path, memory_hosts: MemoryHosts
) -> None:
    text = _inventory_text(tmp_path, extra="max_trajectories = 6")
    faults = text.replace("nuisances = false", "nuisances = false\ncrash_rate = 0.04\nhang_rate = 0.02")
    quick = "[timeouts]\ndevice_act_s = 2\ndevice_observe_s = 2\n"  # a hang costs 2 s, not 30
    inventory = parse_inventory(faults + quick, source=str(tmp_path / "hosts.toml"))
    stats = await train(inventory, opener=memory_hosts.open)
    accounted(stats)
    assert stats.completed == 6
    assert stats.device_errors >= 1  # a crash or a hang cut an episode short ...
    assert stats.cut_short == stats.device_errors  # ... and the learner left it out


async def test_a_failing_device_rests_is_tried_again_then_retired_and_the_run_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, memory_hosts: MemoryHosts
) -> None:
    # every screenshot crashes the phone: two failed episodes in a row (max_restarts = 1), a 10 s rest,
    # two more, and the device is retired; with every device retired the run stops and says why. The
    # host lives once: its worker's exit after the run's Shutdown is no lost link (when it was counted as
    # one, a second life retired the devices again: 4 retired, 16 episodes).
    text = _inventory_text(tmp_path, extra="max_restarts = 1").replace(
        "nuisances = false", "nuisances = false\ncrash_rate = 1.0"
    )
    inventory = parse_inventory(text, source=str(tmp_path / "hosts.toml"))
    with anyio.fail_after(120):
        result = await collect(
            inventory,
            policy="expert",
            tasks=tasks("general", "train")[:4],
            episodes=1000,
            opener=memory_hosts.open,
        )
    stats = result.stats
    accounted(stats, result.trajectories)
    lost = [r.getMessage() for r in caplog.records if "link lost" in r.getMessage()]
    assert stats.restarts == 0, (lost, stats.given_up)  # one life of the host: the rest is about its devices
    assert stats.retired == 2
    assert stats.ended == "hosts"
    assert stats.device_errors == stats.completed == 8  # 2 + 2 per device
    assert "2 device(s) retired" in stats.achieved_nothing
    rests = [r.getMessage() for r in caplog.records if "trying it again in 10 s" in r.getMessage()]
    assert len(rests) == 2, rests  # one rest per device


async def test_the_ledger_tells_the_curriculum_each_outcome(tmp_path: Path) -> None:
    # [tasks] curriculum = "learnability": what the ledger scores reaches the sampler's draw, which then
    # hands out the task solved now and then more often than the ones always solved or never.
    text = f"""
[tasks]
curriculum = "learnability"
[[hosts]]
name = "local"
address = "localhost"
[hosts.devices]
sim = 1
{small_run(tmp_path)}"""
    inventory = parse_inventory(text, source=str(tmp_path / "hosts.toml"))
    pool = tasks("general", "train")[:3]
    fleet = Fleet.build(inventory, pool, rng=random.Random(0), limit=None)
    swept = [await fleet.sampler.take() for _ in pool]
    assert sorted(job[1].id for job in swept if job) == sorted(task.id for task in pool)
    for k in range(8):
        for task, success in ((pool[0], k % 2 == 0), (pool[1], True), (pool[2], False)):
            await fleet.ledger.arrive(
                Trajectory(
                    id=f"{task.id}/{k}",
                    task=task,
                    host="local",
                    device="sim-0",
                    steps=(),
                    final_observation=None,
                    end_reason=EndReason.COMPLETE,
                    success=success,
                )
            )
    handed = collections.Counter(job[1].id for job in [await fleet.sampler.take() for _ in range(600)] if job)
    assert handed[pool[0].id] > 2 * max(handed[pool[1].id], handed[pool[2].id])  # about 4.8 times


async def test_a_session_with_nothing_to_hand_out_waits_for_a_requeued_task() -> None:
    # Every episode the run needs is out: a free session must not leave (its host would shut down for
    # good), but wait, and take the task of an episode that failed elsewhere.
    pool = tasks("general", "train")[:3]
    sampler = TaskSampler(pool, random.Random(0), run_name="t", limit=2, stop=Stop())
    first, second = await sampler.take(), await sampler.take()
    assert first is not None and second is not None  # noqa: PT018
    taken: list[Job | None] = []

    async def free_session() -> None:
        taken.append(await sampler.take())

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(free_session)
            await anyio.sleep(0.2)
            assert taken == []  # waiting, not gone
            sampler.failed_episode(second[1], "link_lost")
    assert len(taken) == 1
    assert taken[0] is not None
    assert taken[0][1] == second[1]  # the failed task, handed out again
    assert sampler.handed_out == 3
    assert sampler.failed == {"link_lost": 1}
    assert len({first[0], second[0], taken[0][0]}) == 3  # every episode id is new


@pytest.mark.parametrize(
    ("arguments", "error", "said"),
    [
        ({"seed": -1}, ConfigError, "seed: must be an integer ≥ 0, not -1"),
        ({"seed": "abc"}, TypeError, "seed must be an integer, not 'abc'"),
        ({"episodes": 1.5}, TypeError, "episodes must be an integer, not 1.5"),
        ({"group_size": "1"}, TypeError, "group_size must be an integer, not '1'"),
        ({"policy": 123}, TypeError, "policy must be PolicySettings, a model folder or None, not int"),
        ({"policy": ""}, ValueError, "policy '' names no model"),
        ({"policy": PolicySettings(model="tiny", temperature=-1.0)}, ConfigError, "policy.temperature"),
        ({"split": None}, ValueError, "split must be a split's name"),
        ({"tasks": ["general/x"]}, TypeError, "tasks must be Task records or a suite's name"),
    ],
)
def test_collect_refuses_arguments_a_worker_would_refuse_before_any_host_starts(
    arguments: dict[str, Any], error: type[Exception], said: str
) -> None:
    """Refused at each worker's setup, they were asked again until the workers gave up: collect came back
    empty after half a minute, with no error."""

    def opener(*_: object) -> Any:
        pytest.fail("a host was started")

    inventory = parse_inventory('[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    with pytest.raises(error, match=re.escape(said)):
        anyio.run(functools.partial(collect, inventory, opener=opener, **{"episodes": 1, **arguments}))
