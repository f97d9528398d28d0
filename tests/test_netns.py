"""Several hosts for real: two network namespaces, each with its own OpenSSH ``sshd``, as two machines.

``netns_hosts`` (per test) makes two namespaces (``distrl-t-<pid>-a`` and ``-b``), each joined to this
one by a veth pair on a /24 of its own (``10.213.<n>.1`` here, ``10.213.<n>.2`` there, ``lo`` up), and
starts ``sshd`` inside each (``ip netns exec NS sshd ...``, from ``sshd_server.serve_sshd``) on the
namespace's address, port 22, with its own host key, client key and known_hosts entry. The learner
reaches the workers over the veth links, as it would reach other machines; cutting a link
(``ip link set ... down`` inside a namespace) drops every packet without a FIN or RST, which killing a
process cannot show: only heartbeats find it. Teardown kills whatever runs in the namespaces and
deletes them (and the veths) even when a test fails; every wait is bounded.

Without root, ``ip``, network namespaces (a container without ``CAP_SYS_ADMIN``), veth or ``sshd``, the
tests skip and say why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from accounting import accounted

from distrl.config import (
    Devices,
    Inventory,
    LearnerSettings,
    PolicySettings,
    RunSettings,
    SimSettings,
    Timeouts,
)
from distrl.fleet import RunStats, board, collect
from distrl.records import Task
from distrl.sim.suites import tasks
from distrl.testing.netns import Namespace, free_subnets, gone, joined_namespace, unavailable
from distrl.testing.sshd import Sshd, find_sshd, serve_sshd

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

RUN_S = 60.0
"""Limit on one whole collect, seconds."""
HEARTBEAT_TIMEOUT_S = 4.0
"""Silence after which a link counts as lost, at both ends: short, so that a cut is found in seconds."""
TIMEOUTS = Timeouts(
    ssh_connect_s=3,
    ssh_login_s=5,
    worker_start_s=60,
    handshake_s=60,
    heartbeat_interval_s=0.5,
    heartbeat_timeout_s=HEARTBEAT_TIMEOUT_S,
    episode_s=40,
    cleanup_s=2,
)
SIM = SimSettings(width=270, height=600, latency="off", nuisances=False)
"""Small screens, no latency, no pop-ups: fast episodes."""
WORKER_EXIT_SLACK_S = 6.0
"""How long past ``heartbeat_timeout_s`` after the cut the stranded worker may take to exit."""


@dataclass(frozen=True)
class NetnsHost:
    namespace: Namespace
    sshd: Sshd


@pytest.fixture
def netns_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NetnsHost]]:
    """Two namespaces ``a`` and ``b``, each running an sshd on port 22 of its own address."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    binary = find_sshd()
    assert binary is not None
    pid = os.getpid()
    with contextlib.ExitStack() as stack:
        hosts = []
        for tag, subnet in zip("ab", free_subnets(2), strict=True):
            namespace = stack.enter_context(
                joined_namespace(f"distrl-t-{pid}-{tag}", f"drt{pid}{tag}", f"drn{pid}{tag}", subnet)
            )
            server = stack.enter_context(
                serve_sshd(
                    binary,
                    tmp_path_factory.mktemp(f"sshd-{tag}"),
                    address=namespace.address,
                    port=22,
                    prefix=["ip", "netns", "exec", namespace.name],
                )
            )
            hosts.append(NetnsHost(namespace, server))
        yield hosts


def _inventory(tmp_path: Path, hosts: list[NetnsHost], sim: SimSettings = SIM) -> Inventory:
    """One SSH host per namespace (``ns-a``, ``ns-b``) with two sim phones each, ``tiny``, ``TIMEOUTS``
    (short enough that a worker answering no heartbeat while it sets up loses its link), and a host
    given up after its second failure in a row."""
    return Inventory(
        hosts=tuple(
            host.sshd.host(f"ns-{host.namespace.name[-1]}", devices=Devices(sim=2), python=sys.executable)
            for host in hosts
        ),
        run=RunSettings(name="t", output_dir=str(tmp_path / "runs"), max_restarts=1),
        timeouts=TIMEOUTS,
        learner=LearnerSettings(batch_size=2, min_new_trajectories=2, micro_batch=8),
        policy=PolicySettings(max_new_tokens=24, max_wait_s=0.05),
        sim=sim,
    )


def _tasks(split: str, count: int) -> list[Task]:
    """``count`` tasks of the general suite, cut to three steps each: episodes of a second or two."""
    return [dataclasses.replace(task, max_steps=3) for task in tasks("general", split)[:count]]


async def test_collect_over_two_namespaces_brings_back_every_episode_once(
    tmp_path: Path, netns_hosts: list[NetnsHost]
) -> None:
    chosen = _tasks("test", 4)
    started = time.monotonic()
    with anyio.fail_after(RUN_S):
        result = await collect(_inventory(tmp_path, netns_hosts), tasks=chosen, episodes=10)
    print(f"collect over two namespaces: {time.monotonic() - started:.1f} s")
    stats = result.stats
    accounted(stats, result.trajectories)
    assert stats.completed == len(result.trajectories) == 10
    assert stats.failed == {}  # no link was lost: the short heartbeats kept both alive
    assert stats.in_flight == 0
    assert stats.restarts == 0
    by_host = {t.host for t in result.trajectories}
    assert by_host == {"ns-a", "ns-b"}, f"episodes came from {by_host} only"
    for trajectory in result.trajectories:
        assert trajectory.device in ("sim-0", "sim-1")
        assert trajectory.task.id in {t.id for t in chosen}
        assert 1 <= len(trajectory.steps) <= trajectory.task.max_steps
    for host in netns_hosts:
        # each worker was reached over its own veth: its sshd saw the login come from our end of it
        assert f"from {host.namespace.gateway} port" in host.sshd.log.read_text()
        assert host.namespace.worker_pids() == []  # and it stopped with the run


async def test_a_silently_cut_namespace_loses_only_its_episodes(
    tmp_path: Path, netns_hosts: list[NetnsHost], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "PROGRESS_EVERY_S", 0.2)
    kept, cut = netns_hosts[0].namespace, netns_hosts[1].namespace
    at_cut: dict[str, float] = {}
    found_at: list[float] = []
    stranded: list[int] = []
    exited: dict[int, float] = {}
    all_exited = anyio.Event()

    def cut_once(stats: RunStats) -> None:
        if at_cut and not found_at and stats.failed["link_lost"]:
            found_at.append(time.monotonic())
        # both hosts up and an episode done: each of the cut host's two sessions has one in flight
        if at_cut or stats.hosts_up < 2 or stats.completed < 1:
            return
        workers = cut.worker_pids()
        if not workers:
            return
        stranded.extend(workers)
        cut.cut()
        at_cut.update(wall=time.time(), mono=time.monotonic(), completed=stats.completed)

    async def watch_workers() -> None:
        """When each stranded worker exits (polled every 0.1 s)."""
        while True:
            for pid in stranded:
                if pid not in exited and gone(pid):
                    exited[pid] = time.monotonic()
            if stranded and len(exited) == len(stranded):
                all_exited.set()
                return
            await anyio.sleep(0.1)

    # Some latency, so that the kept host alone cannot finish before the cut is found, however fast
    # the machine: three steps take at least a second or so.
    sim = dataclasses.replace(SIM, latency="calibrated", time_scale=0.25)
    episodes = 16
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_workers)
        with anyio.fail_after(RUN_S):
            result = await collect(
                _inventory(tmp_path, netns_hosts, sim),
                tasks=_tasks("train", 4),
                episodes=episodes,
                on_progress=cut_once,
            )
        ended = time.monotonic()
        # the stranded worker hears nothing from the learner, and nothing tells it the link is gone
        # (no FIN, no RST, its sshd is still there): its own watchdog must end it
        bound = TIMEOUTS.heartbeat_timeout_s + WORKER_EXIT_SLACK_S
        with anyio.move_on_after(max(0.0, at_cut.get("mono", 0.0) + bound - time.monotonic()) + 0.2):
            await all_exited.wait()
        tg.cancel_scope.cancel()

    assert at_cut, "the link was never cut"
    cut_mono = at_cut["mono"]
    print(
        f"collect with a cut namespace: {ended - started:.1f} s; cut at {cut_mono - started:.1f} s after "
        f"{at_cut['completed']:.0f} episodes, found lost {found_at[0] - cut_mono if found_at else -1:.1f} s "
        f"later, run over {ended - cut_mono:.1f} s after the cut; {dict(result.stats.failed)}"
    )
    stats = result.stats
    accounted(stats, result.trajectories)
    # the cut was found by the silence, within the heartbeat timeout (and the progress period)
    assert found_at, "the run ended before the cut link was found lost"
    assert found_at[0] - cut_mono <= TIMEOUTS.heartbeat_timeout_s + 2
    # the cut host's in-flight episodes failed and went back to the sampler; nothing else failed, and
    # none twice: it had two devices, and never came back
    assert stats.failed["link_lost"] >= 1, stats.failed
    assert set(stats.failed) <= {"link_lost", "timeout"}, stats.failed
    assert sum(stats.failed.values()) <= 2, stats.failed
    assert stats.restarts >= 1  # it was tried again, and could not be reached
    # the run went on with the other host and brought back every episode it was asked for, once
    assert stats.completed == len(result.trajectories) == episodes
    assert stats.in_flight == 0
    assert any(t.host == "ns-a" and t.started_at_s > at_cut["wall"] for t in result.trajectories)
    # and nothing the cut host played after the cut
    late = [
        t.id
        for t in result.trajectories
        if t.host == "ns-b" and t.started_at_s + t.duration_s > at_cut["wall"]
    ]
    assert late == []
    assert kept.worker_pids() == []  # the kept host's worker stopped with the run
    assert stranded
    for pid in stranded:
        assert pid in exited, f"the stranded worker {pid} still runs {bound:g} s after the cut"
        after = exited[pid] - cut_mono
        print(f"stranded worker {pid} exited {after:.1f} s after the cut")
        # by its watchdog: not before the learner's silence could be noticed, and soon after
        assert TIMEOUTS.heartbeat_timeout_s - 1.5 <= after <= bound, after
