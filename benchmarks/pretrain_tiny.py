"""Behaviour cloning of ``tiny`` within a wall-time budget, and the success rates it reaches (issue 4 (c)).

Runs ``distrl.pretrain.pretrain`` on the ``general`` train split (fresh ``tiny``, whole model, expert
demonstrations with ``--mistake-rate`` mistakes) for ``--minutes`` of wall time, demonstrations
included, then greedy ``evaluate`` of the saved folder, loaded through ``Policy.load`` as a user would:
every task of the ``general`` test split, a seeded sample of ``--train-episodes`` of its train split, and
``--shopping-episodes`` of each ``web_shopping`` split. Goal: general test success between 20% and 60%
after ≤ 10 minutes on 2 CPU cores.

Prints one JSON line: wall time, steps, first and final loss, examples/s, success per split (and per
template), evaluation seconds.

Measured on the 2-core development machine, 10 minutes, seed 0 (success is greedy; general train on 100
tasks, general test on all 213, web_shopping on 32 of each split):

- 700 episodes (4186 steps), mistake rate 0.2, screens at most 224×504 (136 image tokens), lr 2e-3: 874
  steps (23 examples/s), final loss 0.093; general train 8%, test 0%; web_shopping 0% / 0%;
- the same with screens at most 112×252 (36 image tokens, ``PRETRAIN_SPEC``), lr 3e-3: 2370 steps (63
  examples/s), final loss 0.032; general train 40%, test 0.9% (2 of 8 Battery Saver); web_shopping 0%;
- 1000 episodes (5407 steps), mistake rate 0.1, 112×252, lr 3e-3 (the defaults): 2311 steps, final loss
  0.024; general train 52%, test 0.5% (1 of 12 Bluetooth); web_shopping 0% / 0%.

The test split's templates are new tasks: most need screens the demonstrations never showed (Bluetooth,
location, held-out apps' icons) or copying new words from the goal into TYPE (restaurants, world
times, Play Store searches). Ten minutes teach ``tiny`` to recall, not to copy: on a held-out goal it
gives up at once or types a training query ("the capital of Australia" for "Find a Chinese restaurant
in Boston"). The 20–60% goal on the test split is not reached.

Bounded: the training budget plus about 2–4 minutes of evaluation on 2 cores (``--quick``: a 1-minute
smoke run with small samples). Run:
``python benchmarks/pretrain_tiny.py [--minutes 10] [--out runs/tiny-bc]``.
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
    parser.add_argument("--episodes", type=int, default=1000, help="demonstration episodes (default 1000)")
    parser.add_argument("--mistake-rate", type=float, default=0.1, help="share of mistakes (default 0.1)")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-pixels", type=int, default=PRETRAIN_SPEC.max_pixels, help="most pixels a screen is resized to"
    )
    parser.add_argument("--out", default="", help="keep the model here (default: a temporary folder)")
    parser.add_argument("--train-episodes", type=int, default=100, help="general train tasks evaluated")
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
            lr=args.lr,
            seed=args.seed,
            minutes=args.minutes,
            on_progress=progress,
            progress_every=50,
            spec=TinySpec(max_pixels=args.max_pixels),
        )
        policy = Policy.load(PolicySettings(model=str(out), temperature=0.0), device="cpu")
        started = time.monotonic()
        results = {
            "general/test": _split(
                evaluate(policy, "general", "test", episodes=test_episodes, seed=args.seed)
            ),
            "general/train": _split(
                evaluate(policy, "general", "train", episodes=args.train_episodes, seed=args.seed)
            ),
        }
        for split in ("train", "test"):
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
                    "minutes": args.minutes,
                    "episodes": args.episodes,
                    "demonstrations": report.demonstrations,
                    "mistake_rate": args.mistake_rate,
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
