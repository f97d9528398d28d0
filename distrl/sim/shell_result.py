"""What a simulated shell command gives back (``ShellResult``), and the helpers every command uses."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distrl.sim.phone import Phone

__all__ = ["Command", "ShellResult", "lines", "out"]


@dataclass(frozen=True, slots=True)
class ShellResult:
    """What a command line printed (stdout and stderr merged, as ``shell:`` does) and its exit status."""

    output: bytes
    exit_code: int


Command = Callable[["Phone", list[str]], ShellResult]
"""A shell command: the phone and the words after the command's name."""


def out(text: str, status: int = 0) -> ShellResult:
    """``text`` printed, and exit status ``status``."""
    return ShellResult(text.encode(), status)


def lines(texts: Iterable[str], status: int = 0) -> ShellResult:
    """Each of ``texts`` printed on a line of its own."""
    return out("".join(f"{text}\n" for text in texts), status)
