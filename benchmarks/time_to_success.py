"""Time to success: the same training run asynchronously (DistRL) and in synchronous rounds (DigiRL).

For each mode, ``distrl.train`` runs for ``--minutes`` of wall time on the same fleet: ``--devices`` sim
phones on 2 local worker processes, the built-in ``tiny-bc`` (the behaviour-cloned start), the same
algorithm (``--algorithm``, default ``digirl``: on ``tiny-bc`` it gains within minutes, A-RIDE does not
yet, see issue 5; one algorithm for both modes makes this a comparison of the two systems), the same
seed and settings. The phones' latency is the calibrated one (real emulators) at ``--time-scale``
(default 0.5: twice an emulator's speed, so that 10 minutes hold enough updates to learn from), and
each task's app is slower than the fastest by a factor in [1, ``--task-spread``], so episodes differ in
length as the paper's do. ``sync`` is ``run.mode = "sync"``: every phone plays one episode, a barrier,
the updates, a broadcast. The learner writes a checkpoint every ``--every`` seconds, all kept.

Afterwards the BC start and every checkpoint are evaluated the same way: ``--eval-episodes`` episodes
of the ``general`` train split (``tiny-bc`` solves about 1 of the 213 test tasks: nothing to see there),
the same tasks and sampling seed each time, sampled at temperature 1 as the policy collects; so each
curve is success against the wall time at which that version of the policy existed. Counting the
successes among the episodes a run collects would not do: short episodes, which are more often
successes, finish more often in async, so its collected success is inflated.

``time_to_target_s``: the first checkpoint whose success reaches ``--target`` (default: the BC start's ×
1.2, the issue's relative goal); None when a mode never reaches it. Goal (issue 7): async at least 3×
faster (the paper: 3×). Prints one JSON line and writes ``benchmarks/figures/time-to-success.png``.
Bounded: 2 × ``--minutes`` (plus a minute of start-up each) and about 30 s per evaluation; the defaults
take about 24 minutes. Run: ``python benchmarks/time_to_success.py`` (``--minutes 2 --every 40
--eval-episodes 32`` for a smoke run).
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
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import Inventory, PolicySettings, parse_inventory
from distrl.fleet import RunStats, train
from distrl.local.play import evaluate
from distrl.policy import Policy

FIGURES = Path(__file__).resolve().parent / "figures"
MODES = ("async", "sync")


@dataclass
class Curve:
    mode: str
    points: list[tuple[float, int, float]] = field(default_factory=list)
    """(seconds since the run started, learner updates, success) per checkpoint."""
    stats: dict[str, float] = field(default_factory=dict)


def _inventory(folder: Path, mode: str, args: argparse.Namespace) -> Inventory:
    shares = (args.devices - args.devices // 2, args.devices // 2)
    hosts = "".join(
        f'[[hosts]]\nname = "w{i}"\naddress = "localhost"\n[hosts.devices]\nsim = {share}\n'
        for i, share in enumerate(shares)
    )
    text = f"""
[run]
name = "{mode}"
mode = "{mode}"
output_dir = "{folder}"
seed = {args.seed}
duration_s = {args.minutes * 60}
checkpoint_every = 0
checkpoint_every_s = {args.every}
keep_checkpoints = 1000
max_policy_lag = 32

[learner]
algorithm = "{args.algorithm}"
lr_actor = 1e-3

[policy]
model = "tiny-bc"

[sim]
width = 540
height = 1200
latency = "calibrated"
time_scale = {args.time_scale}
task_spread = {args.task_spread}

{hosts}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


def _train(inventory: Inventory) -> tuple[RunStats, float]:
    """Train; the stats and the wall time at which it started."""
    started = time.time()
    stats = anyio.run(lambda: train(inventory))
    return stats, started


def _success(adapter: str, args: argparse.Namespace) -> float:
    policy = Policy.load(PolicySettings(model="tiny-bc", adapter=adapter), seed=args.seed)
    result = evaluate(
        policy,
        "general",
        "train",
        episodes=args.eval_episodes,
        seed=args.seed,
        temperature=1.0,
        parallel=32,
        width=540,
        height=1200,
    )
    return result.success_rate


def _time_to(curve: Curve, target: float) -> float | None:
    return next((seconds for seconds, _, success in curve.points if success >= target), None)


def _plot(curves: list[Curve], start: float, target: float, path: Path) -> None:
    with saved_figure(path, size=(7, 4)) as axis:
        for curve, style in zip(curves, ("o-", "s-"), strict=False):
            xs = [0.0] + [seconds / 60 for seconds, _, _ in curve.points]
            ys = [100 * start] + [100 * success for _, _, success in curve.points]
            axis.plot(xs, ys, style, label=curve.mode)
        axis.axhline(100 * target, color="grey", linestyle="--", label=f"target {100 * target:.1f}%")
        axis.set_xlabel("wall time (minutes, 2 cores)")
        axis.set_ylabel("success on fixed train tasks (%), sampled")
        axis.set_title("tiny-bc trained asynchronously vs in sync rounds")
        axis.legend()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time per mode (default 10)")
    parser.add_argument(
        "--every", type=float, default=120.0, help="seconds between checkpoints (default 120)"
    )
    parser.add_argument("--devices", type=int, default=32, help="sim phones (default 32)")
    parser.add_argument("--algorithm", default="digirl", help="[learner] algorithm (default digirl)")
    parser.add_argument("--time-scale", type=float, default=0.5, help="[sim] time_scale (default 0.5)")
    parser.add_argument("--task-spread", type=float, default=10.0, help="[sim] task_spread (default 10)")
    parser.add_argument(
        "--eval-episodes", type=int, default=128, help="episodes per evaluation (default 128)"
    )
    parser.add_argument(
        "--target", type=float, default=0.0, help="success to reach (default: BC start × 1.2)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "time-to-success.png")
    args = parser.parse_args()
    if args.devices < 2 or args.minutes <= 0 or args.every <= 0 or args.eval_episodes < 1:
        parser.error("--devices must be at least 2; --minutes, --every and --eval-episodes positive")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    began = time.perf_counter()
    start = _success("", args)
    target = args.target or 1.2 * start
    print(f"BC start: {start:.1%}; target {target:.1%}", file=sys.stderr)
    curves = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for mode in MODES:
            stats, started = _train(_inventory(folder, mode, args))
            curve = Curve(mode)
            curve.stats = {
                "episodes": stats.completed,
                "steps": stats.steps,
                "updates": stats.updates,
                "failed": sum(stats.failed.values()),
                "steps_per_s": round(stats.steps_streamed / max(stats.elapsed_s, 1e-9), 2),
            }
            for checkpoint in sorted((folder / mode / "checkpoints").glob("step-*")):
                seconds = checkpoint.stat().st_mtime - started
                success = _success(str(checkpoint / "adapter"), args)
                curve.points.append((seconds, int(checkpoint.name.removeprefix("step-")), success))
                print(
                    f"{mode}: {seconds:5.0f} s, update {curve.points[-1][1]}: {success:.1%}", file=sys.stderr
                )
            curves.append(curve)
    reached = {curve.mode: _time_to(curve, target) for curve in curves}
    budget = args.minutes * 60
    async_s, sync_s = reached["async"], reached["sync"]
    # sync's time over async's; when sync never reached the target, the budget over async's bounds it below
    ratio = None if async_s is None else (sync_s or budget) / async_s
    result = {
        "benchmark": "time_to_success",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "settings": {
            "devices": args.devices,
            "algorithm": args.algorithm,
            "minutes": args.minutes,
            "time_scale": args.time_scale,
            "task_spread": args.task_spread,
            "eval_episodes": args.eval_episodes,
        },
        "bc_start_success": round(start, 4),
        "target": round(target, 4),
        "curves": {
            curve.mode: {
                "points": [
                    {"seconds": round(s, 1), "updates": u, "success": round(v, 4)} for s, u, v in curve.points
                ],
                **curve.stats,
            }
            for curve in curves
        },
        "time_to_target_s": {mode: None if s is None else round(s, 1) for mode, s in reached.items()},
        "sync_over_async_time": None if ratio is None else round(ratio, 2),
        "ratio_is_a_lower_bound": async_s is not None and sync_s is None,
        "goal_async_3x_faster": ratio is not None and ratio >= 3,
        "wall_s": round(time.perf_counter() - began, 1),
    }
    _plot(curves, start, target, args.figure)
    result["figure"] = str(args.figure)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
