"""The command line's grammar: every command, its arguments and its help (``build_parser``). The fleet's
commands are built here, the ones that run on this machine alone in ``distrl.cli.local_parsers``; the
commands themselves are in ``distrl.cli.fleet`` and ``distrl.cli.local``."""

from __future__ import annotations

import argparse

from distrl import __version__
from distrl.cli.common import (
    ADAPTER_HELP,
    adapter_folder,
    path_argument,
    path_text,
    positive_int,
    seed_number,
)
from distrl.cli.fleet import (
    check_command,
    collect_command,
    deploy_command,
    init_command,
    probe_command,
    run_command,
)
from distrl.cli.local_parsers import Commands, add_local_commands

__all__ = ["build_parser"]

DESCRIPTION = """\
distrl trains phone-control agents with asynchronous distributed reinforcement learning.

Start with:  python -m distrl init         (writes hosts.toml, every key documented)
             python -m distrl run hosts.toml
"""


def build_parser() -> argparse.ArgumentParser:
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
    _add_fleet_commands(commands, common)
    add_local_commands(commands, common)
    return parser


def _add_fleet_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """The commands that start a fleet from an inventory (``distrl.cli.fleet``)."""
    run = commands.add_parser(
        "run",
        parents=[common],
        help="train: start the fleet, collect episodes and train the policy",
        description="Start a worker on every host of the inventory, run episodes on every device and train "
        "the policy with the inventory's algorithm until run.max_trajectories or run.duration_s (Ctrl-C "
        "stops it cleanly, with a checkpoint). Progress goes to stderr; checkpoints and TensorBoard logs to "
        "<run.output_dir>/<run.name>.",
    )
    run.add_argument("inventory", type=path_text, help="the hosts file, e.g. hosts.example.toml")
    start = run.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    start.add_argument(
        "--new", action="store_true", help="a new run beside an earlier one there, as <name>.1 (.2, ...)"
    )
    run.set_defaults(command=run_command)

    probe = commands.add_parser(
        "probe",
        parents=[common],
        help="start every host's worker, shake hands, time heartbeats, stop",
        description="Start a worker on every host of the inventory, shake hands with each, time heartbeat "
        "round trips and shut the workers down: the cheapest end-to-end check of an inventory.",
    )
    probe.add_argument("inventory", type=path_text, help="the hosts file, e.g. hosts.example.toml")
    probe.add_argument(
        "--heartbeats",
        type=positive_int,
        default=5,
        metavar="N",
        help="round trips to time per host (default 5)",
    )
    probe.set_defaults(command=probe_command)

    deploy = commands.add_parser(
        "deploy",
        parents=[common],
        help="install this machine's distrl on every SSH host, in a private virtualenv",
        description="Build this machine's distrl as a wheel and install it, with its dependencies, on every "
        "SSH host of the inventory, in parallel: pushed by SFTP into ~/.distrl, installed into the "
        "virtualenv ~/.distrl/venv (uv where the host has it, else python3 -m venv), which hosts that leave "
        "python empty then run. A host whose installed wheel is this one is skipped. Per-host choices "
        "(torch build, index, wheelhouse) are DISTRL_* variables in its env table (docs: guides, 'Remote "
        "hosts and deploy'). Exits 1 if any host failed.",
    )
    deploy.add_argument("inventory", type=path_text, help="the hosts file")
    deploy.add_argument(
        "--hosts", default="", metavar="NAME,...", help="only these hosts (default: every SSH host)"
    )
    deploy.add_argument("--force", action="store_true", help="install again where it is up to date")
    deploy.set_defaults(command=deploy_command)

    check = commands.add_parser(
        "check",
        parents=[common],
        help="check an inventory without running anything",
        description="Load and check the inventory, then print its hosts and devices.",
    )
    check.add_argument("inventory", type=path_text, help="the hosts file")
    check.set_defaults(command=check_command)

    collect = commands.add_parser(
        "collect",
        parents=[common],
        help="play a policy on the fleet without training, and write the episodes",
        description="Start a worker on every host, play --episodes episodes of the inventory's tasks (its "
        "task files or sim suite, of --split) with --policy, without training, and write them to --out in "
        "the episodes format (the trajectory as JSON, screens as JPEG; distrl.episodes).",
    )
    collect.add_argument("inventory", type=path_text, metavar="HOSTS_TOML", help="the hosts file")
    collect.add_argument(
        "--policy",
        default="",
        metavar="MODEL",
        help="tiny, tiny-bc, tiny-weak, expert (sim devices only) or a model folder (default: the "
        "inventory's [policy])",
    )
    collect.add_argument("--adapter", default="", type=adapter_folder, metavar="FOLDER", help=ADAPTER_HELP)
    collect.add_argument(
        "--episodes", type=positive_int, required=True, metavar="N", help="episodes to bring back"
    )
    collect.add_argument(
        "--split",
        default="test",
        help="which split of the tasks: a sim suite has train, test and unseen (default test)",
    )
    collect.add_argument(
        "--out", type=path_argument, required=True, metavar="DIR", help="where the episodes go"
    )
    collect.add_argument(
        "--group-size",
        type=positive_int,
        default=None,
        metavar="K",
        help="play each task on K devices at once, its K episodes a group (pass@k data; default: the"
        " inventory's [tasks] group_size)",
    )
    collect.add_argument("--seed", type=seed_number, default=None, help="task order seed (default: run.seed)")
    collect.set_defaults(command=collect_command)

    init = commands.add_parser(
        "init",
        parents=[common],
        help="write a documented inventory to start from",
        description="Write the documented example inventory (one local worker, 32 simulated phones, every "
        "key with its default) to HOSTS_TOML, to edit and run.",
    )
    init.add_argument(
        "inventory",
        type=path_text,
        metavar="HOSTS_TOML",
        nargs="?",
        default="hosts.toml",
        help="(default hosts.toml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite HOSTS_TOML if it exists")
    init.set_defaults(command=init_command)
