"""Behaviour cloning of ``tiny`` within a budget, and the success rates it reaches (issues 4 (c), 21, 30).

Runs ``distrl.local.pretrain.pretrain`` on the ``general`` train split (fresh ``tiny``, whole model, expert
demonstrations with ``--mistake-rate`` mistakes, a ``--randomise`` share of them on drawn tasks: the
train templates with fresh values and wordings, never held-out ones) for ``--minutes`` of wall time,
demonstrations included, or for ``--steps`` optimiser steps (figures that do not depend on the
machine's load), then greedy ``evaluate`` of the saved folder, loaded through ``Policy.load`` as a
user would: every task of the ``general`` test and unseen splits, every train task (or a seeded sample
of ``--train-episodes``), and ``--shopping-episodes`` of each ``web_shopping`` split. Goal: general
test success between 20% and 60% after ≤ 10 minutes on 2 CPU cores.

Prints one JSON line: wall time, steps, first and final loss, examples/s, success per split (and per
template), evaluation seconds.

Measured (issue 30) on the 2-core development machine, seed 0, ``--steps 5000 --drills 16
--train-episodes 128 --shopping-episodes 0`` (22 minutes of training), otherwise the defaults: 1000
episodes, half of them drawn tasks (``--randomise 0.5``, half of their typed words made up), mistake rate
0.1, screens at most 112×252, lr 3e-3: final loss 0.021; general test 49.3% (67/136: alarms 29/44,
timers 6/8, sums 5/6, opening apps 18/20; no search, site, price or city typed: 0/24), unseen 0%
(0/213), train 68.0% on the sample of 128. This folder was the previous ``tiny-bc``. At temperature 1, 8
plays of each test task: pass@1 30.0%, pass@8 55.9%, 13 of 20 test templates solved at least once.
One run each on the way, 2300 steps: the tokenizer that spells a word the same wherever it stands,
alone, test 16.9%; with 8 typing drills 37.5% (pass@8 47.8%, 10 templates); with made-up words too
34.6% (train 50.0% on the sample), the first letters of held-out words now copied. The 5,000-step run's
settings with ``--contrasts 8`` (one example per drawn task of the template where its expert action
first parts from the demonstration's; 16,383 examples): test 46.3% (63/136), unseen 0.5%, train 71.1%
on the sample of 128: no better beyond the noise, not shipped.

The same with ``--steps 12000`` (58 minutes, the cores shared with other work for part of it): final
loss 0.0063; general test 57.4% (78/136: alarms 30/44, timers 8/8, sums 6/6, weather for a held-out
city 3/6, an in-app search 1/4; no Google search, site or price), unseen 0% (0/213), train 89.1% on the
sample of 128 (86.5%, 281/325, on every train task); at temperature 1, 8 plays of each test task: pass@1
41.3%, pass@8 63.2%, 13 of 20 templates. This folder was the previous ``tiny-bc``.

From that folder, ``--start FOLDER --steps 4000 --episodes 2000 --drills 16 --lr 1e-3 --seed 1
--train-episodes 0 --shopping-episodes 0`` (19 minutes; 28,719 examples of new demonstrations; loss
0.013 → 0.0087): general test 61.0% (83/136; the stopwatch, in-app searches 2/4, sites 2/4; no Google
search or price), unseen 0%, train 92.9% (302/325); at temperature 1, 8 plays of each test task: pass@1
42.1%, pass@8 64.0%, 15 of 20 templates. This folder was the previous ``tiny-bc``.

From that folder, the same with ``--seed 2``, on the wider drawn searches and products of today's sim
(subjects and products in the held-out ones' shapes, made-up words with clusters and double letters; 23
minutes; 29,266 examples; loss 0.076 → 0.0079): general test 68.4% (93/136; Google searches 3/6, prices
1/4), unseen 0.5% (1/213), train 94.2% (306/325); at temperature 1, 8 plays of each test task: pass@1
45.2%, pass@8 73.5%, 16 of 20 templates. This folder was the previous ``tiny-bc`` (``eval``: greedy train
96.0%, test 66.2%).

From that folder, the same with ``--seed 3``, on demonstrations that also draw wordings of switching
alarms, the stopwatch, screen timeouts and About phone, and reach About phone through Settings' search
(21 minutes; loss 0.10 → 0.0055), judged by ``eval`` instead of this script's evaluation: greedy train
95.7% (311/325), test 66.9% (91/136), level with the previous one paired by task (train −0.3 ± 1.3,
test +0.7 ± 2.9); About phone 6/6 on train (0/6 before); at temperature 1, 8 plays of each test task:
pass@1 46.0%, pass@8 77.9%, all 20 templates. This folder is the shipped ``tiny-bc``.

The ``tiny-bc`` before those (``--steps 2300``, no drills, Qwen2's split in the tokenizer): final loss 0.039;
general test 21.3% (29/136), unseen 0% (0/213), train 45.3% on the sample of 128 and 43.4% (141/325) on
every train task (``python -m distrl eval FOLDER --split train``). On ``test`` it solved held-out alarm
times and the held-out alarm wording (8/44), timers (2/8), new wordings of opening an app (13/20), of
switches (4/10) and of settings pages (2/3); still no calculation (0/6) and nothing that needs a new word
typed (searches, cities, products, sites: 0/24; on train these searches are the hardest for ``tiny`` too:
4/92), the 20–60% goal on the test split at its floor. At temperature 1, 8 plays of each test task (``python
-m distrl eval tiny-bc --split test --temperature 1 --samples 8``): pass@1 13.4%, pass@8 26.5%, and 8 of the
20 test templates solved at least once (alarm 11/44, open_app 16/20, timer 1/8, brightness 1/6,
airplane_mode 2/2, dark_theme 2/2, do_not_disturb 1/2, settings_page 2/3); about_phone, alarm_toggle,
app_search, calculator, item_price, mobile_data, open_site, screen_timeout, search_google, stopwatch,
weather and wifi never. Greedy, the policy reaches the typing step of searches and sums but types something
it learnt instead of the goal's words (``weather in Rome`` for Cairo, ``21+45=`` for 23 + 45). More drawn
tasks did worse: ``--randomise 0.8`` (the same 2300 steps, 10.2 minutes on idler cores) gave test 16.2%
(22/136; alarms 1/44), train 31.3% on the sample of 128, unseen 0% (one seed each).

The ``tiny-bc`` before that (issue 21: the same 2300 steps and 1000 episodes, no drawn tasks, and an
expert that still tapped alarm times, timer lengths and sums out on grids and keypads) had general
train 40.0% (130/325), test 11.8% (16/136), unseen 0.9% (2/213): no held-out alarm time (0/44) and
nothing typed (0/24). With 2000 episodes and the same 2300 steps it had train 41.2%, test 10.3%.
How much of the gain on test the typing expert makes and how much the drawn tasks was not measured (no
run of the typing expert without drawn tasks); each figure is ±3-4 points.

Before issue 21 (the test split then was today's ``unseen``; general train success on a sample of 100
train tasks, web_shopping on 32 of each split), in 10 minutes: 700 episodes, mistake rate 0.2, screens
at most 224×504, lr 2e-3: 874 steps, general train 8%, test 0%; the same at 112×252 (``PRETRAIN_SPEC``),
lr 3e-3: 2370 steps, train 40%, test 0.9%; 1000 episodes, mistake rate 0.1: 2311 steps, train 52%,
test 0.5%; web_shopping 0% in each.

Bounded: the training budget plus about 5 minutes of evaluation on 2 cores (``--quick``: a 1-minute
smoke run with small samples). Run:
``python benchmarks/pretrain_tiny.py [--minutes 10 | --steps 5000 --drills 16] [--out runs/tiny-bc]``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
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
from distrl.local.evaluation import Evaluation
from distrl.local.play import evaluate
from distrl.local.pretrain import PRETRAIN_SPEC, Progress, pretrain
from distrl.policy import Policy, TinySpec
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
        default=0.5,
        help="share of episodes playing drawn tasks: fresh values and wordings, never held out (default 0.5)",
    )
    parser.add_argument(
        "--drills",
        type=int,
        default=16,
        help="typing drills at each step where the expert types: its screen with drawn goals (default 16)",
    )
    parser.add_argument(
        "--contrasts",
        type=int,
        default=0,
        help="other tasks of each episode's template, each one example where its expert action first "
        "parts from the demonstration's (default 0)",
    )
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    parser.add_argument(
        "--start",
        default="",
        help="go on from this model (tiny-bc or a folder) instead of a fresh tiny (default: fresh)",
    )
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
            drills=args.drills,
            contrasts=args.contrasts,
            lr=args.lr,
            seed=args.seed,
            minutes=None if args.steps else args.minutes,
            max_steps=args.steps or None,
            on_progress=progress,
            progress_every=50,
            spec=TinySpec(max_pixels=args.max_pixels),
            start=args.start or None,
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
                    "drills": args.drills,
                    "contrasts": args.contrasts,
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
