"""The commands that work on an inventory's fleet: run, collect, probe, deploy, check, init."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from distrl.config import BUILT_IN_MODELS, HostEntry, Inventory, cannot_create, load_inventory
from distrl.errors import ConfigError, EmulatorError

if TYPE_CHECKING:
    pass
from distrl.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    adapter_problem,
    counted,
    fail,
    fail_file,
    headline,
    run_async,
    say,
    stop_name,
    stop_status,
)
from distrl.cli.placement import placement_problem


def run_command(args: argparse.Namespace) -> int:
    from distrl.fleet import RunStats, train
    from distrl.fleet.scoring import check_algorithm

    inventory = load_inventory(args.inventory)
    check_algorithm(inventory)
    if problem := placement_problem(inventory):
        return fail(problem, EXIT_USAGE)
    if _serves_as_rank(inventory):
        return 0
    say(headline(inventory))
    output = inventory.output_dir
    say(f"output: {output} (curves: tensorboard --logdir {output / 'tensorboard'})")
    live = sys.stderr.isatty()

    def show(stats: RunStats) -> None:
        if live:  # one line, redrawn in place: it must not wrap
            width = shutil.get_terminal_size().columns - 1
            print(f"\r\x1b[2K{stats.line(width)}", end="", file=sys.stderr, flush=True)
        else:
            print(stats.line(), file=sys.stderr, flush=True)

    try:
        stats = run_async(lambda: train(inventory, resume=args.resume, new=args.new, on_progress=show))
    except KeyboardInterrupt as stop:
        # the run wrote its checkpoint on the way out: a stop, not a failure
        if live:
            print(file=sys.stderr)
        say(_stopped(stop, inventory, args.inventory))
        if hint := _eval_hint(inventory):
            say(hint)
        return stop_status(stop)
    if live:
        print(file=sys.stderr)
    failed = ", ".join(f"{n} {why}" for why, n in sorted(stats.failed.items())) or "none"
    say(
        f"{counted(stats.completed, 'episode')} ({stats.success_rate:.0%} success)"
        f" in {stats.elapsed_s:.0f} s; "
        f"{counted(stats.updates, 'update')}; failed episodes: {failed} (all re-queued); "
        f"{stats.device_errors} cut short by a device; {counted(stats.retired, 'device')} retired; "
        f"{counted(stats.weight_pushes, 'weight push', 'weight pushes')}, {stats.weight_bytes / 1e6:.1f} MB."
    )
    if stats.judge:
        judge = stats.judge
        say(
            f"judge: {counted(round(judge['verdicts']), 'verdict')} ({judge['cache_hits']:.0f} cached),"
            f" {counted(round(judge['requests']), 'request')},"
            f" p50 {judge['latency_p50_s']:.1f} s to a verdict,"
            f" {judge['prompt_tokens']:.0f} +"
            f" {judge['completion_tokens']:.0f} tokens."
        )
    if stats.unscored:
        say(
            f"not trained on: {counted(stats.unscored, 'episode')} with no score (it came back without one,"
            " or still waited for the judge at the stop; see the log)."
        )
    problem = stats.achieved_nothing
    if problem:
        return fail(f"the run stopped before its goal: {problem}", EXIT_FAILED)
    if stats.updates and (hint := _eval_hint(inventory)):
        say(hint)
    return 0


def _stopped(stop: KeyboardInterrupt, inventory: Inventory, path: str) -> str:
    """What a stopped run says: where its checkpoints are and how to go on from them, or, stopped before
    its first checkpoint (in its start-up), that there is nothing to resume."""
    from distrl.learner.checkpoint import Checkpoints

    checkpoints = inventory.output_dir / "checkpoints"
    if Checkpoints(checkpoints).latest() is None:
        return (
            f"stopped ({stop_name(stop)}) before the run's first checkpoint: nothing to resume; to start it"
            f" again: python -m distrl run {path}"
        )
    return (
        f"stopped ({stop_name(stop)}); checkpoints in {checkpoints}; to go on: python -m distrl run {path}"
        " --resume"
    )


def _eval_hint(inventory: Inventory) -> str:
    """The command that measures a training run's policy against its start on the sim's held-out tasks,
    over its last checkpoints (up to 3); "" where ``eval`` cannot (task files of the user's, no
    checkpoint)."""
    from distrl.learner.checkpoint import Checkpoints

    kept = len(Checkpoints(inventory.output_dir / "checkpoints").list())
    if inventory.tasks.files or not kept:
        return ""
    several = f" --checkpoints {min(kept, 3)}" if kept > 1 else ""
    suite = f" --suite {inventory.run.suite}" if inventory.run.suite != "general" else ""
    return (
        f"did training help? python -m distrl eval {shlex.quote(inventory.policy.model)} --adapter"
        f" {shlex.quote(str(inventory.output_dir))} --against-start{several}{suite} --split test"
    )


def _serves_as_rank(inventory: Inventory) -> bool:
    """Under ``torchrun``, every process but rank 0 trains as one of the learner's ranks (rank 0 runs the
    fleet); True once such a rank is done."""
    from distrl.learner.rank_child import serve
    from distrl.learner.rank_processes import start_ranks
    from distrl.learner.ranks import torchrun_rank

    launched = torchrun_rank()
    if launched is None or launched[0] == 0:
        return False
    learner = inventory.learner
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = learner.devices[local] if local < len(learner.devices) else learner.device
    if device in ("auto", "cuda"):
        import torch

        device = f"cuda:{local}" if torch.cuda.is_available() else "cpu"
    say(f"learner rank {launched[0]} of {launched[1]} on {device}: training with rank 0")
    serve(
        inventory.policy,
        learner,
        device=device,
        dtype=None,
        seed=inventory.run.seed,
        join=lambda policy: start_ranks(policy, learner, seed=inventory.run.seed),
    )
    return True


def probe_command(args: argparse.Namespace) -> int:
    from distrl.fleet import HostReport, probe_fleet

    inventory = load_inventory(args.inventory)
    say(headline(inventory))

    def show(report: HostReport) -> None:
        if report.ok:
            cpus = report.compute.get("cpus", "?")
            python = report.compute.get("python", "?")
            devices = counted(len(report.devices), "device")
            say(
                f"  {report.host:<16} ok    {devices}, worker up in {report.startup_s:.2f} s, "
                f"heartbeat p50 {report.rtt_p50_ms:.2f} ms (python {python}, {cpus} cpus)",
            )
        else:
            say(f"  {report.host:<16} FAIL  {report.error}")

    reports = run_async(lambda: probe_fleet(inventory, heartbeats=args.heartbeats, on_report=show))
    failed = [r.host for r in reports if not r.ok]
    if failed:
        return fail(f"{len(failed)} of {len(reports)} host(s) failed: {', '.join(failed)}", EXIT_FAILED)
    say(f"{counted(len(reports), 'host')} answered and shut down cleanly.")
    return 0


def deploy_command(args: argparse.Namespace) -> int:
    from distrl.deploy import deploy_fleet

    inventory = load_inventory(args.inventory)
    names = [name.strip() for name in args.hosts.split(",") if name.strip()]
    if args.hosts.strip() and not names:  # "," would otherwise be every host, as leaving it out is
        return fail(f"--hosts {args.hosts!r} names no host", EXIT_USAGE)
    unknown = sorted(set(names) - {host.name for host in inventory.hosts})
    if unknown:
        known = ", ".join(host.name for host in inventory.hosts)
        return fail(f"--hosts: no host {', '.join(unknown)} in {args.inventory} (it has {known})", EXIT_USAGE)
    say(headline(inventory))

    def show(host: str, stage: str, text: str) -> None:
        print(f"[{host}] {stage}: {text}", file=sys.stderr, flush=True)

    outcomes = run_async(lambda: deploy_fleet(inventory, names=names, force=args.force, progress=show))
    for outcome in outcomes:
        status = outcome.status.upper() if outcome.error else outcome.status
        say(f"  {outcome.host:<16} {status:<7} {outcome.detail}")
        if outcome.error is not None and outcome.error.output:
            for line in outcome.error.output.splitlines():
                say(f"  {'':<16} | {line}")
    failed = [outcome.host for outcome in outcomes if outcome.status == "failed"]
    if failed:
        return fail(f"{len(failed)} of {len(outcomes)} host(s) failed: {', '.join(failed)}", EXIT_FAILED)
    say(
        f"{counted(len(outcomes), 'host')} ready;"
        " hosts that leave python empty run ~/.distrl/venv/bin/python."
    )
    return 0


def check_command(args: argparse.Namespace) -> int:
    from distrl.fleet.scoring import check_algorithm

    inventory = load_inventory(args.inventory)
    check_algorithm(inventory)
    say(headline(inventory))
    problem = _missing_local_path(inventory) or placement_problem(inventory)
    if problem:
        return fail(problem, EXIT_USAGE)
    for host in inventory.hosts:
        where = (
            "local subprocess" if host.is_local else f"ssh {host.user or '(you)'}@{host.address}:{host.port}"
        )
        python = host.python or "~/.distrl/venv/bin/python (deploy's), else python3"
        say(f"  {host.name:<16} {where}; python {python}; {counted(host.max_episodes, 'episode')} at once")
        say(f"  {'':<16} devices: {', '.join(host.devices.serials)}")
        if host.devices.avd:
            problem = _emulator_problem(host)
            if problem:
                return fail(problem, EXIT_USAGE)
    say(_screen_line(inventory))
    say(_tasks_line(inventory))
    say(f"inventory ok; output goes to {inventory.output_dir}")
    return 0


def _emulator_problem(host: HostEntry) -> str:
    """Why ``host``'s emulators cannot be launched, as far as this machine can tell (empty: they can).
    Only a local host's SDK, AVD and KVM are here to check; ``probe`` checks a remote one's there."""
    from distrl.device.sdk import preflight

    d = host.devices
    where = f"{d.count} × AVD {d.avd} on ports {d.first_port}-{d.first_port + 2 * d.count - 1}"
    if not host.is_local:
        say(f"  {'':<16} emulators: {where} (`python -m distrl probe` checks the SDK, AVD and KVM there)")
        return ""
    try:
        binary = anyio.run(preflight, d, {**os.environ, **host.env})
    except EmulatorError as exc:
        return f"host {host.name!r}: {exc}"
    say(f"  {'':<16} emulators: {where}, with {binary}")
    return ""


def _screen_line(inventory: Inventory) -> str:
    """The format of the screens every device's worker sends (``[screen]``)."""
    screen = inventory.screen
    quality = f" at quality {screen.jpeg_quality}" if screen.image_format == "jpeg" else ""
    size = f"at most {screen.max_pixels:,} pixels" if screen.max_pixels else "each at its own size"
    return f"screens: {screen.image_format.upper()}{quality}, {size}, from every device"


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
    for index, host in enumerate(inventory.hosts):
        if host.is_local and host.python and not shutil.which(host.python):
            return str(
                ConfigError.at(
                    f"hosts[{index}].python",
                    f"{host.python!r} is no program on this machine (the local worker's python)",
                    inventory.source or None,
                )
            )
    return ""


def collect_command(args: argparse.Namespace) -> int:
    from distrl.episodes import EpisodeWriter
    from distrl.fleet import collect

    inventory = load_inventory(args.inventory)
    say(headline(inventory))
    policy = inventory.policy
    if args.policy:
        model = args.policy if args.policy in BUILT_IN_MODELS else str(Path(args.policy).resolve())
        policy = dataclasses.replace(policy, model=model, adapter="")
    if args.adapter:
        policy = dataclasses.replace(policy, adapter=args.adapter)
    if policy.model not in BUILT_IN_MODELS and not Path(policy.model).is_dir():
        return fail(f"--policy: {policy.model} is no model folder", EXIT_USAGE)
    if args.group_size is not None and args.group_size > inventory.device_count:
        return fail(
            f"--group-size: {args.group_size} is more than the fleet's {inventory.device_count} device(s):"
            " each member of a group plays on a device of its own",
            EXIT_USAGE,
        )
    group_size = args.group_size or inventory.tasks.group_size
    if args.episodes % group_size:
        said = "--group-size" if args.group_size else "the inventory's [tasks] group_size"
        return fail(
            f"--episodes {args.episodes} is not a multiple of {said} {group_size}: each task is played by"
            " a whole group",
            EXIT_USAGE,
        )
    if problem := cannot_create(args.out):
        return fail(f"--out: {problem}", EXIT_USAGE)
    # the last check: it reads the adapter's files (torch); once here, not once per worker and retry
    if args.adapter and (problem := adapter_problem(args.adapter, policy.model, _policy_option)):
        return fail(f"--adapter: {problem}", EXIT_USAGE)
    writer = EpisodeWriter(args.out)
    if writer.bytes:
        say(f"{args.out} already holds episodes: the new ones go beside them")
    try:  # each episode is written as it arrives, those waiting for the judge at the stop unscored
        result = run_async(
            lambda: collect(
                inventory,
                policy=policy,
                split=args.split,
                episodes=args.episodes,
                seed=args.seed,
                out=writer,
                group_size=args.group_size,
            )
        )
    except KeyboardInterrupt as stop:
        say(
            f"stopped ({stop_name(stop)}): {counted(writer.written, 'episode')} written to {args.out}"
            f" ({writer.unscored} unscored); {_look_at(args.out)}"
        )
        return stop_status(stop)
    stats = result.stats
    scored = f"{stats.success_rate:.0%} success" if stats.scored else "none scored"
    say(
        f"{counted(writer.written, 'episode')} written to {args.out} ({scored}, {stats.unscored} unscored,"
        f" {stats.cut_short} cut short) in {stats.elapsed_s:.0f} s"
    )
    say(_look_at(args.out))
    if stats.ended == "judge":
        return fail(f"collect stopped: {stats.achieved_nothing}", EXIT_FAILED)
    if stats.completed < args.episodes:
        return fail(
            f"{stats.completed} of {args.episodes} episodes came back: {stats.achieved_nothing}", EXIT_FAILED
        )
    return 0


def _policy_option(model: str) -> str:
    return f"give --policy {shlex.quote(model)}"


def _look_at(folder: Path) -> str:
    """How to look at the episodes ``collect`` wrote to ``folder``."""
    return (
        f"look at them in a browser: python -m distrl view {shlex.quote(str(folder))}"
        " (in Python: distrl.episodes.read_episodes)"
    )


def _made_by_init(example: str, target: Path) -> str:
    """The documented inventory (``hosts.example.toml``) with its header told to the file ``init`` wrote:
    not a copy to make, but the file itself."""
    return example.replace(
        "# Copy this file to hosts.toml and edit it. As it is,",
        "# Made by `python -m distrl init`; edit it. As it is,",
        1,
    ).replace("`python -m distrl check hosts.toml`", f"`python -m distrl check {target}`", 1)


def init_command(args: argparse.Namespace) -> int:
    from importlib.resources import files

    target = Path(args.inventory)
    if args.inventory.endswith(os.sep):  # Path drops the slash: the file would take the folder's name
        return fail(
            f"{args.inventory} names a folder: name the file, e.g. {target / 'hosts.toml'}", EXIT_USAGE
        )
    example = files("distrl").joinpath("hosts.example.toml").read_text(encoding="utf-8")
    try:
        if target.exists() and not args.force:
            return fail(f"{target} exists; --force to overwrite it", EXIT_USAGE)
        text = _made_by_init(example, target)
        str(target).encode("utf-8")  # a name the inventory could not name itself by, before the file is made
        target.write_text(text, encoding="utf-8")
    except OSError as exc:  # a name too long, a folder missing or read-only
        return fail_file(exc, target)
    except UnicodeEncodeError:
        return fail(f"{str(target)!r} is not a UTF-8 file name: name it in UTF-8", EXIT_USAGE)
    say(f"wrote {target}: one local worker and 32 simulated phones; every key is documented there.")
    say(f"next: python -m distrl check {target}   then: python -m distrl run {target}")
    return 0
