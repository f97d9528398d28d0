"""The learner's event loop driving 1 to 2,048 simulated phones: collection rate and event-loop lag.

For each fleet size N, ``distrl.collect`` runs on this machine's learner loop with N sim devices split
over ``--workers`` local worker processes (``python -m distrl worker``, the same as ``run``), playing
the ``general`` train tasks with the ``expert`` policy: the sim's scripted expert, so that the figures
are the fleet's and the phones', not the model's inference. The latency model is on (calibrated
from real emulators) and slowed by ``--time-scale`` so that the largest fleet's screens (rendered and
JPEG-encoded in the workers, decoded in the learner) fit 2 cores.

Measured over a window after a warm-up, per size:
- ``steps_per_s``: steps the devices took (streamed to the learner as they happen);
- ``ideal_steps_per_s``: N × the rate of a single device alone (the N = 1 run, measured over a longer
  window since one device takes few steps), and ``fraction_of_ideal``. Goal (issue 6): ≥ 0.9 from 8
  to 512 devices. One device takes only a few dozen steps in that window, and step times are
  heavy-tailed, so the reference itself is uncertain by about ±15%; ``steps_per_s_per_device`` across
  the larger sizes (thousands of steps each) is the sharper view of how flat the scaling is;
- ``lag_ms``: the learner's event-loop lag, p50 / p99 / max: how late a coroutine that asks to sleep
  50 ms wakes up. Goal (issue 6): p99 ≤ 50 ms with ≥ 1,000 sessions;
- ``learner_cpu_ms_per_step``: the learner process's CPU time over the window per step.

Prints one JSON line and writes ``benchmarks/figures/fleet-scaling.png``. Bounded: about
``--single-seconds`` + (``--warmup`` + ``--seconds`` + 15) per further size; the defaults take about
10 minutes. Run: ``python benchmarks/fleet_scaling.py`` (``--sizes 1,8 --seconds 10 --single-seconds 20``
for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import Inventory, parse_inventory
from distrl.fleet import RunStats, board, collect
from distrl.sim.suites import tasks

FIGURES = Path(__file__).resolve().parent / "figures"
LAG_PERIOD_S = 0.05
"""How long the lag probe asks to sleep each time."""
TICK_S = 0.25
"""How often the run's progress snapshot is taken (``distrl.fleet.board.PROGRESS_EVERY_S``): the window's
ends are read from the last snapshot before each."""


@dataclass
class Size:
    devices: int
    seconds: float
    steps: int = 0
    steps_per_s: float = 0.0
    episodes: int = 0
    lag_ms: tuple[float, float, float] = (0.0, 0.0, 0.0)
    learner_cpu_ms_per_step: float = 0.0
    failed: int = 0


def _inventory(folder: Path, devices: int, workers: int, args: argparse.Namespace) -> Inventory:
    hosts = []
    workers = min(workers, devices)
    for index in range(workers):
        share = devices // workers + (index < devices % workers)
        hosts.append(f'[[hosts]]\nname = "w{index}"\naddress = "localhost"\ndevices = {{ sim = {share} }}\n')
    text = f"""
[run]
name = "fleet-{devices}"
output_dir = "{folder}"
seed = {args.seed}

[policy]
model = "expert"

[sim]
width = {args.width}
height = {args.height}
latency = "calibrated"
time_scale = {args.time_scale}
nuisances = true

{"".join(hosts)}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def _measure(inventory: Inventory, devices: int, warmup_s: float, seconds: float) -> Size:
    """Collect until the window after the warm-up has passed; the figures cover the window only."""
    size = Size(devices=devices, seconds=seconds)
    latest: list[RunStats] = []
    """The newest progress snapshot (a tick every ``TICK_S``)."""
    lags: list[float] = []

    all_up = anyio.Event()

    def progress(stats: RunStats) -> None:
        latest[:] = [stats]
        if stats.hosts_up == stats.hosts:
            all_up.set()

    async def probe(window: anyio.Event, done: anyio.Event) -> None:
        while not done.is_set():
            asked = time.perf_counter()
            await anyio.sleep(LAG_PERIOD_S)
            if window.is_set():
                lags.append(time.perf_counter() - asked - LAG_PERIOD_S)

    async def measure(window: anyio.Event, done: anyio.Event, scope: anyio.CancelScope) -> None:
        await all_up.wait()  # a progress tick with every host up
        await anyio.sleep(warmup_s)
        first = latest[0]
        cpu = time.process_time()
        window.set()
        await anyio.sleep(seconds)
        stats = latest[0]
        elapsed = stats.taken - first.taken  # between the two snapshots' ticks
        steps, episodes = first.steps_streamed, first.completed
        size.steps = stats.steps_streamed - steps
        size.steps_per_s = size.steps / elapsed
        size.episodes = stats.completed - episodes
        size.learner_cpu_ms_per_step = 1000 * (time.process_time() - cpu) / max(1, size.steps)
        size.failed = sum(stats.failed.values())
        done.set()
        scope.cancel()

    window, done = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(probe, window, done)
        with anyio.CancelScope() as scope:
            tg.start_soon(measure, window, done, scope)
            await collect(
                inventory,
                tasks=tasks("general", "train"),
                episodes=10**9,
                on_progress=progress,
            )
        done.set()
    size.lag_ms = tuple(round(1000 * _percentile(lags, q), 2) for q in (0.5, 0.99, 1.0))  # type: ignore[assignment]
    return size


def _plot(sizes: list[Size], single: float, path: Path) -> None:
    with saved_figure(path, 2, size=(11, 4)) as (left, right):
        counts = [s.devices for s in sizes]
        left.plot(counts, [s.steps_per_s for s in sizes], "o-", label="measured")
        left.plot(counts, [single * n for n in counts], "--", color="grey", label="ideal: N × one device")
        left.set_xscale("log", base=2)
        left.set_yscale("log")
        left.set_xlabel("simulated phones on one learner loop")
        left.set_ylabel("steps per second")
        left.set_title("collection rate")
        left.legend()
        right.plot(counts, [s.lag_ms[1] for s in sizes], "o-", label="p99")
        right.plot(counts, [s.lag_ms[0] for s in sizes], "o-", label="p50")
        right.axhline(50, color="grey", linestyle="--", label="goal: p99 ≤ 50 ms")
        right.set_xscale("log", base=2)
        right.set_xlabel("simulated phones on one learner loop")
        right.set_ylabel("event-loop lag (ms)")
        right.set_title("learner event loop")
        right.legend()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,8,32,128,512,1024,2048", help="fleet sizes; 1 must come first")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes (default 2)")
    parser.add_argument("--seconds", type=float, default=45.0, help="measured window per size")
    parser.add_argument("--single-seconds", type=float, default=180.0, help="window of the N = 1 run")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before each window")
    parser.add_argument("--time-scale", type=float, default=4.0, help="sim latency multiplier (default 4)")
    parser.add_argument("--width", type=int, default=270)
    parser.add_argument("--height", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "fleet-scaling.png")
    args = parser.parse_args()
    board.PROGRESS_EVERY_S = TICK_S
    counts = [int(n) for n in args.sizes.split(",")]
    if counts[0] != 1:
        parser.error("--sizes must start with 1: the single device gives the ideal bound")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    sizes: list[Size] = []
    with tempfile.TemporaryDirectory() as folder:
        for count in counts:
            window = args.single_seconds if count == 1 else args.seconds
            inventory = _inventory(Path(folder), count, args.workers, args)
            size = anyio.run(_measure, inventory, count, args.warmup, window)
            sizes.append(size)
            print(
                f"{count:5d} devices: {size.steps_per_s:7.2f} steps/s, lag p99 {size.lag_ms[1]:.1f} ms",
                file=sys.stderr,
            )
    single = sizes[0].steps_per_s
    result = {
        "benchmark": "fleet_scaling",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "settings": {
            "workers": args.workers,
            "time_scale": args.time_scale,
            "screen": f"{args.width}x{args.height}",
            "seconds": args.seconds,
            "single_seconds": args.single_seconds,
            "warmup_s": args.warmup,
            "policy": "expert",
        },
        "single_device_steps_per_s": round(single, 4),
        "sizes": [
            {
                "devices": s.devices,
                "steps_per_s": round(s.steps_per_s, 2),
                "ideal_steps_per_s": round(single * s.devices, 2),
                "fraction_of_ideal": round(s.steps_per_s / (single * s.devices), 3) if single else None,
                "steps_per_s_per_device": round(s.steps_per_s / s.devices, 4),
                "episodes": s.episodes,
                "lag_ms_p50_p99_max": list(s.lag_ms),
                "learner_cpu_ms_per_step": round(s.learner_cpu_ms_per_step, 3),
                "failed": s.failed,
            }
            for s in sizes
        ],
        "goals": {
            "fraction_of_ideal_8_to_512_at_least_0.9": all(
                s.steps_per_s >= 0.9 * single * s.devices for s in sizes if 8 <= s.devices <= 512
            ),
            "lag_p99_at_most_50ms_with_1000_sessions": any(
                s.devices >= 1000 and s.lag_ms[1] <= 50 for s in sizes
            ),
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    if single > 0:
        _plot(sizes, single, args.figure)
        result["figure"] = str(args.figure)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
