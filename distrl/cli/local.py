"""The commands that work on this machine alone: action, worker, sim, pretrain, judge-eval, view, export
(``eval`` is in ``distrl.cli.evaluate``)."""

from __future__ import annotations

import argparse
import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from distrl.actions import format_action, parse_action, to_gesture
from distrl.config import load_inventory, not_a_folder
from distrl.errors import ConfigError

if TYPE_CHECKING:
    from distrl.local.judge_eval import Calibration
from distrl.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    counted,
    fail,
    fail_file,
    run_async,
    say,
    unknown_suite,
)
from distrl.records import InvalidAction


def action_command(args: argparse.Namespace) -> int:
    width, height = args.screen
    parsed = parse_action(args.text)
    if isinstance(parsed, InvalidAction):
        return fail(f"not a valid action: {parsed.reason}", EXIT_FAILED)
    say(f"action:  {format_action(parsed)}")
    say(f"gesture: {to_gesture(parsed, width, height)} on a {width}x{height} screen")
    return 0


def worker_command(args: argparse.Namespace) -> int:
    from distrl.worker import main as worker_main

    worker_main(args.host, handshake_s=args.handshake_timeout, silence_s=args.silence_timeout)


def sim_command(args: argparse.Namespace) -> int:
    import socket

    from distrl.sim.console import read_token
    from distrl.sim.latency import LatencyProfile
    from distrl.sim.phone import PhoneConfig
    from distrl.sim.server import ServedPhone, serve_phones

    width, height = args.size
    try:
        config = PhoneConfig(width=width, height=height, seed=args.seed)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if args.snapshot and args.snapshots is None:
        return fail(
            f"--snapshot {args.snapshot} names a snapshot of --snapshots DIR: give the folder", EXIT_USAGE
        )
    if args.snapshots is not None and (problem := not_a_folder(args.snapshots.expanduser())):
        return fail(f"--snapshots: {problem}", EXIT_USAGE)
    try:  # as each console will, before any phone starts: a token file that cannot be read is one line
        read_token(Path(args.token_file))
    except OSError as exc:
        return fail(f"--token-file {args.token_file}: {exc.strerror or exc}", EXIT_USAGE)
    except UnicodeDecodeError:
        return fail(f"--token-file {args.token_file} is not UTF-8 text", EXIT_USAGE)
    adb_port = args.adb_server_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
    register: int | None = None
    if not args.no_register:
        try:
            socket.create_connection(("127.0.0.1", adb_port), timeout=2).close()
            register = adb_port
        except OSError:
            say(
                f"no adb server on port {adb_port}; one started later finds phones whose adbd port is in "
                "5555-5585 by itself (others: adb connect 127.0.0.1:PORT)"
            )
    profile = LatencyProfile.calibrated() if args.latency == "calibrated" else LatencyProfile.off()

    class Report:
        """Where ``serve_phones`` reports readiness: one line per phone."""

        def started(self, value: list[ServedPhone] | None = None) -> None:
            for item in value or []:
                say(f"{item.serial}  adbd 127.0.0.1:{item.adb_port}  console {item.console_port}")

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
        snapshot_dir=args.snapshots and args.snapshots.expanduser(),
        read_only=args.read_only,
        start_snapshot=args.snapshot,
        task_status=Report(),
    )
    try:
        run_async(serve)
    except KeyboardInterrupt:
        say("stopped")
    except OSError as exc:
        return fail(f"cannot serve the phones: {exc.strerror or exc}", EXIT_FAILED)
    except ValueError as exc:  # serve_phones checks the ports before it starts anything
        return fail(str(exc), EXIT_USAGE)
    return 0


def pretrain_command(args: argparse.Namespace) -> int:
    from transformers.utils.logging import disable_progress_bar

    from distrl.config import BUILT_IN_BASES, cannot_create
    from distrl.errors import PolicyError
    from distrl.local.pretrain import Progress, pretrain
    from distrl.policy.loading import model_folder

    disable_progress_bar()  # type: ignore[no-untyped-call]  # our own progress lines say more

    suites = args.suite or ["general"]
    for name in suites:
        if problem := unknown_suite(name):
            return fail(problem, EXIT_USAGE)
    if os.path.lexists(args.out):
        return fail(f"{args.out!r} already exists; choose another output folder", EXIT_USAGE)
    if problem := cannot_create(args.out):  # found now, not once training has had its budget
        return fail(problem, EXIT_USAGE)

    def show(p: Progress) -> None:
        say(
            f"step {p.step:5d}  loss {p.loss:.4f}  {p.examples_per_s:5.1f} examples/s  lr {p.lr:.2e}  "
            f"{p.elapsed_s:5.0f} s"
        )

    if args.start and args.start not in BUILT_IN_BASES:  # a folder: refused before anything starts
        try:
            model_folder(args.start)
        except PolicyError as exc:
            return fail(str(exc), EXIT_USAGE)
    what = args.start or "a fresh tiny"
    say(f"pretraining {what} on {', '.join(suites)} for up to {args.minutes:g} min -> {args.out}")
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
        return fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return fail(f"cannot write {args.out!r}: {exc.strerror or exc}", EXIT_FAILED)
    say(
        f"saved {report.out} after {counted(report.steps, 'step')} on"
        f" {counted(report.demonstrations, 'demonstration step')} "
        f"({report.wall_s:.0f} s, final loss {report.final_loss:.4f})"
    )
    return 0


def judge_eval_command(args: argparse.Namespace) -> int:
    from distrl.config import EXPERT
    from distrl.fleet.scoring import build_judge
    from distrl.local.judge_eval import calibrate, calibration_episodes
    from distrl.policy import Policy

    inventory = load_inventory(args.inventory)
    suite = args.suite or inventory.run.suite
    if problem := unknown_suite(suite):
        return fail(problem, EXIT_USAGE)
    if not inventory.judge.configured:
        raise ConfigError.at(
            "judge", "judge-eval needs a [judge] (base_url and model)", inventory.source or None
        )
    judge = build_judge(inventory, cached=False)  # each verdict asked now: the judge measured, not its cache
    policy = None if inventory.policy.model == EXPERT else Policy.load(inventory.policy, seed=args.seed)
    say(f"playing {counted(args.episodes, 'episode')} of {suite} {args.split} on simulated phones ...")
    episodes = calibration_episodes(
        policy, suite=suite, split=args.split, episodes=args.episodes, seed=args.seed
    )
    say(f"asking {inventory.judge.model} at {inventory.judge.base_url} about each ...")

    async def judged() -> Calibration:
        async with judge:
            return await calibrate(judge, episodes)

    result = run_async(judged)
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        say(result.report())
    if not result.judged:
        return fail(
            f"the judge at {inventory.judge.base_url} gave no verdict for any of the"
            f" {counted(result.unscored, 'episode')}: {result.why_unscored or 'no reason given'}",
            EXIT_FAILED,
        )
    return 0


def view_command(args: argparse.Namespace) -> int:
    from distrl.episodes.view import write_viewer

    try:
        page = write_viewer(args.folder, strict=args.strict)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return fail_file(exc)
    say(f"wrote {page}: open it in a browser (file://{page.resolve()})")
    return 0


def export_command(args: argparse.Namespace) -> int:
    from distrl.episodes.export import write_metadata

    try:
        target, rows = write_metadata(args.folder, strict=args.strict)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return fail_file(exc)
    say(f"wrote {target}: {counted(rows, 'step')}; load them with")
    say(f'  datasets.load_dataset("imagefolder", data_dir="{args.folder}", split="train")')
    return 0


def save_model_command(args: argparse.Namespace) -> int:
    from transformers.utils.logging import disable_progress_bar

    from distrl.config import cannot_create
    from distrl.policy.tiny import build_pretrained, build_tiny

    disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers

    if args.seed is not None and args.model != "tiny":
        return fail(
            f"--seed seeds a fresh tiny's weights; {args.model}'s are trained and always the same:"
            " leave it out",
            EXIT_USAGE,
        )
    target = Path(args.out).expanduser()  # as the inventory's policy.model reads it
    if problem := cannot_create(target):
        return fail(problem, EXIT_USAGE)
    if target.is_dir() and any(target.iterdir()):
        return fail(f"{target} is not empty", EXIT_USAGE)
    model, prompter = (
        build_tiny(seed=args.seed or 0) if args.model == "tiny" else build_pretrained(args.model)
    )
    try:
        target.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(target))
        prompter.save_pretrained(target)
    except OSError as exc:  # a folder the checks passed that the system will not make (/proc, say)
        return fail_file(exc, target)
    say(
        f"wrote {args.model} to {target}: a Qwen2-VL model folder that transformers loads"
        f" (AutoModelForImageTextToText.from_pretrained), and [policy] model = {str(target)!r} runs"
    )
    return 0
