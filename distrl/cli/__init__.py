"""``python -m distrl``: the command line (its grammar in ``distrl.cli.parsers``; the commands in
``distrl.cli.fleet``, those on an inventory's fleet, and ``distrl.cli.local``, those on this machine).

A user's mistake (bad inventory, unreachable host, bad argument) ends in one sentence on stderr and a
non-zero exit status: 2 for usage and inventory errors, 1 when something failed while running.
"""

from __future__ import annotations

from collections.abc import Sequence

from distrl.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    configure_logging,
    fail,
)
from distrl.cli.parsers import build_parser
from distrl.errors import ConfigError, DistrlError, TaskFileError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    try:
        status: int = args.command(args)
    except (ConfigError, TaskFileError) as exc:
        return fail(str(exc), EXIT_USAGE)
    except DistrlError as exc:
        return fail(str(exc), EXIT_FAILED)
    except Terminated:
        return fail("terminated", EXIT_TERMINATED)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
    return status
