"""Collection throughput, asynchronous (DistRL) against synchronous rounds (DigiRL), on one fleet.

For each fleet size N, ``distrl.collect`` plays the ``general`` train tasks with the sim's scripted
``expert`` (so the figures are the fleet's and the phones', not a model's) on N simulated phones
split over ``--workers`` local worker processes and, where OpenSSH's ``sshd`` is installed, one more
worker reached over SSH on loopback (the tests' sshd helper, ``distrl.testing.sshd``). Twice, same
seed and tasks:

- ``async``: every device starts its next episode as soon as its last one ends;
- ``sync``: rounds in which every device plays one episode, then a barrier (``run.mode = "sync"``, as
  DigiRL's loop collects; the updates that would follow each round are left out, which flatters sync).

The phones' latency is the calibrated one (real emulators), and each task's app is slower than the
fastest by a factor in [1, ``--task-spread``] (``[sim] task_spread``), so that, with the tasks' own
step counts, episode durations span about 100× as the paper's do (the JSON reports the spread
measured). Larger fleets run with a larger ``time_scale`` so that 2 cores can render every screen; the
figures are per *simulated* hour, which the time scale does not change.

Per size and mode, over a window: async, from the N-th completion to the last completion before any
device runs out of episodes; sync, from the end of round 1 to the end of round R (R = ``--rounds``,
more for small fleets; async plays as many episodes):
- ``fraction_of_ideal``: the share of the window the devices spent playing episodes (each episode's
  time inside the window, summed, over N × the window). Lost time is the barrier's wait in sync, and
  the fleet's own gaps between episodes in both;
- ``trajectories_per_sim_hour``: that share × N × 3600 / the mean episode duration, in simulated
  seconds (the ideal: N devices that never wait). Counting completions in the window instead is
  noisier (a heavy-tailed duration ends inside or just outside it) but agrees on average.
Goals (issue 7): async/sync ≥ 3 at ≥ 32 devices (the paper: 2.4); async ≥ 0.9 of ideal.

Prints one JSON line and writes ``benchmarks/figures/collection-async-sync.png``. Bounded: each run
plays a fixed number of episodes and is also cut at ``--limit`` seconds; the defaults take about 27
minutes (the 512-phone sync run alone nearly 10). Run: ``python benchmarks/collection_async_sync.py``
(``--sizes 8,32 --rounds 3`` for a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import logging
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import Inventory, parse_inventory
from distrl.fleet import collect
from distrl.records import Trajectory
from distrl.sim.suites import tasks

FIGURES = Path(__file__).resolve().parent / "figures"
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    devices: int
    mode: str
    time_scale: float
    episodes: int
    utilisation: float
    """Share of the window the devices spent playing: the fraction of the ideal."""
    mean_duration_sim_s: float
    wall_s: float
    failed: int

    @property
    def ideal_per_sim_hour(self) -> float:
        return self.devices * 3600 / self.mean_duration_sim_s

    @property
    def per_sim_hour(self) -> float:
        return self.utilisation * self.ideal_per_sim_hour


def _time_scale(devices: int, args: argparse.Namespace) -> float:
    """Small fleets run fast; larger ones slower, so that at most ``--load`` phones step at once at
    the rate of one unslowed emulator."""
    mean_slowness = (args.task_spread - 1) / math.log(args.task_spread) if args.task_spread > 1 else 1.0
    return float(max(args.min_time_scale, devices / (args.load * mean_slowness)))


def _inventory(
    folder: Path, devices: int, mode: str, scale: float, ssh_host: str, args: argparse.Namespace
) -> Inventory:
    workers = args.workers + bool(ssh_host)
    hosts = []
    for index in range(workers):
        share = devices // workers + (index < devices % workers)
        remote = ssh_host if ssh_host and index == workers - 1 else ""
        where = remote or f'[[hosts]]\nname = "w{index}"\naddress = "localhost"\n'
        hosts.append(f"{where}[hosts.devices]\nsim = {share}\n")
    text = f"""
[run]
name = "{mode}-{devices}"
output_dir = "{folder}"
seed = {args.seed}
mode = "{mode}"

[policy]
model = "expert"

[sim]
width = {args.width}
height = {args.height}
latency = "calibrated"
time_scale = {scale}
task_spread = {args.task_spread}
nuisances = true

{"".join(hosts)}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


def _ends(trajectories: tuple[Trajectory, ...]) -> list[float]:
    """When each episode ended (the workers' clocks: this machine's), in order."""
    return sorted(t.started_at_s + t.duration_s for t in trajectories)


async def _run(inventory: Inventory, devices: int, rounds: int, limit_s: float) -> tuple[Run, list[float]]:
    """Collect ``devices × rounds`` episodes; the run's figures, and each episode's simulated seconds."""
    run = inventory.run
    scale = inventory.sim.time_scale
    episodes = devices * rounds
    started = time.perf_counter()
    with anyio.fail_after(limit_s):
        result = await collect(inventory, tasks=tasks("general", "train"), episodes=episodes)
    wall = time.perf_counter() - started
    ends = _ends(result.trajectories)
    # the window: from the N-th completion (every device has played once) to the end of round R
    # (sync), or to the last completion before any device runs out of episodes (async)
    first, last = ends[devices - 1], ends[-1] if run.mode == "sync" else ends[-devices - 1]
    busy = sum(
        max(0.0, min(t.started_at_s + t.duration_s, last) - max(t.started_at_s, first))
        for t in result.trajectories
    )
    utilisation = busy / (devices * (last - first)) if last > first else 0.0
    durations = [t.duration_s / scale for t in result.trajectories]
    mean = statistics.fmean(durations)
    return Run(
        devices=devices,
        mode=run.mode,
        time_scale=scale,
        episodes=len(result.trajectories),
        utilisation=utilisation,
        mean_duration_sim_s=mean,
        wall_s=wall,
        failed=sum(result.stats.failed.values()),
    ), durations


@contextlib.contextmanager
def _ssh_host(folder: Path, enabled: bool) -> Iterator[str]:
    """An inventory entry for a worker over SSH on loopback, or "" without sshd."""
    if not enabled:
        yield ""
        return
    from distrl.testing.sshd import find_sshd, serve_sshd

    binary = find_sshd()
    if binary is None:
        print("no sshd: every worker is local (Debian: apt-get install openssh-server)", file=sys.stderr)
        yield ""
        return
    with serve_sshd(binary, folder) as server:
        yield (
            f'[[hosts]]\nname = "ssh"\naddress = "127.0.0.1"\ntransport = "ssh"\nport = {server.port}\n'
            f'user = "{getpass.getuser()}"\nidentity_file = "{server.client_key}"\n'
            f'known_hosts_file = "{server.known_hosts}"\npython = "{sys.executable}"\n'
            f'workdir = "{ROOT}"\n'
        )


def _plot(runs: list[Run], path: Path) -> None:
    with saved_figure(path, 2, size=(11, 4)) as (left, right):
        sizes = sorted({r.devices for r in runs})
        by = {(r.devices, r.mode): r for r in runs}
        for mode, style in (("async", "o-"), ("sync", "s-")):
            left.plot(sizes, [by[n, mode].per_sim_hour for n in sizes], style, label=mode)
        left.plot(
            sizes, [by[n, "async"].ideal_per_sim_hour for n in sizes], "--", color="grey", label="ideal"
        )
        left.set_xscale("log", base=2)
        left.set_yscale("log")
        left.set_xlabel("simulated phones")
        left.set_ylabel("trajectories per simulated hour")
        left.set_title("collection throughput")
        left.legend()
        right.plot(sizes, [by[n, "async"].per_sim_hour / by[n, "sync"].per_sim_hour for n in sizes], "o-")
        right.axhline(3.0, color="grey", linestyle="--", label="goal 3×")
        right.axhline(2.4, color="grey", linestyle=":", label="paper 2.4×")
        right.set_xscale("log", base=2)
        right.set_xlabel("simulated phones")
        right.set_ylabel("async / sync")
        right.set_title("speed-up of asynchronous collection")
        right.legend()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="8,32,128,512", help="fleet sizes (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="sync rounds per size, at least 3 (default 3)")
    parser.add_argument(
        "--min-episodes", type=int, default=32, help="more rounds for small fleets (default 32)"
    )
    parser.add_argument("--workers", type=int, default=2, help="local worker processes (default 2)")
    parser.add_argument("--no-ssh", action="store_true", help="no worker over SSH on loopback")
    parser.add_argument("--task-spread", type=float, default=40.0, help="[sim] task_spread (default 40)")
    parser.add_argument("--load", type=float, default=150.0, help="phones stepping at once (default 150)")
    parser.add_argument("--min-time-scale", type=float, default=0.15, help="(default 0.15)")
    parser.add_argument("--limit", type=float, default=1500.0, help="seconds one run may take (default 1500)")
    parser.add_argument("--width", type=int, default=270)
    parser.add_argument("--height", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "collection-async-sync.png")
    args = parser.parse_args()
    if args.rounds < 3:
        # sync's first round is not measured; async's window needs a third episode on every device
        parser.error("--rounds must be at least 3: with fewer, async's measured window is empty")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    runs: list[Run] = []
    durations: list[float] = []
    with tempfile.TemporaryDirectory() as folder, _ssh_host(Path(folder), not args.no_ssh) as ssh_host:
        for devices in (int(n) for n in args.sizes.split(",")):
            rounds = max(args.rounds, math.ceil(args.min_episodes / devices))
            scale = _time_scale(devices, args)
            for mode in ("async", "sync"):
                inventory = _inventory(Path(folder), devices, mode, scale, ssh_host, args)
                run, spread = anyio.run(_run, inventory, devices, rounds, args.limit)
                runs.append(run)
                durations.extend(spread)
                print(
                    f"{devices:4d} devices {mode:5s}: {run.per_sim_hour:8.0f} trajectories per simulated hour"
                    f" ({run.utilisation:.2f} of ideal), {run.wall_s:.0f} s",
                    file=sys.stderr,
                )
    by = {(r.devices, r.mode): r for r in runs}
    sizes = sorted({r.devices for r in runs})
    ratio = {n: by[n, "async"].per_sim_hour / by[n, "sync"].per_sim_hour for n in sizes}
    ordered = sorted(durations)
    result = {
        "benchmark": "collection_async_sync",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "settings": {
            "workers_local": args.workers,
            "worker_ssh": bool(ssh_host),
            "task_spread": args.task_spread,
            "screen": f"{args.width}x{args.height}",
            "policy": "expert",
        },
        "episode_duration_sim_s": {
            "min": round(ordered[0], 2),
            "p50": round(ordered[len(ordered) // 2], 2),
            "max": round(ordered[-1], 2),
            "max_over_min": round(ordered[-1] / ordered[0], 1),
        },
        "runs": [
            {
                "devices": r.devices,
                "mode": r.mode,
                "time_scale": round(r.time_scale, 3),
                "episodes": r.episodes,
                "trajectories_per_sim_hour": round(r.per_sim_hour, 1),
                "ideal_per_sim_hour": round(r.ideal_per_sim_hour, 1),
                "fraction_of_ideal": round(r.utilisation, 3),
                "failed": r.failed,
                "wall_s": round(r.wall_s, 1),
            }
            for r in runs
        ],
        "async_over_sync": {str(n): round(ratio[n], 2) for n in sizes},
        "goals": {
            "async_over_sync_at_least_3_from_32": all(ratio[n] >= 3 for n in sizes if n >= 32),
            "async_at_least_0.9_of_ideal": all(by[n, "async"].utilisation >= 0.9 for n in sizes),
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    _plot(runs, args.figure)
    result["figure"] = str(args.figure)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
