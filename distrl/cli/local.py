"""The commands that work on this machine alone: action, worker, sim, pretrain, eval, judge-eval, view,
export."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from distrl.actions import format_action, parse_action, to_gesture
from distrl.config import load_inventory
from distrl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from distrl.local.evaluation import Evaluation
    from distrl.local.judge_eval import Calibration
from distrl.cli.common import EXIT_FAILED, EXIT_USAGE, _fail, _say, _unknown_suite, run_async
from distrl.records import InvalidAction


def _action(args: argparse.Namespace) -> int:
    width, height = args.screen
    parsed = parse_action(args.text)
    if isinstance(parsed, InvalidAction):
        return _fail(f"not a valid action: {parsed.reason}", EXIT_FAILED)
    _say(f"action:  {format_action(parsed)}")
    _say(f"gesture: {to_gesture(parsed, width, height)} on a {width}x{height} screen")
    return 0


def _worker(args: argparse.Namespace) -> int:
    from distrl.worker import main as worker_main

    worker_main(args.host, handshake_s=args.handshake_timeout, silence_s=args.silence_timeout)


def _sim(args: argparse.Namespace) -> int:
    import socket

    from distrl.sim.latency import LatencyProfile
    from distrl.sim.phone import PhoneConfig
    from distrl.sim.server import ServedPhone, serve_phones

    width, height = args.size
    try:
        config = PhoneConfig(width=width, height=height, seed=args.seed)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    adb_port = args.adb_server_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
    register: int | None = None
    if not args.no_register:
        try:
            socket.create_connection(("127.0.0.1", adb_port), timeout=2).close()
            register = adb_port
        except OSError:
            _say(
                f"no adb server on port {adb_port}; one started later finds phones whose adbd port is in "
                "5555-5585 by itself (others: adb connect 127.0.0.1:PORT)"
            )
    profile = LatencyProfile.calibrated() if args.latency == "calibrated" else LatencyProfile.off()

    class Report:
        """Where ``serve_phones`` reports readiness: one line per phone."""

        def started(self, value: list[ServedPhone] | None = None) -> None:
            for item in value or []:
                _say(f"{item.serial}  adbd 127.0.0.1:{item.adb_port}  console {item.console_port}")

    serve = functools.partial(
        serve_phones,
        args.devices,
        base_port=args.base_port,
        phone_config=config,
        latency=profile,
        time_scale=args.time_scale,
        faults=args.faults,
        token_file=Path(args.token_file),
        register_with=register,
        boot_s=args.boot_s,
        snapshot_dir=args.snapshots,
        read_only=args.read_only,
        start_snapshot=args.snapshot,
        task_status=Report(),
    )
    try:
        run_async(serve)
    except KeyboardInterrupt:
        _say("stopped")
    except OSError as exc:
        return _fail(f"cannot serve the phones: {exc.strerror or exc}", EXIT_FAILED)
    except ValueError as exc:  # serve_phones checks the ports before it starts anything
        return _fail(str(exc), EXIT_USAGE)
    return 0


def _pretrain(args: argparse.Namespace) -> int:
    from transformers.utils.logging import disable_progress_bar

    from distrl.config import BUILT_IN_BASES
    from distrl.errors import PolicyError
    from distrl.local.pretrain import Progress, pretrain
    from distrl.policy.loading import model_folder

    disable_progress_bar()  # type: ignore[no-untyped-call]  # our own progress lines say more

    suites = args.suite or ["general"]
    for name in suites:
        if problem := _unknown_suite(name):
            return _fail(problem, EXIT_USAGE)
    if os.path.lexists(args.out):
        return _fail(f"{args.out!r} already exists; choose another output folder", EXIT_USAGE)

    def show(p: Progress) -> None:
        _say(
            f"step {p.step:5d}  loss {p.loss:.4f}  {p.examples_per_s:5.1f} examples/s  lr {p.lr:.2e}  "
            f"{p.elapsed_s:5.0f} s"
        )

    if args.start and args.start not in BUILT_IN_BASES:  # a folder: refused before anything starts
        try:
            model_folder(args.start)
        except PolicyError as exc:
            return _fail(str(exc), EXIT_USAGE)
    what = args.start or "a fresh tiny"
    _say(f"pretraining {what} on {', '.join(suites)} for up to {args.minutes:g} min -> {args.out}")
    try:
        report = pretrain(
            args.out,
            suites=tuple(suites),
            episodes=args.episodes,
            mistake_rate=args.mistake_rate,
            randomise=args.randomise,
            drills=args.drills,
            contrasts=args.contrasts,
            lr=args.lr,
            seed=args.seed,
            minutes=args.minutes,
            max_steps=args.steps,
            on_progress=show,
            progress_every=25,
            start=args.start,
        )
    except PolicyError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot write {args.out!r}: {exc.strerror or exc}", EXIT_FAILED)
    _say(
        f"saved {report.out} after {report.steps} steps on {report.demonstrations} demonstration steps "
        f"({report.wall_s:.0f} s, final loss {report.final_loss:.4f})"
    )
    return 0


def _eval(args: argparse.Namespace) -> int:
    if problem := _unknown_suite(args.suite):
        return _fail(problem, EXIT_USAGE)
    from transformers.utils.logging import disable_progress_bar

    from distrl.config import PolicySettings
    from distrl.errors import PolicyError
    from distrl.local.play import evaluate
    from distrl.policy import Policy

    disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers

    # (temperature, plays of each task): greedy once and temperature 1 (the paper's), or --temperature alone
    decodings = (
        [(0.0, 1), (1.0, args.samples)] if args.temperature is None else [(args.temperature, args.samples)]
    )
    if args.against_start and not args.adapter:
        return _fail("--against-start compares an --adapter with its model: name the adapter", EXIT_USAGE)
    live = sys.stderr.isatty()
    shown = [time.monotonic()]

    def progress(name: str) -> Callable[[int, int, int], None]:
        def show(done: int, total: int, won: int) -> None:
            now = time.monotonic()
            if done < total and now - shown[0] < (1.0 if live else 15.0):
                return
            shown[0] = now
            line = f"eval: {done}/{total} episodes, {won} successes so far ({name})"
            print(f"\r\x1b[2K{line}" if live else line, end="" if live else "\n", file=sys.stderr, flush=True)

        return show

    def run(adapter: str, who: str) -> list[tuple[float, Evaluation]]:
        """Every decoding of the policy ``MODEL`` with ``adapter`` (none: ""), on the same tasks and seeds."""
        settings = PolicySettings(model=args.model, adapter=adapter, temperature=decodings[-1][0])
        policy = Policy.load(settings, seed=args.seed)
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
            if live:
                print(file=sys.stderr)
            results.append((temperature, result))
        return results

    try:
        results = run(args.adapter, "")  # first: a wrong path is found before the start's plays
        start = run("", "start, ") if args.against_start else []
    except PolicyError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if args.json:
        print(json.dumps(_eval_json(args, results, start)))
        return 0
    if args.per_task:
        for temperature, result in results:
            _say(f"{_decoding(temperature)}:")
            for index, outcome in enumerate(result.outcomes):
                verdict = "ok  " if outcome.success else "fail"
                play = f" play {index % result.samples + 1}" if result.samples > 1 else ""
                _say(f"  {verdict} {outcome.task.id:<40}{play} {outcome.steps:2d} steps  {outcome.task.goal}")
    tasks = len(results[0][1].per_task())
    _say(f"{args.suite} {args.split}, {tasks} tasks (± one standard error)")
    for temperature, result in results:
        _say(_eval_lines(_decoding(temperature), result))
    if len(results) == 2:
        failed, reached = results[0][1].failures_solved_by(results[1][1])
        plays = f"{results[1][1].samples} plays" if results[1][1].samples > 1 else "one play"
        _say(
            f"greedy fails {failed} of {tasks} tasks; sampling at temperature 1 solves {reached} of those in "
            f"{plays} (what RL sampling at 1 can learn from)"
        )
    if start:
        _say(f"against the start ({args.model} without the adapter), same tasks and seeds, paired by task:")
        for (temperature, before), (_, after) in zip(start, results, strict=True):
            difference, error = after.minus(before)
            gained, lost = after.changes_from(before)
            _say(
                f"{_decoding(temperature):<15} start {before.success_rate:.1%} ± {before.standard_error:.1%}"
                f"   difference {100 * difference:+.1f} ± {100 * error:.1f} points"
                f"   (solves {gained} tasks the start never does, never solves {lost} it does)"
            )
    return 0


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
    args: argparse.Namespace,
    results: list[tuple[float, Evaluation]],
    start: list[tuple[float, Evaluation]],
) -> dict[str, object]:
    """The figures of ``eval --json``: the greedy and the sampled decoding (None where not run); with
    ``--against-start`` the start's figures too, and the differences paired by task."""
    out = _figures(args, results)
    if len(results) == 2:
        failed, reached = results[0][1].failures_solved_by(results[1][1])
        out["greedy_failures"] = {"tasks": failed, "solved_sampled": reached}
    if start:
        before = _figures(args, start)
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


def _figures(args: argparse.Namespace, results: list[tuple[float, Evaluation]]) -> dict[str, object]:
    """One policy's figures, as ``eval --json`` prints them."""
    out: dict[str, object] = {
        "model": args.model,
        "adapter": args.adapter,
        "suite": args.suite,
        "split": args.split,
        "seed": args.seed,
        "tasks": len(results[0][1].per_task()),
        "greedy": None,
        "sampled": None,
    }
    for temperature, result in results:
        figures: dict[str, object] = {
            "temperature": temperature,
            "samples": result.samples,
            "episodes": len(result.outcomes),
            "successes": sum(outcome.success for outcome in result.outcomes),
            "success_rate": result.success_rate,
            "standard_error": result.standard_error,
            "pass_at_k": {
                str(k): dict(zip(("rate", "standard_error"), result.pass_at_k(k), strict=True))
                for k in range(1, result.samples + 1)
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
                for index, outcome in enumerate(result.outcomes)
            ]
        out["greedy" if temperature == 0 else "sampled"] = figures
    return out


def _judge_eval(args: argparse.Namespace) -> int:
    from distrl.config import EXPERT
    from distrl.fleet.scoring import build_judge
    from distrl.local.judge_eval import calibrate, calibration_episodes
    from distrl.policy import Policy

    inventory = load_inventory(args.inventory)
    suite = args.suite or inventory.run.suite
    if problem := _unknown_suite(suite):
        return _fail(problem, EXIT_USAGE)
    if not inventory.judge.configured:
        raise ConfigError.at(
            "judge", "judge-eval needs a [judge] (base_url and model)", inventory.source or None
        )
    judge = build_judge(inventory)
    policy = None if inventory.policy.model == EXPERT else Policy.load(inventory.policy, seed=args.seed)
    _say(f"playing {args.episodes} episodes of {suite} {args.split} on simulated phones ...")
    episodes = calibration_episodes(
        policy, suite=suite, split=args.split, episodes=args.episodes, seed=args.seed
    )
    _say(f"asking {inventory.judge.model} at {inventory.judge.base_url} about each ...")

    async def judged() -> Calibration:
        async with judge:
            return await calibrate(judge, episodes)

    result = run_async(judged)
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        _say(result.report())
    if not result.judged:
        return _fail(
            f"the judge at {inventory.judge.base_url} gave no verdict for any of the {result.unscored}"
            f" episode(s): {result.why_unscored or 'no reason given'}",
            EXIT_FAILED,
        )
    return 0


def _view(args: argparse.Namespace) -> int:
    from distrl.episodes.view import write_viewer

    try:
        page = write_viewer(args.folder, strict=args.strict)
    except (OSError, ValueError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    _say(f"wrote {page}: open it in a browser (file://{page.resolve()})")
    return 0


def _export(args: argparse.Namespace) -> int:
    from distrl.episodes.export import write_metadata

    try:
        target, rows = write_metadata(args.folder, strict=args.strict)
    except (OSError, ValueError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    _say(f"wrote {target}: {rows} steps; load them with")
    _say(f'  datasets.load_dataset("imagefolder", data_dir="{args.folder}", split="train")')
    return 0


def _save_model(args: argparse.Namespace) -> int:
    from transformers.utils.logging import disable_progress_bar

    from distrl.policy.tiny import build_tiny, build_tiny_bc

    disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers

    target = Path(args.out)
    if target.exists() and any(target.iterdir()):
        return _fail(f"{target} is not empty", EXIT_USAGE)
    model, prompter = build_tiny_bc() if args.model == "tiny-bc" else build_tiny(seed=args.seed)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(target))
    prompter.save_pretrained(target)
    _say(
        f"wrote {args.model} to {target}: a Qwen2-VL model folder that transformers loads"
        f" (AutoModelForImageTextToText.from_pretrained), and [policy] model = {str(target)!r} runs"
    )
    return 0
