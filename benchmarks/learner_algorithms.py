"""A-RIDE vs DigiRL vs filtered BC, from the same behaviour-cloned ``tiny`` start (issue 5's benchmark).

For each algorithm: a fresh LoRA adapter (rank 16, same seed) on the BC model folder, then
``distrl.learner.local.train_local`` on the ``general`` train split for ``--minutes`` of wall time
(rounds of ``--episodes`` episodes sampled at temperature 1 on in-process sim phones, then
``--updates`` learner updates), then greedy success on every task of the ``general`` test split. The
BC start is measured once the same way. Same seeds and budget for all three.

Prints one JSON line (success before/after per algorithm, relative change, updates, rounds, the train
success of each round) and writes ``benchmarks/figures/learner-curves.png``: train success per round
against wall time, and the test success before and after. Goal (issue 5): A-RIDE raises test success by
≥ 20% relative over the BC start and is not worse than DigiRL.

The BC start is the built-in ``tiny-bc`` unless ``--model`` names another (a model folder, e.g. one
``python -m distrl pretrain`` wrote; ``--model pretrain`` pretrains one here for ``--pretrain-minutes``
first). Bounded: three training budgets and four test evaluations of about 2–4 minutes each on 2 cores
(and the pretraining, if asked for). Run: ``python benchmarks/learner_algorithms.py [--minutes 8]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from distrl.config import LearnerSettings, PolicySettings
from distrl.learner.local import Round, train_local
from distrl.learner.trainer import Learner
from distrl.play import evaluate
from distrl.policy import Policy
from distrl.pretrain import pretrain

FIGURES = Path(__file__).resolve().parent / "figures"
ALGORITHMS = ("a-ride", "digirl", "filtered-bc")


def _test_success(policy: Policy, episodes: int | None, seed: int) -> float:
    return evaluate(policy, "general", "test", episodes=episodes, seed=seed, temperature=0.0).success_rate


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _plot(curves: dict[str, list[Round]], before: float, after: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(2, 1))
    for name, rounds in curves.items():
        window = 4
        rates = [r.success_rate for r in rounds]
        smooth = [_mean(rates[max(0, i - window + 1) : i + 1]) for i in range(len(rates))]
        left.plot([r.elapsed_s / 60 for r in rounds], smooth, label=name)
    left.set_xlabel("wall time (minutes)")
    left.set_ylabel("train success (moving mean of 4 rounds)")
    left.set_title("general, train split, sampled at temperature 1")
    left.legend()
    names = ["BC start", *after]
    right.bar(names, [before, *after.values()], color=["grey", "C0", "C1", "C2"][: len(names)])
    right.set_ylabel("success")
    right.set_title("general, test split, greedy")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default="tiny-bc", help="the BC start: tiny-bc (default), a model folder, or pretrain"
    )
    parser.add_argument("--pretrain-minutes", type=float, default=10.0)
    parser.add_argument(
        "--minutes", type=float, default=8.0, help="training budget per algorithm (default 8)"
    )
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--episodes", type=int, default=16, help="episodes per round (default 16)")
    parser.add_argument("--updates", type=int, default=4, help="learner updates per round (default 4)")
    parser.add_argument("--lr-actor", type=float, default=1e-3, help="adapter learning rate (default 1e-3)")
    parser.add_argument(
        "--entropy-coef", type=float, default=None, help="A-RIDE's entropy bonus β (default: the setting's)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-episodes", type=int, default=0, help="test tasks evaluated (0: all 213)")
    parser.add_argument(
        "--figure", default="learner-curves.png", help="plot file in benchmarks/figures (default %(default)s)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny budgets and samples")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.pretrain_minutes, args.episodes, args.updates, args.test_episodes = (
            0.3,
            0.5,
            4,
            1,
            8,
        )
    algorithms = [name.strip() for name in args.algorithms.split(",") if name.strip()]
    unknown = sorted(set(algorithms) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithm {unknown[0]!r}; choose from {', '.join(ALGORITHMS)}")
    test_episodes = args.test_episodes or None
    started = time.monotonic()

    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model == "pretrain":
            model = str(Path(scratch) / "tiny-bc")
            print(
                f"pretraining the BC start for {args.pretrain_minutes} minutes ...",
                file=sys.stderr,
                flush=True,
            )
            pretrain(model, minutes=args.pretrain_minutes, seed=args.seed)
        policy_settings = PolicySettings(model=model)
        start = Policy.load(policy_settings, device="cpu", seed=args.seed)
        before = _test_success(start, test_episodes, args.seed)
        print(f"BC start: general test success {before:.3f}", file=sys.stderr, flush=True)

        results: dict[str, dict[str, object]] = {}
        curves: dict[str, list[Round]] = {}
        after: dict[str, float] = {}
        for name in algorithms:
            policy = Policy.load(policy_settings, device="cpu", seed=args.seed)
            settings = LearnerSettings(algorithm=name, lr_actor=args.lr_actor)
            if args.entropy_coef is not None:
                settings = dataclasses.replace(settings, entropy_coef=args.entropy_coef)
            learner = Learner(policy, settings, seed=args.seed)

            def progress(r: Round, name: str = name) -> None:
                print(
                    f"{name}: round {r.round:3d}  v{r.version:3d}  train success {r.success_rate:.2f}"
                    f"  {r.elapsed_s:5.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

            rounds = train_local(
                learner, minutes=args.minutes, episodes=args.episodes, updates=args.updates, on_round=progress
            )
            curves[name] = rounds
            after[name] = _test_success(policy, test_episodes, args.seed)
            results[name] = {
                "test_after": round(after[name], 4),
                "relative_change": round((after[name] - before) / before, 3) if before else None,
                "updates": learner.updates,
                "rounds": len(rounds),
                "episodes": sum(r.episodes for r in rounds),
                "train_success_by_round": [round(r.success_rate, 3) for r in rounds],
                "mean_update_s": round(
                    sum(u.wall_s for r in rounds for u in r.updates) / max(1, learner.updates), 2
                ),
            }
            print(f"{name}: general test success {after[name]:.3f}", file=sys.stderr, flush=True)
        figure = FIGURES / args.figure
        _plot(curves, before, after, figure)
        a_ride, digirl = after.get("a-ride"), after.get("digirl")
        print(
            json.dumps(
                {
                    "benchmark": "learner_algorithms",
                    "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(),
                    "minutes_per_algorithm": args.minutes,
                    "episodes_per_round": args.episodes,
                    "updates_per_round": args.updates,
                    "lr_actor": args.lr_actor,
                    "entropy_coef": LearnerSettings().entropy_coef
                    if args.entropy_coef is None
                    else args.entropy_coef,
                    "test_episodes": test_episodes or "all",
                    "test_before": round(before, 4),
                    "algorithms": results,
                    "goal": "a-ride ≥ 1.2 × BC start on general test, and ≥ digirl",
                    "goal_met": None
                    if a_ride is None or digirl is None
                    else bool(a_ride >= 1.2 * before and a_ride >= digirl and a_ride > 0),
                    "figure": str(figure),
                    "wall_s": round(time.monotonic() - started, 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
