"""Behaviour cloning of ``tiny`` within a budget, and the success rates it reaches (issues 4 (c) and 21).

Runs ``distrl.pretrain.pretrain`` on the ``general`` train split (fresh ``tiny``, whole model, expert
demonstrations with ``--mistake-rate`` mistakes) for ``--minutes`` of wall time, demonstrations
included, or for ``--steps`` optimiser steps (figures that do not depend on the machine's load), then
greedy ``evaluate`` of the saved folder, loaded through ``Policy.load`` as a user would: every task of
the ``general`` test and unseen splits, every train task (or a seeded sample of ``--train-episodes``),
and ``--shopping-episodes`` of each ``web_shopping`` split. Goal: general test success between 20% and
60% after ≤ 10 minutes on 2 CPU cores.

Prints one JSON line: wall time, steps, first and final loss, examples/s, success per split (and per
template), evaluation seconds.

Measured on the 2-core development machine with the three splits (issue 21), seed 0, ``--steps 2300``
(what 10 minutes gave on idle cores; 12.3 minutes here, the cores shared with other work), 1000
episodes (5560 steps of demonstrations), mistake rate 0.1, screens at most 112×252, lr 3e-3: final
loss 0.031; general train 40.0% (130/325), test 11.8% (16/136), unseen 0.9% (2/213); web_shopping 0%
on 16 tasks of each split (it is not trained on). This folder is the shipped ``tiny-bc``. On ``test``
it solves new wordings of opening an app (12/20) and 2 of the 10 new wordings of switches, but no
held-out alarm time (0/44; 12/74 train alarms) and nothing that needs a new word typed (searches,
cities, products, sites: 0/24). The 20–60% goal on the test split is not met. With 2000 episodes
(11,153 demonstration steps) and the same 2300 steps (13.5 minutes, idle cores): train 41.2%, test
10.3% (14/136), unseen 0%: no better on test (each figure is ±3 points), so the 1000-episode folder ships.

Before issue 21 (the test split then was today's ``unseen``; general train success on a sample of 100
train tasks, web_shopping on 32 of each split), in 10 minutes: 700 episodes, mistake rate 0.2, screens
at most 224×504, lr 2e-3: 874 steps, general train 8%, test 0%; the same at 112×252 (``PRETRAIN_SPEC``),
lr 3e-3: 2370 steps, train 40%, test 0.9%; 1000 episodes, mistake rate 0.1: 2311 steps, train 52%,
test 0.5%; web_shopping 0% in each.

Bounded: the training budget plus about 5 minutes of evaluation on 2 cores (``--quick``: a 1-minute
smoke run with small samples). Run:
``python benchmarks/pretrain_tiny.py [--minutes 10 | --steps 2300] [--out runs/tiny-bc]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from distrl.config import PolicySettings
from distrl.play import Evaluation, evaluate
from distrl.policy import Policy, TinySpec
from distrl.pretrain import PRETRAIN_SPEC, Progress, pretrain
from distrl.sim.suites import SPLITS


def _split(evaluation: Evaluation) -> dict[str, object]:
    return {
        "episodes": len(evaluation.outcomes),
        "success": round(evaluation.success_rate, 4),
        "eval_s": round(evaluation.wall_s, 1),
        "by_template": {
            name: f"{won}/{total}" for name, (won, total) in sorted(evaluation.by_template().items())
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget (default 10)")
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        help="a step budget instead of --minutes (0: none): figures independent of the load",
    )
    parser.add_argument("--episodes", type=int, default=1000, help="demonstration episodes (default 1000)")
    parser.add_argument("--mistake-rate", type=float, default=0.1, help="share of mistakes (default 0.1)")
    parser.add_argument(
        "--randomise",
        type=float,
        default=0.0,
        help="share of episodes playing drawn tasks: fresh values and wordings, never held out (default 0)",
    )
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-pixels", type=int, default=PRETRAIN_SPEC.max_pixels, help="most pixels a screen is resized to"
    )
    parser.add_argument("--out", default="", help="keep the model here (default: a temporary folder)")
    parser.add_argument(
        "--train-episodes", type=int, default=0, help="general train tasks evaluated (default 0: all)"
    )
    parser.add_argument("--shopping-episodes", type=int, default=32, help="web_shopping tasks per split")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 minute, small samples")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.episodes, args.train_episodes, args.shopping_episodes = 1.0, 60, 8, 4
    test_episodes = 16 if args.quick else None

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out) if args.out else Path(scratch) / "tiny-bc"

        def progress(p: Progress) -> None:
            print(
                f"step {p.step:5d}  loss {p.loss:.4f}  {p.examples_per_s:5.1f} examples/s  lr {p.lr:.2e}  "
                f"{p.elapsed_s:6.0f} s",
                file=sys.stderr,
                flush=True,
            )

        report = pretrain(
            out,
            suites=("general",),
            episodes=args.episodes,
            mistake_rate=args.mistake_rate,
            randomise=args.randomise,
            lr=args.lr,
            seed=args.seed,
            minutes=None if args.steps else args.minutes,
            max_steps=args.steps or None,
            on_progress=progress,
            progress_every=50,
            spec=TinySpec(max_pixels=args.max_pixels),
        )
        policy = Policy.load(PolicySettings(model=str(out), temperature=0.0), device="cpu")
        started = time.monotonic()
        results: dict[str, dict[str, object]] = {}
        for split, episodes in (
            ("test", test_episodes),
            ("unseen", test_episodes),
            ("train", args.train_episodes or None),
        ):
            results[f"general/{split}"] = _split(
                evaluate(policy, "general", split, episodes=episodes, seed=args.seed)
            )
        for split in SPLITS:
            if args.shopping_episodes > 0:
                evaluation = evaluate(
                    policy, "web_shopping", split, episodes=args.shopping_episodes, seed=args.seed
                )
                results[f"web_shopping/{split}"] = _split(evaluation)
        print(
            json.dumps(
                {
                    "benchmark": "pretrain_tiny",
                    "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(),
                    "minutes": None if args.steps else args.minutes,
                    "step_budget": args.steps or None,
                    "episodes": args.episodes,
                    "demonstrations": report.demonstrations,
                    "mistake_rate": args.mistake_rate,
                    "randomise": args.randomise,
                    "lr": args.lr,
                    "max_pixels": args.max_pixels,
                    "wall_s": round(report.wall_s, 1),
                    "steps": report.steps,
                    "examples": report.examples,
                    "examples_per_s": round(report.examples / report.wall_s, 1),
                    "first_loss": round(report.first_loss, 4),
                    "final_loss": round(report.final_loss, 4),
                    "eval_s": round(time.monotonic() - started, 1),
                    "success": results,
                    "goal_general_test": "0.20-0.60",
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
