"""``python -m distrl``: the command line.

A user's mistake (bad inventory, unreachable host, bad argument) ends in one sentence on stderr and a
non-zero exit status: 2 for usage and inventory errors, 1 when something failed while running.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections.abc import Sequence

import anyio

from distrl import __version__
from distrl.actions import format_action, parse_action, to_gesture
from distrl.config import Inventory, load_inventory
from distrl.errors import ConfigError, DistrlError
from distrl.records import InvalidAction

EXIT_FAILED = 1
EXIT_USAGE = 2

DESCRIPTION = """\
distrl trains phone-control agents with asynchronous distributed reinforcement learning.

Start with:  python -m distrl run hosts.example.toml
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    _logging(args.verbose)
    try:
        status: int = args.command(args)
    except ConfigError as exc:
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
        help="run the fleet of an inventory",
        description="Start a worker on every host of the inventory, shake hands with each, time heartbeat "
        "round trips and shut the workers down. (Collection and training build on this.)",
    )
    run.add_argument("inventory", help="the hosts file, e.g. hosts.example.toml")
    run.add_argument(
        "--heartbeats",
        type=_positive_int,
        default=5,
        metavar="N",
        help="round trips to time per host (default 5)",
    )
    run.set_defaults(command=_run)

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
    worker.set_defaults(command=_worker)
    return parser


def _run(args: argparse.Namespace) -> int:
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
    _say(
        f"{_count(len(reports), 'host')} answered and shut down cleanly. "
        "Episode collection and training are not built yet (see README, 'Status')."
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    _say(_headline(inventory))
    for host in inventory.hosts:
        where = (
            "local subprocess" if host.is_local else f"ssh {host.user or '(you)'}@{host.address}:{host.port}"
        )
        _say(f"  {host.name:<16} {where}; python {host.python}; {host.max_episodes} episode(s) at once")
        _say(f"  {'':<16} devices: {', '.join(host.devices.serials)}")
    _say(f"inventory ok; output goes to {inventory.output_dir}")
    return 0


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

    worker_main(args.host, handshake_s=args.handshake_timeout)


def _headline(inventory: Inventory) -> str:
    hosts = len(inventory.hosts)
    return (
        f"distrl {__version__}: {inventory.source}: {_count(hosts, 'host')}, "
        f"{_count(inventory.device_count, 'device')}, mode {inventory.run.mode}"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


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
