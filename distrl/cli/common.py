"""What every command shares: exit statuses, argument types, output and logging."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio

from distrl import __version__
from distrl.config import MOST_SEED, Inventory

if TYPE_CHECKING:
    from distrl.sim.latency import FaultRates

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a command stopped by Ctrl-C."""
EXIT_TERMINATED = 143
"""128 + SIGTERM."""

T = TypeVar("T")

ADAPTER_HELP = (
    "a PEFT adapter folder to apply; or a checkpoint folder (its adapter), or a run's output or checkpoints"
    " folder (the adapter of its latest checkpoint)"
)
"""The help of ``--adapter``, which ``collect`` and ``eval`` take."""


class Terminated(KeyboardInterrupt):
    """SIGTERM stopped the command (``run_async``): every command ends on it as on Ctrl-C."""


SAME_STOP_S = 1.0
"""Ctrl-C's within this of the first are the same stop: ``timeout -s INT`` signals the process, then its
group, so the process hears it twice."""


def run_async(work: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(work)``, where SIGTERM stops the work as Ctrl-C does: ``work`` is cancelled, its cleanup
    runs (a training run writes its checkpoint), and ``Terminated`` is raised (``KeyboardInterrupt`` for
    Ctrl-C). Without this, SIGTERM (what ``kill``, systemd, Docker and batch schedulers send) would end
    the process on the spot. A second Ctrl-C during the cleanup (``SAME_STOP_S`` after the first or later)
    ends the process at once, in one line; asyncio's own raised ``KeyboardInterrupt`` wherever the loop
    was, which could break a cancel scope's exit into a traceback."""
    terminated = False
    interrupted: float | None = None
    results: list[T] = []

    async def guarded() -> None:
        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            scope.cancel()

        def on_sigint() -> None:
            nonlocal interrupted
            if interrupted is None:
                interrupted = time.monotonic()
                scope.cancel()
            elif time.monotonic() - interrupted >= SAME_STOP_S:
                print("distrl: error: interrupted again: stopped at once", file=sys.stderr, flush=True)
                os._exit(EXIT_INTERRUPTED)

        loop = asyncio.get_running_loop()
        # Ctrl-C taken over only where it would raise KeyboardInterrupt (not where it is ignored: nohup)
        catch_sigint = signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, None)
        with anyio.CancelScope() as scope:
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
            if catch_sigint:
                loop.add_signal_handler(signal.SIGINT, on_sigint)
            try:
                results.append(await work())
            finally:
                loop.remove_signal_handler(signal.SIGTERM)
                if catch_sigint:
                    loop.remove_signal_handler(signal.SIGINT)

    anyio.run(guarded)
    if terminated:
        raise Terminated
    if interrupted is not None:
        raise KeyboardInterrupt
    return results[0]


def stop_name(stop: KeyboardInterrupt) -> str:
    """How the user stopped a command, in words: ``SIGTERM`` or ``Ctrl-C``."""
    return "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"


def stop_status(stop: KeyboardInterrupt) -> int:
    """The exit status of a command so stopped."""
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def unknown_suite(name: str) -> str | None:
    from distrl.sim.suites import SUITES

    if name in SUITES:
        return None
    return f"unknown task suite {name!r}: use one of {', '.join(sorted(SUITES))}"


def headline(inventory: Inventory) -> str:
    hosts = len(inventory.hosts)
    return (
        f"distrl {__version__}: {inventory.source}: {counted(hosts, 'host')}, "
        f"{counted(inventory.device_count, 'device')}, mode {inventory.run.mode}"
    )


def counted(number: int, noun: str, plural: str = "") -> str:
    """``number`` with ``noun`` in its number: ``1 episode``, ``2 episodes``, ``0 successes`` (``plural``
    where it is not the noun and an s)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def whole_number(text: str) -> int:
    """``int(text)``, or argparse's own error in words (not the name of a function of this module)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def seed_number(text: str) -> int:
    value = whole_number(text)
    if not 0 <= value <= MOST_SEED:
        raise argparse.ArgumentTypeError(f"must be a seed from 0 to {MOST_SEED}, got {value}")
    return value


def path_text(text: str) -> str:
    """A file or folder named on the command line: not an empty word (``""`` would be the folder run from)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a path, got {text!r}")
    return text


def path_argument(text: str) -> Path:
    return Path(path_text(text))


def port_number(text: str) -> int:
    value = whole_number(text)
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


def fault_rates(text: str) -> FaultRates:
    from distrl.sim.latency import FaultRates  # here: a worker's command line imports no sim

    try:
        return FaultRates.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def screen_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1080x2400, got {text!r}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"screen sides must be positive, got {text!r}")
    return width, height


def adapter_folder(text: str) -> str:
    """``--adapter``: a PEFT adapter folder, or a checkpoint's folder (its ``adapter/``), or a run's
    checkpoints folder or output folder (the adapter of its latest checkpoint: the one its ``latest`` file
    names, else the newest, as ``Checkpoints.latest`` finds it); the folder it names, in full. Any other
    path is left for the loader to refuse with its reason."""
    if not text:
        return text  # none
    folder = Path(text).expanduser()
    for candidate in (folder, folder / "adapter"):
        if (candidate / "adapter_config.json").is_file():
            return str(candidate.resolve())
    for root in (folder, folder / "checkpoints"):
        if (root / "latest").is_file() or any(root.glob("step-*")):
            from distrl.learner.checkpoint import Checkpoints  # torch: only where it is asked for

            latest, why = Checkpoints(root).latest_and_why()
            if latest is not None and (latest / "adapter" / "adapter_config.json").is_file():
                if why:
                    print(f"distrl: {why}: using the newest checkpoint, {latest.name}", file=sys.stderr)
                return str((latest / "adapter").resolve())
    return str(folder.resolve())


def adapter_problem(adapter: str, model: str, way_out: Callable[[str], str]) -> str:
    """Why the adapter folder ``adapter`` cannot be put on ``model``, found before anything loads: what
    ``check_adapter`` finds, or that it was trained on another model (``other_base``), then
    ``way_out(that model)``, the command that would name it; "" when it can be. Imports torch."""
    from distrl.errors import PolicyError
    from distrl.policy.loading import check_adapter, other_base

    try:
        check_adapter(adapter)
    except PolicyError as exc:
        return exc.message
    if base := other_base(adapter, model):
        return (
            f"the adapter {adapter} was trained on {base}, not {model} (its adapter_config.json's"
            f" base_model_name_or_path): {way_out(base)}"
        )
    return ""


def configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


def say(text: str) -> None:
    """Print a line of output; if the reader has gone (``| head``), drop the rest and carry on."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def fail(message: str, status: int) -> int:
    print(f"distrl: error: {message}", file=sys.stderr)
    return status


_PATH_ERRORS = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENAMETOOLONG,
}
"""A path that cannot take a file: no such folder, a folder or a file in the way, no permission, a
read-only file system, a name too long."""


def fail_file(exc: OSError, path: str | Path = "") -> int:
    """``fail`` for a file a command could not read or write (``path``, where the error does not name
    it): one line naming it and why, exit 2 where the path the user gave cannot take it
    (``_PATH_ERRORS``), 1 where the machine failed (a full disk)."""
    where = exc.filename or path
    said = f"{where}: {exc.strerror or exc}" if where else str(exc)
    return fail(said, EXIT_USAGE if exc.errno in _PATH_ERRORS else EXIT_FAILED)


positive_seconds = _number("a positive number of seconds", lambda value: value > 0)
non_negative_float = _number("a number ≥ 0", lambda value: value >= 0)
positive_float = _number("a positive number", lambda value: value > 0)
fraction = _number("a number from 0 to 1", lambda value: 0 <= value <= 1)
