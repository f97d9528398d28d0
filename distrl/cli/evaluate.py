"""``eval``: a policy's success on simulated tasks, greedy and at temperature 1; against its start
(``--against-start``: the model without the adapter, paired by task); and over a run's last checkpoints
(``--checkpoints K``: each task's success its mean over them). Checkpoints of one run differ by several
points, so one checkpoint's figure carries the training's own noise, which its error over tasks does not
count; the mean of a few is the steadier answer to "did training help"."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from distrl.cli.common import EXIT_FAILED, EXIT_USAGE, adapter_problem, counted, fail, say, unknown_suite
from distrl.tasks.draw import split_tasks

if TYPE_CHECKING:
    from distrl.local.evaluation import Evaluation
    from distrl.policy import Policy

MOST_SAMPLES = 1_000
"""The most ``--samples``: pass@K is read up to pass@1,000 (each sample is a whole play of every task)."""

Results = list[tuple[float, "Evaluation"]]
"""Each decoding's temperature (0: greedy) and its evaluation, on the same tasks and seeds."""


@dataclass(frozen=True, slots=True)
class _Played:
    """One policy's evaluation."""

    adapter: str
    """Its adapter folder ("": none, the start)."""
    step: int | None
    """The update step of the checkpoint the adapter is from, with ``--checkpoints``."""
    results: Results
    unchanged: bool
    """Its adapter changes nothing (``Adapter.changes_nothing``)."""


def eval_command(args: argparse.Namespace) -> int:
    if problem := unknown_suite(args.suite):
        return fail(problem, EXIT_USAGE)
    if args.against_start and not args.adapter:
        return fail("--against-start compares an --adapter with its model: name the adapter", EXIT_USAGE)
    if args.checkpoints and not args.adapter:
        return fail("--checkpoints evaluates a run's checkpoints: name the run with --adapter", EXIT_USAGE)
    if args.episodes is not None and args.episodes > (tasks := len(split_tasks(args.suite, args.split))):
        # played again, a task's plays would be counted as other tasks': an error too small, greedy ones alike
        return fail(
            f"--episodes {args.episodes} is more than the {args.suite} {args.split} split's {tasks} tasks:"
            " eval plays each task once at most (leave --episodes out for all of them; --samples K plays"
            " each K times, for pass@k)",
            EXIT_USAGE,
        )
    if args.samples > MOST_SAMPLES:
        return fail(
            f"--samples {args.samples} is more than eval plays (at most {MOST_SAMPLES:,} plays of each task)",
            EXIT_USAGE,
        )
    if args.temperature == 0 and args.samples > 1:
        return fail(
            f"--samples {args.samples} with --temperature 0 would play each task's greedy answer"
            f" {args.samples} times over: give --temperature above 0, or leave it out (greedy once, then"
            f" {args.samples} plays at temperature 1)",
            EXIT_USAGE,
        )
    if args.checkpoints and args.samples > 1:
        return fail(
            "--checkpoints plays each task once per checkpoint and --samples K plays it K times with one "
            "policy: give one of them",
            EXIT_USAGE,
        )
    adapters: list[tuple[int | None, str]] = [(None, args.adapter)]
    if args.checkpoints:
        try:
            adapters = [*_checkpoint_adapters(args.adapter, args.checkpoints)]
        except ValueError as exc:
            return fail(str(exc), EXIT_USAGE)
    if problem := _damaged_checkpoint([folder for _, folder in adapters]):
        return fail(problem, EXIT_FAILED)
    from transformers.utils.logging import disable_progress_bar

    from distrl.errors import PolicyError
    from distrl.local.evaluation import Evaluation

    for _, folder in adapters:
        rerun = functools.partial(_eval_command_line, adapter=folder)
        if folder and (problem := adapter_problem(folder, args.model, rerun)):
            return fail(problem, EXIT_USAGE)

    disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers
    try:
        # the adapters' plays first: one that fails to load is found before the start's plays
        progress = _Progress()
        policy = _load(args, adapters[0][1])
        played = []
        for step, folder in adapters:
            if folder != adapters[0][1]:
                policy.adapter.load_folder(folder)  # a later checkpoint: the base model stays loaded
            played.append(_play(args, policy, folder, step, progress))
        start = []
        if args.against_start:
            start = _play(args, _load(args, ""), "", None, progress, who="start, ").results
    except PolicyError as exc:
        return fail(str(exc), EXIT_USAGE)
    results = [
        (temperature, Evaluation.pooled([one.results[index][1] for one in played]))
        for index, (temperature, _) in enumerate(played[0].results)
    ]
    if args.json:
        print(json.dumps(_eval_json(args, results, start, played)))
    else:
        _report(args, results, start, played)
    return 0


def _eval_command_line(model: str, adapter: str) -> str:
    return f"python -m distrl eval {shlex.quote(model)} --adapter {shlex.quote(adapter)}"


def _checkpoint_adapters(adapter: str, count: int) -> list[tuple[int, str]]:
    """The adapters of the last ``count`` checkpoints of a run up to the one ``adapter`` belongs to (as
    ``adapter_folder`` resolved it: ``<checkpoints>/step-NNNNNNNNN/adapter``), oldest first, each with its
    update step. ``ValueError`` saying why when ``adapter`` is no checkpoint's or fewer are on disk."""
    from distrl.learner.checkpoint import Checkpoints  # torch: only where it is asked for

    folder = Path(adapter)
    checkpoint, root = folder.parent, folder.parent.parent
    found = Checkpoints(root).list() if folder.name == "adapter" else []
    if checkpoint not in found:
        raise ValueError(
            f"--checkpoints needs --adapter to name a run, its checkpoints folder or one of its checkpoints;"
            f" {adapter} is an adapter of no run's checkpoints"
        )
    kept = found[: found.index(checkpoint) + 1]
    if len(kept) < count:
        names = ", ".join(path.name for path in kept)
        raise ValueError(
            f"{root} holds {len(kept)} checkpoint{'s' if len(kept) != 1 else ''} up to {checkpoint.name}"
            f" ({names}), not the {count} --checkpoints asks for (a run keeps [run] keep_checkpoints of them)"
        )
    return [(int(path.name.removeprefix("step-")), str(path / "adapter")) for path in kept[-count:]]


def _damaged_checkpoint(adapters: list[str]) -> str:
    """Why the first of ``adapters`` that is a checkpoint's (``<checkpoints>/step-NNNNNNNNN/adapter``)
    cannot be trusted: its checkpoint fails its manifest (``Checkpoints.verify``, as ``run --resume``
    checks it), or it never completed (a ``.tmp-*`` or ``step-*`` folder without its manifest); "" when
    none does. An adapter folder of no checkpoint has no manifest to check."""
    from distrl.errors import CheckpointError
    from distrl.learner.checkpoint import MANIFEST, Checkpoints, unsealed  # torch: only where asked for

    for adapter in adapters:
        checkpoint = Path(adapter).parent
        if not adapter or Path(adapter).name != "adapter":
            continue
        if not (checkpoint / MANIFEST).is_file():
            if unsealed(checkpoint):  # a checkpoint's folder whose save never reached its seal
                return (
                    f"cannot evaluate the checkpoint {checkpoint}: it was never completed (no {MANIFEST}: its"
                    " save was cut short); evaluate another, or the run's folder for its newest"
                )
            continue
        try:
            Checkpoints(checkpoint.parent).verify(checkpoint)
        except CheckpointError as exc:
            return f"cannot evaluate the checkpoint {checkpoint}: {exc.message}"
    return ""


def _decodings(args: argparse.Namespace) -> list[tuple[float, int]]:
    """Each decoding's temperature and plays of each task: greedy once and temperature 1 (the paper's), or
    ``--temperature`` alone."""
    if args.temperature is None:
        return [(0.0, 1), (1.0, args.samples)]
    return [(args.temperature, args.samples)]


def _load(args: argparse.Namespace, adapter: str) -> Policy:
    """The policy ``MODEL`` with ``adapter`` (none: "")."""
    from distrl.config import PolicySettings
    from distrl.policy import Policy

    settings = PolicySettings(model=args.model, adapter=adapter, temperature=_decodings(args)[-1][0])
    return Policy.load(settings, seed=args.seed)


def _play(
    args: argparse.Namespace,
    policy: Policy,
    adapter: str,
    step: int | None,
    progress: _Progress,
    who: str = "",
) -> _Played:
    """Every decoding of ``policy`` (``MODEL`` with ``adapter``, none: ""), on the same tasks and seeds;
    ``who`` (or the checkpoint's ``step``) names it in the progress lines."""
    from distrl.local.play import evaluate

    decodings = _decodings(args)
    who = who if step is None else f"step {step}, "
    results = []
    for temperature, samples in decodings:
        result = evaluate(
            policy,
            args.suite,
            args.split,
            episodes=args.episodes,
            seed=args.seed,
            temperature=temperature,
            samples=samples,
            on_episode=progress(who + _decoding(temperature)),
        )
        progress.done()
        results.append((temperature, result))
    return _Played(adapter, step, results, bool(adapter) and policy.adapter.changes_nothing)


class _Progress:
    """Progress lines on stderr for a command's evaluations, redrawn each second on a terminal and printed
    every 15 s elsewhere (a log)."""

    def __init__(self) -> None:
        self._live = sys.stderr.isatty()
        self._shown = 0.0

    def __call__(self, name: str) -> Callable[[int, int, int], None]:
        """An evaluation's ``on_episode``, its lines naming it ``name``."""

        def show(done: int, total: int, won: int) -> None:
            now = time.monotonic()
            if done < total and now - self._shown < (1.0 if self._live else 15.0):
                return
            self._shown = now
            line = f"eval: {done}/{total} episodes, {counted(won, 'success', 'successes')} so far ({name})"
            end = "" if self._live else "\n"
            print(f"\r\x1b[2K{line}" if self._live else line, end=end, file=sys.stderr, flush=True)

        return show

    def done(self) -> None:
        """An evaluation ended: a terminal's line stays."""
        if self._live:
            print(file=sys.stderr)


def _report(args: argparse.Namespace, results: Results, start: Results, played: list[_Played]) -> None:
    """What ``eval`` prints without ``--json``."""
    pooled = len(played) > 1
    if args.per_task:
        for temperature, result in results:
            say(f"{_decoding(temperature)}:")
            for index, outcome in enumerate(result.outcomes):
                verdict = "ok  " if outcome.success else "fail"
                play = f" play {index % result.samples + 1}" if result.samples > 1 else ""
                if pooled:
                    play = f" step {played[index % len(played)].step}"
                say(f"  {verdict} {outcome.task.id:<40}{play} {outcome.steps:2d} steps  {outcome.task.goal}")
    tasks = len(results[0][1].per_task())
    say(f"{args.suite} {args.split}, {tasks} tasks (± one standard error)")
    if pooled:
        for one in played:
            each = "   ".join(
                f"{_decoding(t)} {r.success_rate:.1%} ± {r.standard_error:.1%}" for t, r in one.results
            )
            say(f"step {one.step:<10} {each}")
        steps = ", ".join(str(one.step) for one in played)
        say(f"mean of the {len(played)} checkpoints (steps {steps}), each task's success its mean over them:")
        for temperature, result in results:
            rate, error = result.pass_at_k(1)
            say(
                f"{_decoding(temperature):<15} success {rate:.1%} ± {error:.1%} over tasks,"
                f" in {result.wall_s:.0f} s"
            )
    else:
        for temperature, result in results:
            say(_eval_lines(_decoding(temperature), result))
    if len(results) == 2:
        failed, reached = results[0][1].failures_solved_by(results[1][1])
        sampled = results[1][1].samples
        where = f" in every one of the {len(played)} checkpoints" if pooled else ""
        plays = f"{sampled} plays" if sampled > 1 else "one play"
        plays = f"the checkpoints' {plays}" if pooled else plays
        say(
            f"greedy fails {failed} of {tasks} tasks{where}; sampling at temperature 1 solves {reached} of "
            f"those in {plays} (what RL sampling at 1 can learn from)"
        )
    if unchanged := [one for one in played if one.unchanged]:
        which = (
            f"the adapter of step {', '.join(str(one.step) for one in unchanged)}"
            if pooled
            else "the adapter"
        )
        say(
            f"{which} changes nothing: its LoRA B matrices are all zero, as initialised (a run saves such a "
            "checkpoint before its first actor update, in the critic's warm-up)"
        )
    if start:
        say(f"against the start ({args.model} without the adapter), same tasks and seeds, paired by task:")
        for (temperature, before), (_, after) in zip(start, results, strict=True):
            difference, error = after.minus(before)
            gained, lost = after.changes_from(before)
            say(
                f"{_decoding(temperature):<15} start {before.success_rate:.1%} ± {before.standard_error:.1%}"
                f"   difference {100 * difference:+.1f} ± {100 * error:.1f} points"
                f"   (solves {gained} tasks the start never does, never solves {lost} it does)"
            )


def _decoding(temperature: float) -> str:
    return "greedy" if temperature == 0 else f"temperature {temperature:g}"


def _eval_lines(name: str, result: Evaluation) -> str:
    """One decoding's success rate, and with several plays of each task its pass@k and the tasks solved at
    least once per template."""
    won = sum(outcome.success for outcome in result.outcomes)
    plays = f", {result.samples} plays of each task" if result.samples > 1 else ""
    lines = [
        f"{name:<15} success {result.success_rate:.1%} ± {result.standard_error:.1%} "
        f"({won}/{len(result.outcomes)}{plays}) in {result.wall_s:.0f} s"
    ]
    if result.samples > 1:
        passes = [(k, *result.pass_at_k(k)) for k in range(1, result.samples + 1)]
        lines.append(" " * 16 + "   ".join(f"pass@{k} {rate:.1%} ± {se:.1%}" for k, rate, se in passes))
        lines.append(" " * 16 + f"solved at least once in {result.samples} plays, per template:")
        solved = sorted(result.solved_by_template().items())
        width = max(len(template) for template, _ in solved)
        lines += [f"{'':18}{template:<{width}}  {won}/{total}" for template, (won, total) in solved]
    return "\n".join(lines)


def _eval_json(
    args: argparse.Namespace, results: Results, start: Results, played: list[_Played]
) -> dict[str, object]:
    """The figures of ``eval --json``: the greedy and the sampled decoding (None where not run); with
    ``--against-start`` the start's figures too, and the differences paired by task; with ``--checkpoints``
    each checkpoint's figures, the top-level ones being their mean."""
    pooled = len(played) > 1
    out = _figures(args, results, played)
    out["adapter_changes_nothing"] = any(one.unchanged for one in played)
    if pooled:
        out["checkpoints"] = [{"step": one.step, **_figures(args, one.results, [one])} for one in played]
    if len(results) == 2:
        failed, reached = results[0][1].failures_solved_by(results[1][1])
        out["greedy_failures"] = {"tasks": failed, "solved_sampled": reached}
    if start:
        before = _figures(args, start, [])
        out["start"] = {"greedy": before["greedy"], "sampled": before["sampled"]}
        difference: dict[str, object] = {"greedy": None, "sampled": None}
        for (temperature, was), (_, now) in zip(start, results, strict=True):
            mean, error = now.minus(was)
            gained, lost = now.changes_from(was)
            difference["greedy" if temperature == 0 else "sampled"] = {
                "mean": mean,
                "standard_error": error,
                "gained": gained,
                "lost": lost,
            }
        out["difference"] = difference
    return out


def _figures(args: argparse.Namespace, results: Results, played: list[_Played]) -> dict[str, object]:
    """The figures of the policies ``played`` (one; several: their mean over checkpoints; none: the start),
    as ``eval --json`` prints them. A mean over checkpoints gives its success rate's error over tasks
    (``pass_at_k(1)``), since the plays of one task by several checkpoints are not independent."""
    pooled = len(played) > 1
    out: dict[str, object] = {
        "model": args.model,
        "adapter": played[-1].adapter if played else "",
        "suite": args.suite,
        "split": args.split,
        "seed": args.seed,
        "tasks": len(results[0][1].per_task()),
        "greedy": None,
        "sampled": None,
    }
    for temperature, result in results:
        plays = result.samples // max(len(played), 1)  # of each task by one policy
        rate, error = result.pass_at_k(1) if pooled else (result.success_rate, result.standard_error)
        figures: dict[str, object] = {
            "temperature": temperature,
            "samples": plays,
            "episodes": len(result.outcomes),
            "successes": sum(outcome.success for outcome in result.outcomes),
            "success_rate": rate,
            "standard_error": error,
            "pass_at_k": {
                str(k): dict(zip(("rate", "standard_error"), result.pass_at_k(k), strict=True))
                for k in range(1, plays + 1)
            },
            "solved_by_template": {
                template: {"solved": solved, "tasks": total}
                for template, (solved, total) in sorted(result.solved_by_template().items())
            },
            "wall_s": round(result.wall_s, 3),
        }
        if args.per_task:
            figures["outcomes"] = [
                {
                    "task": outcome.task.id,
                    "play": index % result.samples + 1,
                    "success": outcome.success,
                    "steps": outcome.steps,
                }
                | ({"step": played[index % len(played)].step} if pooled else {})
                for index, outcome in enumerate(result.outcomes)
            ]
        out["greedy" if temperature == 0 else "sampled"] = figures
    return out
