"""A-RIDE vs DigiRL vs filtered BC, and A-RIDE's ablations, from the same behaviour-cloned ``tiny`` start.

For each variant and seed (``--seeds``): a fresh LoRA adapter (rank 16) on the BC model, then
``distrl.local.train_local`` on the ``general`` train split for ``--minutes`` of wall time
(rounds of ``--episodes`` episodes sampled at temperature 1 on in-process sim phones, then
``--updates`` learner updates), then, for the first seed, two evaluations of the trained policy (and of
the BC start, the same way): greedy success on every task of the ``general`` test split, and success on
a fixed sample of ``--train-episodes`` train tasks decoded at ``--train-temperature`` (default 1, as the
policy collects and as RL trains it). ``--no-test`` skips both. Same seeds and budget for all. The
variants (``--algorithms``): ``a-ride``, ``digirl``, ``filtered-bc``, and A-RIDE without one part
(issue 7, the paper's ablations): ``no-dper`` (uniform replay sampling), ``no-retrace`` (both λ = 0: one-step
TD targets and advantages, no traces), ``no-entropy`` (β = 0); and the parts of the paper distrl has as
options: ``a-ride-shaped`` (the paper's code's reward: 0.05 off each step, 1 off an invalid answer, a
growing 0.4 off repeats), ``a-ride-vtraj-value`` and ``a-ride-vtraj-advantage`` (the actor on the batch's
better half by V_traj, or by r − V_traj), ``digirl-top10`` (DigiRL's curriculum keeping the top 10%).

The test split holds the train templates with held-out values and wordings (136 tasks; the paper's
protocol); ``tiny-bc`` starts at 11.8% there. The second evaluation's fixed sample of train tasks is the
same for every policy, unlike the episodes each run happens to play.

Prints one JSON line (per variant: train success over the first and last third of the rounds for each
seed, with the mean, min and max of the last third over seeds; the evaluations before and after;
updates; with 2 seeds or more, each variant's last third minus A-RIDE's, seed by seed, with its standard
error: the same seed draws the same tasks for every variant, so the pairing removes their luck) and
writes ``benchmarks/figures/learner-curves.png``: train success per round against wall time, the last
third's train success per variant with its spread over seeds, and the evaluations.
Goals: A-RIDE raises test success by ≥ 20% relative over the BC start and is not worse than DigiRL
(issue 5; ``goal_met``, and on the train tasks ``goal_met_on_train_tasks``); the paper's ordering,
A-RIDE above DigiRL and above each ablation (issue 7, ``paper_order_holds``).

The BC start is the built-in ``tiny-bc`` unless ``--model`` names another (a model folder, e.g. one
``python -m distrl pretrain`` wrote; ``--model pretrain`` pretrains one here for ``--pretrain-minutes``
first). Bounded: one training budget per variant and seed, and evaluations of about 1–2 minutes per
variant on 2 cores (and the pretraining, if asked for). Run: ``python benchmarks/learner_algorithms.py
[--minutes 8]``; the ablations: ``--algorithms a-ride,digirl,no-dper,no-retrace,no-entropy --seeds 0,1
--no-test``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal, cast

import torch
from plotting import saved_figure

from distrl.config import LearnerSettings, PolicySettings
from distrl.learner.trainer import Learner
from distrl.local import Round, train_local
from distrl.play import evaluate
from distrl.policy import Policy
from distrl.pretrain import pretrain

FIGURES = Path(__file__).resolve().parent / "figures"
ALGORITHMS = ("a-ride", "digirl", "filtered-bc")
Algorithm = Literal["a-ride", "digirl", "filtered-bc"]
ABLATIONS: dict[str, dict[str, object]] = {
    "no-dper": {"priority_alpha": 0.0},
    "no-retrace": {"retrace_lambda": 0.0, "advantage_lambda": 0.0},
    "no-entropy": {"entropy_coef": 0.0},
}
"""A-RIDE without one part: uniform replay sampling (p^0, so every importance weight is 1); one-step TD
targets and advantages (λ = 0 makes every trace c = 0); no entropy bonus."""
OPTIONS: dict[str, dict[str, object]] = {
    "a-ride-shaped": {"step_cost": 0.05, "repeat_penalty": 0.4, "invalid_reward": 1.0},
    "a-ride-vtraj-value": {"trajectory_filter": "value"},
    "a-ride-vtraj-advantage": {"trajectory_filter": "advantage"},
    "digirl-top10": {"digirl_top": 0.1},
}
"""A-RIDE with a part of the paper it has as an option: its reward shaped as the paper's released code
shapes it; its actor on the batch's better half by V_traj, or by r − V_traj. DigiRL with its paper's
curriculum at its code's 10%."""
VARIANTS = (*ALGORITHMS, *ABLATIONS, *OPTIONS)
_SPLIT_LABELS = {
    "test": "test split (held-out values and wordings), greedy",
    "train": "train tasks (a fixed sample), sampled",
}


def _settings(variant: str, lr_actor: float, entropy_coef: float | None) -> LearnerSettings:
    named = (name for name in ALGORITHMS if variant == name or variant.startswith(f"{name}-"))
    algorithm = cast(Algorithm, next(named, "a-ride"))
    settings = LearnerSettings(algorithm=algorithm, lr_actor=lr_actor)
    if entropy_coef is not None:
        settings = dataclasses.replace(settings, entropy_coef=entropy_coef)
    changes = {**ABLATIONS.get(variant, {}), **OPTIONS.get(variant, {})}
    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]


def _gain(rates: list[float]) -> tuple[float, float]:
    """Mean train success over the first and the last third of the rounds."""
    third = max(1, len(rates) // 3)
    return _mean(rates[:third]), _mean(rates[-third:])


def _evaluations(
    policy: Policy, splits: dict[str, tuple[int | None, float]], seed: int, label: str
) -> dict[str, float]:
    """Success on each split: ``episodes`` tasks drawn with ``seed`` (all of them if None), decoded at
    ``temperature`` (0: greedy), the same tasks and sampling seed for every policy."""
    found = {}
    for split, (episodes, temperature) in splits.items():
        result = evaluate(policy, "general", split, episodes=episodes, seed=seed, temperature=temperature)
        found[split] = result.success_rate
        print(
            f"{label}: general {split} success (temperature {temperature:g}) {found[split]:.3f}",
            file=sys.stderr,
            flush=True,
        )
    return found


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _paired(last: dict[str, list[float]], reference: str) -> dict[str, dict[str, float]]:
    """Each variant's last-third train success minus ``reference``'s, seed by seed (the same seed draws
    the same tasks in the same order for every variant), with the standard error of that mean
    difference; only where ``reference`` ran and there are at least 2 seeds."""
    if reference not in last or len(last[reference]) < 2:
        return {}
    paired = {}
    for name, values in last.items():
        if name == reference:
            continue
        differences = [v - r for v, r in zip(values, last[reference], strict=True)]
        paired[name] = {
            "mean_difference": round(statistics.mean(differences), 4),
            "standard_error": round(statistics.stdev(differences) / math.sqrt(len(differences)), 4),
        }
    return paired


def _plot(
    curves: dict[str, list[Round]],
    last: dict[str, list[float]],
    before: dict[str, float],
    after: dict[str, dict[str, float]],
    path: Path,
) -> None:
    panels = 3 if before else 2
    with saved_figure(path, panels, size=(5.5 * panels, 4), width_ratios=(2, 1.4, 1)[:panels]) as axes:
        left, middle = axes[0], axes[1]
        for name, rounds in curves.items():
            window = 4
            rates = [r.success_rate for r in rounds]
            smooth = [_mean(rates[max(0, i - window + 1) : i + 1]) for i in range(len(rates))]
            left.plot([r.elapsed_s / 60 for r in rounds], smooth, label=name)
        left.set_xlabel("wall time (minutes)")
        left.set_ylabel("train success (moving mean of 4 rounds)")
        left.set_title("general, train split, sampled at temperature 1 (first seed)")
        left.legend()
        names = list(last)
        means = [_mean(last[n]) for n in names]
        spread = [[m - min(last[n]) for n, m in zip(names, means, strict=True)],
                  [max(last[n]) - m for n, m in zip(names, means, strict=True)]]  # fmt: skip
        middle.bar(names, means, yerr=spread, capsize=4, color=[f"C{i}" for i in range(len(names))])
        middle.set_ylabel("train success, last third of the rounds")
        middle.set_title("mean over seeds (bars: min to max)")
        middle.tick_params(axis="x", labelrotation=30)
        if before:
            right = axes[2]
            policies = ["BC start", *after]
            width = 0.8 / len(before)
            for k, split in enumerate(before):
                values = [before[split], *(after[n][split] for n in after)]
                at = [i + (k - (len(before) - 1) / 2) * width for i in range(len(policies))]
                right.bar(at, values, width=width, label=_SPLIT_LABELS[split], color=f"C{k}")
            right.set_xticks(range(len(policies)), policies)
            right.set_ylabel("success")
            right.set_title("general, before and after (first seed)")
            right.tick_params(axis="x", labelrotation=30)
            right.legend()


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
    parser.add_argument(
        "--algorithms",
        default=",".join(ALGORITHMS),
        help=f"comma-separated, of {', '.join(VARIANTS)} (default %(default)s)",
    )
    parser.add_argument("--episodes", type=int, default=16, help="episodes per round (default 16)")
    parser.add_argument("--updates", type=int, default=4, help="learner updates per round (default 4)")
    parser.add_argument("--lr-actor", type=float, default=1e-3, help="adapter learning rate (default 1e-3)")
    parser.add_argument(
        "--entropy-coef", type=float, default=None, help="A-RIDE's entropy bonus β (default: the setting's)"
    )
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one run each (default 0)")
    parser.add_argument("--test-episodes", type=int, default=0, help="test tasks evaluated (0: all 136)")
    parser.add_argument(
        "--train-episodes",
        type=int,
        default=256,
        help="train tasks evaluated before and after, beside the test split (0: none; default 256)",
    )
    parser.add_argument(
        "--train-temperature",
        type=float,
        default=1.0,
        help="decoding temperature of that evaluation (default 1, as the policy collects; 0: greedy)",
    )
    parser.add_argument(
        "--no-test", action="store_true", help="no greedy evaluation (train success while training only)"
    )
    parser.add_argument(
        "--figure", default="learner-curves.png", help="plot file in benchmarks/figures (default %(default)s)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny budgets and samples")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.pretrain_minutes, args.episodes, args.updates = 0.3, 0.5, 4, 1
        args.test_episodes, args.train_episodes = 8, 8
    if args.train_episodes < 0 or args.train_temperature < 0:
        parser.error("--train-episodes and --train-temperature must be ≥ 0")
    algorithms = [name.strip() for name in args.algorithms.split(",") if name.strip()]
    unknown = sorted(set(algorithms) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown algorithm {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    seeds = [int(seed) for seed in args.seeds.split(",")]
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
            pretrain(model, minutes=args.pretrain_minutes, seed=seeds[0])
        policy_settings = PolicySettings(model=model)
        splits: dict[str, tuple[int | None, float]] = {}
        if not args.no_test:
            splits["test"] = (test_episodes, 0.0)
            if args.train_episodes:
                splits["train"] = (args.train_episodes, args.train_temperature)
        before: dict[str, float] = {}
        if splits:
            start = Policy.load(policy_settings, device="cpu", seed=seeds[0])
            before = _evaluations(start, splits, seeds[0], "BC start")

        results: dict[str, dict[str, object]] = {}
        curves: dict[str, list[Round]] = {}
        last: dict[str, list[float]] = {}
        after: dict[str, dict[str, float]] = {}
        for name in algorithms:
            runs: list[dict[str, object]] = []
            for seed in seeds:
                policy = Policy.load(policy_settings, device="cpu", seed=seed)
                learner = Learner(policy, _settings(name, args.lr_actor, args.entropy_coef), seed=seed)

                def progress(r: Round, name: str = name, seed: int = seed) -> None:
                    print(
                        f"{name} (seed {seed}): round {r.round:3d}  v{r.version:3d}"
                        f"  train success {r.success_rate:.2f}  {r.elapsed_s:5.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )

                rounds = train_local(
                    learner,
                    minutes=args.minutes,
                    episodes=args.episodes,
                    updates=args.updates,
                    on_round=progress,
                )
                rates = [r.success_rate for r in rounds]
                first_third, last_third = _gain(rates)
                run: dict[str, object] = {
                    "seed": seed,
                    "updates": learner.updates,
                    "rounds": len(rounds),
                    "episodes": sum(r.episodes for r in rounds),
                    "train_success_first_third": round(first_third, 4),
                    "train_success_last_third": round(last_third, 4),
                    "train_success_by_round": [round(rate, 3) for rate in rates],
                    "mean_update_s": round(
                        sum(u.wall_s for r in rounds for u in r.updates) / max(1, learner.updates), 2
                    ),
                }
                last.setdefault(name, []).append(last_third)
                if seed == seeds[0]:
                    curves[name] = rounds
                    if splits:
                        after[name] = _evaluations(policy, splits, seed, name)
                        for split, value in after[name].items():
                            run[f"{split}_after"] = round(value, 4)
                            run[f"{split}_relative_change"] = (
                                round((value - before[split]) / before[split], 3) if before[split] else None
                            )
                runs.append(run)
            results[name] = {
                "train_success_last_third": {
                    "mean": round(_mean(last[name]), 4),
                    "min": round(min(last[name]), 4),
                    "max": round(max(last[name]), 4),
                },
                "runs": runs,
            }
        figure = FIGURES / args.figure
        _plot(curves, last, before, after, figure)
        order = sorted(last, key=lambda n: -_mean(last[n]))
        print(
            json.dumps(
                {
                    "benchmark": "learner_algorithms",
                    "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(),
                    "minutes_per_run": args.minutes,
                    "seeds": seeds,
                    "episodes_per_round": args.episodes,
                    "updates_per_round": args.updates,
                    "lr_actor": args.lr_actor,
                    "entropy_coef": LearnerSettings().entropy_coef
                    if args.entropy_coef is None
                    else args.entropy_coef,
                    "test_episodes": None if "test" not in before else test_episodes or "all",
                    "test_before": None if "test" not in before else round(before["test"], 4),
                    "train_episodes": None if "train" not in before else args.train_episodes,
                    "train_temperature": None if "train" not in before else args.train_temperature,
                    "train_before": None if "train" not in before else round(before["train"], 4),
                    "algorithms": results,
                    "order_by_train_success_last_third": order,
                    "last_third_minus_a_ride": _paired(last, "a-ride"),
                    "goal": "a-ride ≥ 1.2 × BC start on general test, and ≥ digirl",
                    "goal_met": _goal(before, after, "test"),
                    "goal_met_on_train_tasks": _goal(before, after, "train"),
                    "paper_order_holds": _paper_order(last),
                    "figure": str(figure),
                    "wall_s": round(time.monotonic() - started, 1),
                }
            ),
            flush=True,
        )


def _goal(before: dict[str, float], after: dict[str, dict[str, float]], split: str) -> bool | None:
    """Issue 5's goal on ``split``: A-RIDE ≥ 1.2 × the BC start, and ≥ DigiRL."""
    if split not in before or "a-ride" not in after or "digirl" not in after:
        return None
    a_ride = after["a-ride"][split]
    return a_ride >= 1.2 * before[split] and a_ride >= after["digirl"][split] and a_ride > 0


def _paper_order(last: dict[str, list[float]]) -> bool | None:
    """The paper's ordering on what was run: A-RIDE above DigiRL and above each of its ablations."""
    if "a-ride" not in last or len(last) < 2:
        return None
    best = _mean(last["a-ride"])
    return all(_mean(values) < best for name, values in last.items() if name in ("digirl", *ABLATIONS))


if __name__ == "__main__":
    main()
