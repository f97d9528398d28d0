"""``python -m distrl``: the command line.

A user's mistake (bad inventory, unreachable host, bad argument) ends in one sentence on stderr and a
non-zero exit status: 2 for usage and inventory errors, 1 when something failed while running.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import json
import logging
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from distrl import __version__
from distrl.actions import format_action, parse_action, to_gesture
from distrl.config import BUILT_IN_MODELS, Inventory, load_inventory
from distrl.errors import ConfigError, DistrlError, TaskFileError

if TYPE_CHECKING:
    from distrl.judge_eval import Calibration
from distrl.records import InvalidAction
from distrl.sim.latency import FaultRates

EXIT_FAILED = 1
EXIT_USAGE = 2

DESCRIPTION = """\
distrl trains phone-control agents with asynchronous distributed reinforcement learning.

Start with:  python -m distrl init         (writes hosts.toml, every key documented)
             python -m distrl run hosts.toml
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    _logging(args.verbose)
    try:
        status: int = args.command(args)
    except (ConfigError, TaskFileError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    except DistrlError as exc:
        return _fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m distrl", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"distrl {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output (-vv: debug)"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    run = commands.add_parser(
        "run",
        parents=[common],
        help="train: start the fleet, collect episodes and train the policy",
        description="Start a worker on every host of the inventory, run episodes on every device and train "
        "the policy with the inventory's algorithm until run.max_trajectories or run.duration_s (Ctrl-C "
        "stops it cleanly, with a checkpoint). Progress goes to stderr; checkpoints and TensorBoard logs to "
        "<run.output_dir>/<run.name>.",
    )
    run.add_argument("inventory", help="the hosts file, e.g. hosts.example.toml")
    start = run.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    start.add_argument(
        "--new", action="store_true", help="start over where a run is: move the earlier run's folder aside"
    )
    run.set_defaults(command=_run)

    probe = commands.add_parser(
        "probe",
        parents=[common],
        help="start every host's worker, shake hands, time heartbeats, stop",
        description="Start a worker on every host of the inventory, shake hands with each, time heartbeat "
        "round trips and shut the workers down: the cheapest end-to-end check of an inventory.",
    )
    probe.add_argument("inventory", help="the hosts file, e.g. hosts.example.toml")
    probe.add_argument(
        "--heartbeats",
        type=_positive_int,
        default=5,
        metavar="N",
        help="round trips to time per host (default 5)",
    )
    probe.set_defaults(command=_probe)

    check = commands.add_parser(
        "check",
        parents=[common],
        help="check an inventory without running anything",
        description="Load and check the inventory, then print its hosts and devices.",
    )
    check.add_argument("inventory", help="the hosts file")
    check.set_defaults(command=_check)

    action = commands.add_parser(
        "action",
        parents=[common],
        help="parse a model's text action and show the gesture it makes",
        description='Parse an AitW/AutoUI action, e.g. \'Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.5, 0.5]", "lift_point": "[0.5, 0.5]", "typed_text": ""\'. '
        "Exits 1 if the text is not a valid action.",
    )
    action.add_argument("text", help="the model output")
    action.add_argument(
        "--screen", type=_screen, default=(1080, 2400), help="screen size WxH (default 1080x2400)"
    )
    action.set_defaults(command=_action)

    worker = commands.add_parser(
        "worker",
        parents=[common],
        help="the worker agent (started by the learner on each host)",
        description="Speak the worker protocol on stdin/stdout until shutdown or end of input. The learner "
        "starts this on every host; running it by hand is for debugging.",
    )
    worker.add_argument("--host", required=True, help="this host's name in the inventory")
    worker.add_argument(
        "--handshake-timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds to wait for the learner",
    )
    worker.add_argument(
        "--silence-timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds without a byte from the learner before leaving (its heartbeat_timeout_s)",
    )
    worker.set_defaults(command=_worker)

    sim = commands.add_parser(
        "sim",
        parents=[common],
        help="serve simulated phones that the real adb server lists as emulators",
        description="Serve simulated phones as emulators: phone k's console on BASE+2k and its adbd on "
        "BASE+2k+1 (loopback only), so `adb devices` lists emulator-BASE, emulator-BASE+2, ... and adb, "
        "adbutils and the emulator console drive them like real ones. Each phone announces itself to the "
        "adb server, as an emulator does. Runs until Ctrl-C.",
    )
    sim.add_argument(
        "--devices", type=_positive_int, default=1, metavar="N", help="phones to serve (default 1)"
    )
    sim.add_argument(
        "--base-port", type=_port, default=5554, metavar="PORT", help="first console port (default 5554)"
    )
    sim.add_argument("--size", type=_screen, default=(1080, 2400), help="screen size WxH (default 1080x2400)")
    sim.add_argument("--seed", type=_integer, default=0, help="phone k is seeded with SEED+k (default 0)")
    sim.add_argument(
        "--time-scale",
        type=_scale,
        default=1.0,
        metavar="F",
        help="wall seconds per simulated second of latency (default 1; 0: no waiting)",
    )
    sim.add_argument(
        "--latency",
        choices=["off", "calibrated"],
        default="off",
        help="device latency: none, or a real emulator's (default off)",
    )
    sim.add_argument(
        "--faults",
        type=_fault_rates,
        default="",
        metavar="RATES",
        help="fault probabilities per operation, e.g. hang=0.01,crash=0.001,offline=0.001,white_frame=0.02",
    )
    sim.add_argument(
        "--token-file",
        default="~/.emulator_console_auth_token",
        metavar="PATH",
        help="console auth token (created if missing; an empty file turns auth off)",
    )
    sim.add_argument(
        "--adb-server-port",
        type=_port,
        default=None,
        metavar="PORT",
        help="the adb server to announce the phones to (default $ANDROID_ADB_SERVER_PORT or 5037)",
    )
    sim.add_argument("--no-register", action="store_true", help="do not announce the phones to an adb server")
    sim.set_defaults(command=_sim)

    pretrain = commands.add_parser(
        "pretrain",
        parents=[common],
        help="train the built-in tiny policy by behaviour cloning on the sim's expert",
        description="Build a fresh tiny policy and train all its weights to imitate the simulated phone's "
        "expert (with a share of plausible mistakes), within a time budget, then save it as a model folder "
        "that policy.model can name. Nothing is written until training has finished.",
    )
    pretrain.add_argument("--out", required=True, metavar="FOLDER", help="the model folder to create")
    pretrain.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="task suite to learn from, general or web_shopping; repeat for both (default general)",
    )
    pretrain.add_argument(
        "--minutes", type=_positive_float, default=10.0, metavar="M", help="time budget (default 10)"
    )
    pretrain.add_argument(
        "--steps", type=_positive_int, default=None, metavar="N", help="most optimiser steps"
    )
    pretrain.add_argument(
        "--episodes",
        type=_positive_int,
        default=1000,
        metavar="N",
        help="demonstration episodes (default 1000)",
    )
    pretrain.add_argument(
        "--mistake-rate", type=_rate, default=0.1, metavar="P", help="share of mistaken actions (default 0.1)"
    )
    pretrain.add_argument(
        "--lr", type=_positive_float, default=3e-3, metavar="LR", help="peak learning rate (default 3e-3)"
    )
    pretrain.add_argument(
        "--seed", type=_integer, default=0, help="seed of the weights and the data (default 0)"
    )
    pretrain.set_defaults(command=_pretrain)

    collect = commands.add_parser(
        "collect",
        parents=[common],
        help="play a policy on the fleet without training, and write the episodes",
        description="Start a worker on every host, play --episodes episodes of the inventory's tasks (its "
        "task files or sim suite, of --split) with --policy, without training, and write them to --out in "
        "the episodes format (steps as JSON lines, screens as JPEG; distrl.episodes).",
    )
    collect.add_argument("inventory", metavar="HOSTS_TOML", help="the hosts file")
    collect.add_argument(
        "--policy",
        default="",
        metavar="MODEL",
        help="tiny, tiny-bc, expert (sim devices only) or a model folder (default: the inventory's [policy])",
    )
    collect.add_argument("--adapter", default="", metavar="FOLDER", help="a PEFT adapter folder to apply")
    collect.add_argument(
        "--episodes", type=_positive_int, required=True, metavar="N", help="episodes to bring back"
    )
    collect.add_argument("--split", default="test", help="which split of the tasks (default test)")
    collect.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the episodes go")
    collect.add_argument("--seed", type=_integer, default=None, help="task order seed (default: run.seed)")
    collect.set_defaults(command=_collect)

    view = commands.add_parser(
        "view",
        parents=[common],
        help="write an HTML page to look at the episodes in a folder",
        description="Write DIR/index.html: every episode in DIR (a run's episodes folder, or collect's "
        "--out) with its goal, outcome, the judge's verdict, and its steps: each screen, where the tap "
        "went, the model's answer and the reward. Open it in a browser; nothing else is needed.",
    )
    view.add_argument("folder", metavar="DIR", type=Path, help="a folder of episodes")
    view.set_defaults(command=_view)

    export = commands.add_parser(
        "export",
        parents=[common],
        help="make a folder of episodes a dataset that Hugging Face datasets loads",
        description="Write DIR/metadata.jsonl, a row per step beside its screen, so that "
        'datasets.load_dataset("imagefolder", data_dir=DIR) reads the episodes as a dataset.',
    )
    export.add_argument("folder", metavar="DIR", type=Path, help="a folder of episodes")
    export.set_defaults(command=_export)

    init = commands.add_parser(
        "init",
        parents=[common],
        help="write a documented inventory to start from",
        description="Write the documented example inventory (one local worker, 32 simulated phones, every "
        "key with its default) to HOSTS_TOML, to edit and run.",
    )
    init.add_argument(
        "inventory", metavar="HOSTS_TOML", nargs="?", default="hosts.toml", help="(default hosts.toml)"
    )
    init.add_argument("--force", action="store_true", help="overwrite HOSTS_TOML if it exists")
    init.set_defaults(command=_init)

    evaluate = commands.add_parser(
        "eval",
        parents=[common],
        help="measure a policy's success rate on simulated tasks",
        description="Load a model folder (e.g. one pretrain wrote) and let it play tasks of a suite on "
        "simulated phones, greedily unless --temperature is given; prints the success rate.",
    )
    evaluate.add_argument("model", metavar="MODEL", help="a local model folder, tiny or tiny-bc")
    evaluate.add_argument("--adapter", default="", metavar="FOLDER", help="a PEFT adapter folder to apply")
    evaluate.add_argument("--suite", default="general", help="general or web_shopping (default general)")
    evaluate.add_argument("--split", default="test", choices=["train", "test"], help="(default test)")
    evaluate.add_argument(
        "--episodes", type=_positive_int, default=None, metavar="N", help="tasks to play (default: all once)"
    )
    evaluate.add_argument("--temperature", type=_scale, default=0.0, help="0 is greedy (default 0)")
    evaluate.add_argument("--seed", type=_integer, default=0, help="task order and sampling seed (default 0)")
    evaluate.add_argument("--per-task", action="store_true", help="also print each task's outcome")
    evaluate.set_defaults(command=_eval)

    judge_eval = commands.add_parser(
        "judge-eval",
        parents=[common],
        help="measure the inventory's judge against the sim's truth before a run",
        description="Play simulated episodes (half by the expert with mistakes, half by the inventory's "
        "policy, so that both outcomes occur), ask the inventory's [judge] about each as a run would, and "
        "report its agreement with the sim's own success checks (accuracy, precision, recall, the confusion "
        "table), its cost per episode and how long an episode waits for its score.",
    )
    judge_eval.add_argument("inventory", metavar="HOSTS_TOML", help="an inventory with a [judge] table")
    judge_eval.add_argument(
        "--episodes", type=_positive_int, default=64, metavar="N", help="episodes to judge (default 64)"
    )
    judge_eval.add_argument("--suite", default=None, help="general or web_shopping (default: run.suite)")
    judge_eval.add_argument("--split", default="test", choices=["train", "test"], help="(default test)")
    judge_eval.add_argument("--seed", type=_integer, default=0, help="task order and play seed (default 0)")
    judge_eval.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    judge_eval.set_defaults(command=_judge_eval)
    return parser


def _run(args: argparse.Namespace) -> int:
    from distrl.fleet import RunStats, train

    inventory = load_inventory(args.inventory)
    _say(_headline(inventory))
    output = inventory.output_dir
    _say(f"output: {output} (curves: tensorboard --logdir {output / 'tensorboard'})")
    live = sys.stderr.isatty()

    def show(stats: RunStats) -> None:
        if live:  # one line, redrawn in place: it must not wrap
            width = shutil.get_terminal_size().columns - 1
            print(f"\r\x1b[2K{stats.line(width)}", end="", file=sys.stderr, flush=True)
        else:
            print(stats.line(), file=sys.stderr, flush=True)

    try:
        stats = anyio.run(lambda: train(inventory, resume=args.resume, new=args.new, on_progress=show))
    except KeyboardInterrupt:
        # the run wrote its checkpoint on the way out: a stop, not a failure
        if live:
            print(file=sys.stderr)
        _say(
            f"stopped (Ctrl-C); checkpoints in {output / 'checkpoints'}; to go on: "
            f"python -m distrl run {args.inventory} --resume"
        )
        return 130
    if live:
        print(file=sys.stderr)
    failed = ", ".join(f"{n} {why}" for why, n in sorted(stats.failed.items())) or "none"
    _say(
        f"{stats.completed} episodes ({stats.success_rate:.0%} success) in {stats.elapsed_s:.0f} s; "
        f"{stats.updates} updates; failed episodes: {failed} (all re-queued); "
        f"{stats.device_errors} cut short by a device; {stats.retired} device(s) retired; "
        f"{stats.weight_pushes} weight pushes, {stats.weight_bytes / 1e6:.1f} MB."
    )
    if stats.judge:
        judge = stats.judge
        _say(
            f"judge: {judge['verdicts']:.0f} verdicts ({judge['cache_hits']:.0f} cached),"
            f" {judge['requests']:.0f} requests, p50 {judge['latency_p50_s']:.1f} s to a verdict,"
            f" {judge['prompt_tokens']:.0f} +"
            f" {judge['completion_tokens']:.0f} tokens; {stats.judging} episode(s) left unjudged at the stop."
        )
    if stats.unscored:
        _say(f"{stats.unscored} episode(s) came back with no score and were not trained on (see the log).")
    problem = stats.achieved_nothing
    if problem:
        return _fail(f"the run stopped before its goal: {problem}", EXIT_FAILED)
    return 0


def _probe(args: argparse.Namespace) -> int:
    from distrl.fleet import HostReport, probe_fleet

    inventory = load_inventory(args.inventory)
    _say(_headline(inventory))

    def show(report: HostReport) -> None:
        if report.ok:
            cpus = report.compute.get("cpus", "?")
            python = report.compute.get("python", "?")
            devices = _count(len(report.devices), "device")
            _say(
                f"  {report.host:<16} ok    {devices}, worker up in {report.startup_s:.2f} s, "
                f"heartbeat p50 {report.rtt_p50_ms:.2f} ms (python {python}, {cpus} cpus)",
            )
        else:
            _say(f"  {report.host:<16} FAIL  {report.error}")

    reports = anyio.run(lambda: probe_fleet(inventory, heartbeats=args.heartbeats, on_report=show))
    failed = [r.host for r in reports if not r.ok]
    if failed:
        return _fail(f"{len(failed)} of {len(reports)} host(s) failed: {', '.join(failed)}", EXIT_FAILED)
    _say(f"{_count(len(reports), 'host')} answered and shut down cleanly.")
    return 0


def _check(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    _say(_headline(inventory))
    problem = _missing_local_path(inventory)
    if problem:
        return _fail(problem, EXIT_USAGE)
    for host in inventory.hosts:
        where = (
            "local subprocess" if host.is_local else f"ssh {host.user or '(you)'}@{host.address}:{host.port}"
        )
        _say(f"  {host.name:<16} {where}; python {host.python}; {host.max_episodes} episode(s) at once")
        _say(f"  {'':<16} devices: {', '.join(host.devices.serials)}")
    _say(_tasks_line(inventory))
    _say(f"inventory ok; output goes to {inventory.output_dir}")
    return 0


def _tasks_line(inventory: Inventory) -> str:
    """What ``run`` will train on and how it is scored; ``ConfigError`` or ``TaskFileError`` when the
    task files are bad or some task cannot be scored."""
    from distrl.fleet.scoring import run_tasks

    tasks = run_tasks(inventory)
    scored = collections.Counter(task.evaluator for task in tasks)
    source = (
        f"{len(inventory.tasks.files)} task file(s)"
        if inventory.tasks.files
        else f"the sim's {inventory.run.suite}"
    )
    line = f"tasks: {len(tasks)} of split {inventory.tasks.split} from {source}; scored by " + ", ".join(
        f"{name} ({count})" for name, count in sorted(scored.items())
    )
    if scored["judge"]:
        judge = inventory.judge
        judge.api_key(inventory.source or None)
        key = f"key from ${judge.api_key_env}" if judge.api_key_env else "no key"
        line += f"\njudge: {judge.model} at {judge.base_url} ({key})"
    return line


def _missing_local_path(inventory: Inventory) -> str:
    """The first path this machine must have and does not, as ``file: toml.path: problem`` (empty: none).

    The learner loads the policy here (``run``), and SSH reads its keys here; a remote host's paths are
    the remote host's business (``probe``)."""

    wanted = []
    if inventory.policy.model not in BUILT_IN_MODELS:
        wanted.append(("policy.model", inventory.policy.model))
    if inventory.policy.adapter:
        wanted.append(("policy.adapter", inventory.policy.adapter))
    for index, host in enumerate(inventory.hosts):
        for key in ("identity_file", "known_hosts_file"):
            if not host.is_local and getattr(host, key):
                wanted.append((f"hosts[{index}].{key}", getattr(host, key)))
    for where, path in wanted:
        if not Path(path).exists():
            return str(
                ConfigError.at(where, f"{path!r} does not exist on this machine", inventory.source or None)
            )
    return ""


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
        task_status=Report(),
    )
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        _say("stopped")
    except OSError as exc:
        return _fail(f"cannot serve the phones: {exc.strerror or exc}", EXIT_FAILED)
    except ValueError as exc:  # serve_phones checks the ports before it starts anything
        return _fail(str(exc), EXIT_USAGE)
    return 0


def _pretrain(args: argparse.Namespace) -> int:
    from transformers.utils.logging import disable_progress_bar

    from distrl.pretrain import Progress, pretrain

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

    _say(f"pretraining tiny on {', '.join(suites)} for up to {args.minutes:g} min -> {args.out}")
    try:
        report = pretrain(
            args.out,
            suites=tuple(suites),
            episodes=args.episodes,
            mistake_rate=args.mistake_rate,
            lr=args.lr,
            seed=args.seed,
            minutes=args.minutes,
            max_steps=args.steps,
            on_progress=show,
            progress_every=25,
        )
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
    from distrl.play import evaluate
    from distrl.policy import Policy

    disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers

    settings = PolicySettings(model=args.model, adapter=args.adapter, temperature=args.temperature)
    try:
        policy = Policy.load(settings, seed=args.seed)
    except PolicyError as exc:
        return _fail(str(exc), EXIT_USAGE)
    live = sys.stderr.isatty()
    shown = [time.monotonic()]

    def progress(done: int, total: int, won: int) -> None:
        now = time.monotonic()
        if done < total and now - shown[0] < (1.0 if live else 15.0):
            return
        shown[0] = now
        line = f"eval: {done}/{total} episodes, {won} successes so far"
        print(f"\r\x1b[2K{line}" if live else line, end="" if live else "\n", file=sys.stderr, flush=True)

    result = evaluate(
        policy,
        args.suite,
        args.split,
        episodes=args.episodes,
        seed=args.seed,
        temperature=args.temperature,
        on_episode=progress,
    )
    if live:
        print(file=sys.stderr)
    if args.per_task:
        for outcome in result.outcomes:
            verdict = "ok  " if outcome.success else "fail"
            _say(f"  {verdict} {outcome.task.id:<40} {outcome.steps:2d} steps  {outcome.task.goal}")
    won = sum(outcome.success for outcome in result.outcomes)
    _say(
        f"success {result.success_rate:.1%} ({won}/{len(result.outcomes)}) on {args.suite} {args.split}"
        f" in {result.wall_s:.0f} s"
    )
    return 0


def _collect(args: argparse.Namespace) -> int:
    from distrl.episodes import EpisodeWriter
    from distrl.fleet import collect

    inventory = load_inventory(args.inventory)
    _say(_headline(inventory))
    policy = inventory.policy
    if args.policy:
        model = args.policy if args.policy in BUILT_IN_MODELS else str(Path(args.policy).resolve())
        policy = dataclasses.replace(policy, model=model, adapter="")
    if args.adapter:
        policy = dataclasses.replace(policy, adapter=str(Path(args.adapter).resolve()))
    if policy.model not in BUILT_IN_MODELS and not Path(policy.model).is_dir():
        return _fail(f"--policy: {policy.model} is no model folder", EXIT_USAGE)
    writer = EpisodeWriter(args.out)
    if writer.bytes:
        _say(f"{args.out} already holds episodes: the new ones go beside them")
    result = anyio.run(
        lambda: collect(inventory, policy=policy, split=args.split, episodes=args.episodes, seed=args.seed)
    )
    for trajectory in result.trajectories:
        writer.write(trajectory)
    stats = result.stats
    scored = f"{stats.success_rate:.0%} success" if stats.scored else "none scored"
    _say(
        f"{writer.written} episodes written to {args.out} ({scored}, {stats.unscored} unscored,"
        f" {stats.cut_short} cut short) in {stats.elapsed_s:.0f} s; read them with"
        " distrl.episodes.read_episodes"
    )
    if stats.completed < args.episodes:
        return _fail(
            f"{stats.completed} of {args.episodes} episodes came back: {stats.achieved_nothing}", EXIT_FAILED
        )
    return 0


def _view(args: argparse.Namespace) -> int:
    from distrl.episodes.view import write_viewer

    try:
        page = write_viewer(args.folder)
    except (OSError, ValueError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    _say(f"wrote {page}: open it in a browser (file://{page.resolve()})")
    return 0


def _export(args: argparse.Namespace) -> int:
    from distrl.episodes.export import write_metadata

    try:
        target, rows = write_metadata(args.folder)
    except (OSError, ValueError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    _say(f"wrote {target}: {rows} steps; load them with")
    _say(f'  datasets.load_dataset("imagefolder", data_dir="{args.folder}", split="train")')
    return 0


def _init(args: argparse.Namespace) -> int:
    from importlib.resources import files

    target = Path(args.inventory)
    if target.exists() and not args.force:
        return _fail(f"{target} exists; --force to overwrite it", EXIT_USAGE)
    example = files("distrl").joinpath("hosts.example.toml").read_text(encoding="utf-8")
    try:
        target.write_text(example, encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {target}: {exc.strerror or exc}", EXIT_FAILED)
    _say(f"wrote {target}: one local worker and 32 simulated phones; every key is documented there.")
    _say(f"next: python -m distrl check {target}   then: python -m distrl run {target}")
    return 0


def _judge_eval(args: argparse.Namespace) -> int:
    from distrl.config import EXPERT
    from distrl.fleet.scoring import build_judge
    from distrl.judge_eval import calibrate, calibration_episodes
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

    result = anyio.run(judged)
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        _say(result.report())
    return 0


def _unknown_suite(name: str) -> str | None:
    from distrl.sim.suites import SUITES

    if name in SUITES:
        return None
    return f"unknown task suite {name!r}: use one of {', '.join(sorted(SUITES))}"


def _headline(inventory: Inventory) -> str:
    hosts = len(inventory.hosts)
    return (
        f"distrl {__version__}: {inventory.source}: {_count(hosts, 'host')}, "
        f"{_count(inventory.device_count, 'device')}, mode {inventory.run.mode}"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def _integer(text: str) -> int:
    """``int(text)``, or argparse's own error in words (not the name of a function of this module)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _port(text: str) -> int:
    value = _integer(text)
    if not 1024 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1024 to 65535, got {value}")
    return value


def _number(allowed: str, ok: Callable[[float], bool]) -> Callable[[str], float]:
    """An argparse type for a finite number that ``ok`` accepts; ``allowed`` says which, in words."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}") from None
        if not (math.isfinite(value) and ok(value)):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    return parse


_seconds = _number("a positive number of seconds", lambda value: value > 0)
_scale = _number("a number ≥ 0", lambda value: value >= 0)
_positive_float = _number("a positive number", lambda value: value > 0)
_rate = _number("a number from 0 to 1", lambda value: 0 <= value <= 1)


def _fault_rates(text: str) -> FaultRates:
    try:
        return FaultRates.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _screen(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1080x2400, got {text!r}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"screen sides must be positive, got {text!r}")
    return width, height


def _logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


def _say(text: str) -> None:
    """Print a line of output; if the reader has gone (``| head``), drop the rest and carry on."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _fail(message: str, status: int) -> int:
    print(f"distrl: error: {message}", file=sys.stderr)
    return status
