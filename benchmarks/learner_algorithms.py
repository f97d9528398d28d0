"""A-RIDE vs DigiRL vs filtered BC, and A-RIDE's ablations, from the same behaviour-cloned ``tiny`` start.

For each variant and seed (``--seeds``): a fresh LoRA adapter (rank 16) on the BC model, then
``distrl.local.train_local`` on the ``general`` train split for ``--minutes`` of wall time (or
``--rounds`` rounds, whichever ends first: equal data whatever the load)
(rounds of ``--episodes`` episodes sampled at temperature 1 on in-process sim phones, then
``--updates`` learner updates), then evaluations of the trained policy (and of the BC start, the same
way): success on every task of the ``general`` test split, greedy (``test``: what users deploy) and at
temperature 1 (``test@1``: as the paper decodes and the policy collects), on a fixed sample of
``--unseen-episodes`` unseen tasks if asked (greedy), and on a fixed sample of ``--train-episodes`` train
tasks, greedy (``train``) and at temperature 1 (``train@1``).
``--no-test`` skips them. Same seeds and budget for all; ``--jobs N`` runs N of them at once, each in its
own process of one thread (a many-core machine measures 6 seeds of 5 variants in minutes). The
variants (``--algorithms``): ``a-ride``, ``digirl``, ``filtered-bc``, and A-RIDE without one part
(issue 7, the paper's ablations): ``no-dper`` (uniform replay sampling), ``no-retrace`` (both λ = 0:
one-step TD targets and advantages, no traces), ``no-entropy`` (β = 0, now the default: with
``--entropy-coef 0.05`` the others keep the paper's bonus, as the README's older rows ran); and the
parts of the paper distrl has as options: ``a-ride-shaped`` (the paper's code's reward: 0.05 off each
step, 1 off an invalid answer, a growing 0.4 off repeats), ``a-ride-entropy`` (the paper's β = 0.05),
``a-ride-vtraj-value`` and ``a-ride-vtraj-advantage`` (the actor on the batch's better half by V_traj,
or by r − V_traj), ``digirl-top10`` (DigiRL's curriculum keeping the top 10%).

The test split holds the train templates with held-out values and wordings (136 tasks; the paper's
protocol); ``tiny-bc`` starts at 11.8% there. The second evaluation's fixed sample of train tasks is the
same for every policy, unlike the episodes each run happens to play.

Prints one JSON line (per variant: train success over the first and last third of the rounds for each
seed, with the mean, min and max of the last third over seeds; each split's success after training, seed
by seed; updates; with 2 seeds or more, each variant's last third and each split's success minus A-RIDE's,
seed by seed, with its standard error: the same seed draws the same tasks for every variant, so the
pairing removes their luck), a ``run done:`` line on stderr as each run ends (what is left of a run cut
short), and writes ``benchmarks/figures/learner-curves.png``: train success per round against wall time,
the last third's train success per variant with its spread over seeds, and the evaluations.
Goals: A-RIDE raises test success by ≥ 20% relative over the BC start and is ahead of DigiRL by more
than the paired standard error (issue 21; ``goal_met``, and on the train tasks ``goal_met_on_train_tasks``);
the paper's ordering, A-RIDE above DigiRL and above each ablation (issue 7, ``paper_order_holds``).

The BC start is the built-in ``tiny-bc`` unless ``--model`` names another (a model folder, e.g. one
``python -m distrl pretrain`` wrote; ``--model pretrain`` pretrains one here for ``--pretrain-minutes``
first). Bounded: one training budget per variant and seed, and evaluations of about 1–2 minutes per
variant on 2 cores (and the pretraining, if asked for). Run: ``python benchmarks/learner_algorithms.py
[--minutes 8]``; the ablations: ``--algorithms a-ride,digirl,no-dper,no-retrace,a-ride-entropy --seeds 0,1
--no-test``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import dataclasses
import json
import multiprocessing
import os
import platform
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Literal, NamedTuple, cast

import torch
from plotting import saved_figure

from distrl.config import LearnerSettings, PolicySettings
from distrl.learner.algorithms import with_options
from distrl.learner.algorithms.a_ride import ARideSettings
from distrl.learner.core import Learner
from distrl.local.evaluation import mean_and_error
from distrl.local.play import evaluate
from distrl.local.pretrain import pretrain
from distrl.local.train import Round, train_local
from distrl.policy import Policy
from distrl.tasks.draw import Curriculum

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
    "a-ride-positive": {"advantages": "positive", "kl_coef": 0.0},
    "a-ride-no-kl": {"kl_coef": 0.0},
    "a-ride-kl1": {"kl_coef": 1.0},
    "a-ride-kl03": {"kl_coef": 0.3},
    "a-ride-positive-kl": {"advantages": "positive"},
    "a-ride-positive-kl1": {"advantages": "positive", "kl_coef": 1.0},
    "a-ride-positive-lr1e-4": {"advantages": "positive", "kl_coef": 0.0, "lr_actor": 1e-4},
    "a-ride-floor": {"push_down_floor": 0.8},
    "a-ride-floor-kl1": {"push_down_floor": 0.8, "kl_coef": 1.0},
    "digirl-no-kl": {"kl_coef": 0.0},
    "a-ride-shaped": {"step_cost": 0.05, "repeat_penalty": 0.4, "invalid_reward": 1.0},
    "a-ride-vtraj-value": {"trajectory_filter": "value"},
    "a-ride-vtraj-advantage": {"trajectory_filter": "advantage"},
    "digirl-top10": {"top": 0.1},
    "a-ride-warmup0": {"critic_warmup_updates": 0},
    "a-ride-warmup50": {"critic_warmup_updates": 50},
    "a-ride-lrwarm50": {"lr_warmup_updates": 50},
    "a-ride-entropy": {"entropy_coef": 0.05},
}
"""A-RIDE as it was before it learnt from failures and was anchored (``a-ride-positive``: positive
advantages, no KL), without the anchor, with a stronger one, and with the anchor but positive advantages;
DigiRL without the anchor (as it was). A-RIDE with a part of the paper it has as an option: its reward
shaped as the paper's released code
shapes it; its actor on the batch's better half by V_traj, or by r − V_traj. DigiRL with its paper's
curriculum at its code's 10%. A-RIDE with no critic warm-up, and with one of 50 updates (default 20);
with the actor's learning rate ramped up over its first 50 updates; with the paper's entropy bonus
(β = 0.05; the default is none)."""
_SUFFIXES = re.compile(r"(?:-u([1-9]\d*))?(?:-t(\d)(\d))?(?:-g(\d\d))?(-learn)?$")
"""Any variant may end with ``-uN``, N learner updates per round instead of ``--updates`` (the
update-to-data ratio: ``a-ride-u8`` does 8 updates per 16 episodes), then ``-tXY``, collecting at
temperature X.Y instead of 1 (``a-ride-t05``: A-RIDE's defaults, sampled at 0.5; ``a-ride-t00``:
greedy; the behaviour log-prob is the sampled distribution's, so A-RIDE's ρ stays right), then
``-gNN``, NN% of the episodes played greedily and the rest at that temperature (``[policy]
greedy_share``: ``a-ride-g25``), then ``-learn``, drawing the train tasks by the ``learnability``
curriculum instead of in turn (``[tasks] curriculum``)."""
VARIANTS = (*ALGORITHMS, *ABLATIONS, *OPTIONS)


class _Collection(NamedTuple):
    """How a variant collects, from its suffixes (``_SUFFIXES``)."""

    base: str
    """The variant without its suffixes."""
    temperature: float
    """Its collection temperature (1 when it names none)."""
    updates: int | None
    """Its updates per round (None: ``--updates``)."""
    curriculum: Curriculum
    greedy_share: float


def _collection(variant: str) -> _Collection:
    found = _SUFFIXES.search(variant)
    assert found is not None  # every part of the pattern is optional
    return _Collection(
        base=variant[: found.start()],
        temperature=1.0 if found[2] is None else int(found[2]) + int(found[3]) / 10,
        updates=None if found[1] is None else int(found[1]),
        curriculum="learnability" if found[5] else "uniform",
        greedy_share=0.0 if found[4] is None else int(found[4]) / 100,
    )


_SPLIT_LABELS = {
    "test": "test split (held-out values and wordings), greedy",
    "test@1": "test split, at temperature 1",
    "train": "train tasks (a fixed sample), greedy",
    "train@1": "train tasks (the same sample), at temperature 1",
    "unseen": "unseen split (held-out templates), greedy",
}


def _settings(variant: str, lr_actor: float, entropy_coef: float | None) -> LearnerSettings:
    named = (name for name in ALGORITHMS if variant == name or variant.startswith(f"{name}-"))
    algorithm = cast(Algorithm, next(named, "a-ride"))
    settings = LearnerSettings(algorithm=algorithm, lr_actor=lr_actor)
    if entropy_coef is not None and algorithm == "a-ride":
        settings = with_options(settings, entropy_coef=entropy_coef)
    base = _collection(variant).base
    changes = {**ABLATIONS.get(base, {}), **OPTIONS.get(base, {})}
    return with_options(settings, **changes)


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
        name = split.split("@")[0]  # "test@1": the test split at temperature 1
        result = evaluate(policy, "general", name, episodes=episodes, seed=seed, temperature=temperature)
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
        mean, error = mean_and_error([v - r for v, r in zip(values, last[reference], strict=True)])
        paired[name] = {"mean_difference": round(mean, 4), "standard_error": round(error, 4)}
    return paired


def _plot(
    curves: dict[str, list[Round]],
    last: dict[str, list[float]],
    before: dict[str, float],
    after: dict[str, dict[str, list[float]]],
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
            names = [n for n in last if all(n in after[split] for split in before)]
            policies = ["BC start", *names]
            width = 0.8 / len(before)
            for k, split in enumerate(before):
                means = [before[split], *(_mean(after[split][n]) for n in names)]
                lows = [0.0, *(m - min(after[split][n]) for n, m in zip(names, means[1:], strict=True))]
                highs = [0.0, *(max(after[split][n]) - m for n, m in zip(names, means[1:], strict=True))]
                at = [i + (k - (len(before) - 1) / 2) * width for i in range(len(policies))]
                right.bar(at, means, width=width, yerr=[lows, highs], capsize=3, label=_SPLIT_LABELS[split],
                          color=f"C{k}")  # fmt: skip
            right.set_xticks(range(len(policies)), policies)
            right.set_ylabel("success")
            right.set_title("general, before and after (seeds' mean, min-max)")
            right.tick_params(axis="x", labelrotation=30)
            right.legend(fontsize="small")


@dataclasses.dataclass(frozen=True)
class _Job:
    """One training run: a variant from the BC start with one seed, then its evaluations."""

    model: str
    variant: str
    seed: int
    lr_actor: float
    entropy_coef: float | None
    minutes: float
    rounds: int | None
    episodes: int
    updates: int
    splits: dict[str, tuple[int | None, float]]
    evaluation_seed: int


def _one_thread() -> None:
    """A parallel job's process: one thread, as one of ``--jobs`` runs sharing the cores."""
    torch.set_num_threads(1)


def _start(model: str, splits: dict[str, tuple[int | None, float]], seed: int) -> dict[str, float]:
    """The BC start's evaluations."""
    start = Policy.load(PolicySettings(model=model), device="cpu", seed=seed)
    return _evaluations(start, splits, seed, "BC start")


def _train(job: _Job) -> tuple[dict[str, object], list[Round]]:
    """Train ``job``'s variant for its budget, evaluate it on every split, and say how it went."""
    collection = _collection(job.variant)
    policy = Policy.load(
        PolicySettings(model=job.model, temperature=collection.temperature), device="cpu", seed=job.seed
    )
    learner = Learner(policy, _settings(job.variant, job.lr_actor, job.entropy_coef), seed=job.seed)

    def progress(r: Round) -> None:
        print(
            f"{job.variant} (seed {job.seed}): round {r.round:3d}  v{r.version:3d}"
            f"  train success {r.success_rate:.2f}  {r.elapsed_s:5.0f} s",
            file=sys.stderr,
            flush=True,
        )

    rounds = train_local(
        learner,
        minutes=job.minutes,
        rounds=job.rounds,
        episodes=job.episodes,
        updates=job.updates,
        on_round=progress,
        curriculum=collection.curriculum,
        greedy_share=collection.greedy_share,
    )
    rates = [r.success_rate for r in rounds]
    first_third, last_third = _gain(rates)
    run: dict[str, object] = {
        "seed": job.seed,
        "updates": learner.updates,
        "updates_per_round": job.updates,
        "temperature": collection.temperature,
        "greedy_share": collection.greedy_share,
        "curriculum": collection.curriculum,
        "rounds": len(rounds),
        "episodes": sum(r.episodes for r in rounds),
        "train_success_first_third": round(first_third, 4),
        "train_success_last_third": round(last_third, 4),
        "train_success_by_round": [round(rate, 3) for rate in rates],
        "mean_update_s": round(sum(u.wall_s for r in rounds for u in r.updates) / max(1, learner.updates), 2),
    }
    label = f"{job.variant} (seed {job.seed})"
    for split, value in _evaluations(policy, job.splits, job.evaluation_seed, label).items():
        run[f"{split}_after"] = round(value, 4)
    print(f"run done: {json.dumps({'variant': job.variant, **run})}", file=sys.stderr, flush=True)
    return run, rounds


def _run_all(
    jobs: list[_Job], start: tuple[str, dict[str, tuple[int | None, float]], int] | None, parallel: int
) -> tuple[dict[str, float], list[tuple[dict[str, object], list[Round]]]]:
    """The BC start's evaluations and every job's result, in ``jobs``' order: one after another in this
    process, or ``parallel`` at a time in processes of one thread each."""
    if parallel <= 1:
        before = _start(*start) if start else {}
        return before, [_train(job) for job in jobs]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=parallel, mp_context=context, initializer=_one_thread) as pool:
        started = pool.submit(_start, *start) if start else None
        futures = [pool.submit(_train, job) for job in jobs]
        return (started.result() if started else {}), [future.result() for future in futures]


def _after(runs: dict[str, list[dict[str, object]]], split: str) -> dict[str, list[float]]:
    """Each variant's success on ``split`` after training, seed by seed."""
    return {
        name: [float(cast(float, run[f"{split}_after"])) for run in variant_runs]
        for name, variant_runs in runs.items()
        if all(f"{split}_after" in run for run in variant_runs)
    }


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
        "--rounds",
        type=int,
        default=None,
        help="also end each run after this many rounds: the same data and updates for every variant"
        " whatever the machine's load (the minutes stay a cap)",
    )
    parser.add_argument(
        "--algorithms",
        default=",".join(ALGORITHMS),
        help=f"comma-separated, of {', '.join(VARIANTS)}, each with -uN for N updates per round"
        " and -tXY to collect at temperature X.Y (default %(default)s)",
    )
    parser.add_argument("--episodes", type=int, default=16, help="episodes per round (default 16)")
    parser.add_argument("--updates", type=int, default=4, help="learner updates per round (default 4)")
    parser.add_argument("--lr-actor", type=float, default=1e-3, help="adapter learning rate (default 1e-3)")
    parser.add_argument(
        "--entropy-coef", type=float, default=None, help="A-RIDE's entropy bonus β (default: the setting's)"
    )
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, one run each (default 0)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs at once, each its own process of one thread (default 1: one after another here)",
    )
    parser.add_argument("--test-episodes", type=int, default=0, help="test tasks evaluated (0: all 136)")
    parser.add_argument(
        "--unseen-episodes",
        type=int,
        default=0,
        help="unseen tasks evaluated greedily, a fixed sample (0: none, the default; 213: all)",
    )
    parser.add_argument(
        "--train-episodes",
        type=int,
        default=256,
        help="train tasks evaluated before and after, beside the test split (0: none; default 256)",
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
    if min(args.train_episodes, args.unseen_episodes) < 0 or args.jobs < 1:
        parser.error("--train-episodes and --unseen-episodes must be ≥ 0, --jobs ≥ 1")
    algorithms = [name.strip() for name in args.algorithms.split(",") if name.strip()]
    unknown = sorted({name for name in algorithms if _collection(name).base not in VARIANTS})
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
        splits: dict[str, tuple[int | None, float]] = {}
        if not args.no_test:
            splits["test"] = (test_episodes, 0.0)
            splits["test@1"] = (test_episodes, 1.0)
            if args.unseen_episodes:
                splits["unseen"] = (args.unseen_episodes, 0.0)
            if args.train_episodes:
                splits["train"] = (args.train_episodes, 0.0)
                splits["train@1"] = (args.train_episodes, 1.0)
        jobs = [
            _Job(
                model,
                name,
                seed,
                args.lr_actor,
                args.entropy_coef,
                args.minutes,
                args.rounds,
                args.episodes,
                _collection(name).updates or args.updates,
                splits,
                seeds[0],
            )
            for name in algorithms
            for seed in seeds
        ]
        before, done = _run_all(jobs, (model, splits, seeds[0]) if splits else None, args.jobs)

    runs: dict[str, list[dict[str, object]]] = {}
    curves: dict[str, list[Round]] = {}
    for job, (run, rounds) in zip(jobs, done, strict=True):
        runs.setdefault(job.variant, []).append(run)
        if job.seed == seeds[0]:
            curves[job.variant] = rounds
    last = {
        name: [float(cast(float, run["train_success_last_third"])) for run in rs] for name, rs in runs.items()
    }
    after = {split: _after(runs, split) for split in splits}
    results = {
        name: {
            "train_success_last_third": {
                "mean": round(_mean(last[name]), 4),
                "min": round(min(last[name]), 4),
                "max": round(max(last[name]), 4),
            },
            **{
                f"{split}_after": {"mean": round(_mean(after[split][name]), 4), "by_seed": after[split][name]}
                for split in splits
            },
            "runs": runs[name],
        }
        for name in runs
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
                "jobs": args.jobs,
                "torch_threads": 1 if args.jobs > 1 else torch.get_num_threads(),
                "minutes_per_run": args.minutes,
                "rounds_per_run": args.rounds,
                "seeds": seeds,
                "episodes_per_round": args.episodes,
                "updates_per_round": args.updates,
                "lr_actor": args.lr_actor,
                "entropy_coef": ARideSettings().entropy_coef
                if args.entropy_coef is None
                else args.entropy_coef,
                "test_episodes": None if "test" not in before else test_episodes or "all",
                "train_episodes": None if "train" not in before else args.train_episodes,
                **{f"{split}_before": round(value, 4) for split, value in before.items()},
                "algorithms": results,
                "order_by_train_success_last_third": order,
                "last_third_minus_a_ride": _paired(last, "a-ride"),
                **{f"{split}_after_minus_a_ride": _paired(after[split], "a-ride") for split in splits},
                "goal": "a-ride ≥ 1.2 × BC start on general test (mean over seeds), and ahead of digirl "
                "seed by seed by more than the standard error",
                "goal_met": _goal(before, after, "test"),
                "goal_met_on_train_tasks": _goal(before, after, "train"),
                "paper_order_holds": _paper_order(last),
                "figure": str(figure),
                "wall_s": round(time.monotonic() - started, 1),
            }
        ),
        flush=True,
    )


def _goal(before: dict[str, float], after: dict[str, dict[str, list[float]]], split: str) -> bool | None:
    """Issue 21's goal on ``split``: A-RIDE's mean ≥ 1.2 × the BC start, and ahead of DigiRL (with one
    seed, not behind it; with more, by more than the paired difference's standard error)."""
    if split not in before or "a-ride" not in after.get(split, {}) or "digirl" not in after[split]:
        return None
    a_ride, digirl = after[split]["a-ride"], after[split]["digirl"]
    if _mean(a_ride) < 1.2 * before[split] or _mean(a_ride) <= 0:
        return False
    paired = _paired({"a-ride": a_ride, "digirl": digirl}, "a-ride")
    if not paired:
        return _mean(a_ride) >= _mean(digirl)
    return -paired["digirl"]["mean_difference"] > paired["digirl"]["standard_error"]


def _paper_order(last: dict[str, list[float]]) -> bool | None:
    """The paper's ordering on what was run: A-RIDE above DigiRL and above each of its ablations."""
    if "a-ride" not in last or len(last) < 2:
        return None
    best = _mean(last["a-ride"])
    return all(_mean(values) < best for name, values in last.items() if name in ("digirl", *ABLATIONS))


if __name__ == "__main__":
    main()
