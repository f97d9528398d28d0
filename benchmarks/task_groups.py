"""What task groups cost the fleet: episodes per minute with ``[tasks] group_size`` K against ungrouped.

``distrl.collect`` runs on 32 simulated phones (two local worker processes, as ``run`` starts them)
playing the ``general`` train tasks with the sim's scripted ``expert``, so that the figures are the
fleet's and the phones', not the model's. The latency model is on (calibrated from real emulators,
slowed by ``--time-scale`` so that 32 phones' screens fit 2 cores). Each group size is measured
``--repeats`` times, alternating, each for ``--episodes`` episodes after the fleet is up; its rate is
the episodes that arrived over the seconds they took. Groups should cost nothing: a session never waits
for its group, the sampler only hands the same task to K of them. Goal: K = 8 within 10% of K = 1.

Prints one JSON line (per K: each repeat's rate, their mean; the ratio to K = 1) and writes
``benchmarks/figures/task-groups.png``. Bounded: about ``--repeats`` × sizes × (``--episodes`` / the
rate + 15 s); the defaults take about 5 minutes. Run: ``python benchmarks/task_groups.py``
(``--episodes 64 --repeats 1`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import Inventory, parse_inventory
from distrl.fleet import RunStats, collect
from distrl.sim.suites import tasks

FIGURES = Path(__file__).resolve().parent / "figures"


def _inventory(folder: Path, args: argparse.Namespace) -> Inventory:
    hosts = "".join(
        f'[[hosts]]\nname = "w{index}"\naddress = "localhost"\ndevices = {{ sim = {args.devices // 2} }}\n'
        for index in range(2)
    )
    text = f"""
[run]
name = "groups"
output_dir = "{folder}"
seed = {args.seed}

[policy]
model = "expert"

[sim]
width = 270
height = 600
latency = "calibrated"
time_scale = {args.time_scale}

{hosts}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


async def _rate(inventory: Inventory, group_size: int, episodes: int) -> float:
    """Episodes per minute from the first progress tick with every host up to the last arrival."""
    started: list[float] = []

    def progress(stats: RunStats) -> None:
        if not started and stats.hosts_up == stats.hosts:
            started.append(time.monotonic())

    pool = tasks("general", "train")
    result = await collect(
        inventory, tasks=pool, episodes=episodes, group_size=group_size, on_progress=progress
    )
    ended = time.monotonic()
    arrived = [t for t in result.trajectories if t.started_at_s]
    if group_size > 1:
        members: dict[str, int] = {}
        for trajectory in arrived:
            members[trajectory.group] = members.get(trajectory.group, 0) + 1
        assert all(0 < count <= group_size for count in members.values())
    return 60 * len(arrived) / (ended - (started[0] if started else ended - result.stats.elapsed_s))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,8", help="group sizes to compare, 1 first (default 1,8)")
    parser.add_argument("--devices", type=int, default=32, help="simulated phones (default 32)")
    parser.add_argument("--episodes", type=int, default=256, help="episodes per measurement (default 256)")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per size, alternating")
    parser.add_argument("--time-scale", type=float, default=0.5, help="sim latency multiplier (default 0.5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "task-groups.png")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    if not sizes or sizes[0] != 1 or any(size < 1 or size > args.devices for size in sizes):
        sys.exit(f"--sizes: 1 first, then sizes up to --devices ({args.devices}), not {args.sizes!r}")
    rates: dict[int, list[float]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory() as folder:
        inventory = _inventory(Path(folder), args)
        for _ in range(args.repeats):
            for size in sizes:
                rates[size].append(anyio.run(_rate, inventory, size, args.episodes))
    means = {size: statistics.mean(values) for size, values in rates.items()}
    result = {
        "benchmark": "task_groups",
        "machine": platform.machine(),
        "devices": args.devices,
        "episodes": args.episodes,
        "time_scale": args.time_scale,
        "episodes_per_minute": {str(size): [round(v, 1) for v in values] for size, values in rates.items()},
        "mean_episodes_per_minute": {str(size): round(value, 1) for size, value in means.items()},
        "ratio_to_ungrouped": {str(size): round(means[size] / means[1], 3) for size in sizes},
    }
    print(json.dumps(result))
    with saved_figure(args.figure, size=(5.0, 3.2)) as axes:
        labels = [f"K = {size}" for size in sizes]
        axes.bar(labels, [means[size] for size in sizes], color="#4c72b0")
        for index, size in enumerate(sizes):
            axes.plot([index] * len(rates[size]), rates[size], "k.", alpha=0.6)
        axes.set_ylabel("episodes per minute")
        axes.set_title(f"{args.devices} simulated phones, expert, by task group size")


if __name__ == "__main__":
    main()
