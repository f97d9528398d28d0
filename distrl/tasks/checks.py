"""The ``adb`` evaluator: AndroidWorld-style success checks that run on any Android device.

A check is a shell command and the output it must give: ``settings get global airplane_mode_on`` equals
``1``; ``dumpsys window`` contains ``com.android.settings``. An episode succeeds when every check of its
task passes. The worker runs them on the device through ``Device.shell`` at the end of the episode.
"""

from __future__ import annotations

import logging
import math
import operator
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from distrl.records import CHECK_OPS, Check, Document

__all__ = ["check_from_json", "passes", "run_checks"]

log = logging.getLogger(__name__)

_COMPARE: Mapping[str, Callable[[float, float], bool]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


class _Answer(Protocol):
    """What ``Device.shell`` answers (``distrl.device.protocol.CommandOutput``)."""

    @property
    def status(self) -> int | None: ...

    @property
    def output(self) -> str: ...


def passes(check: Check, status: int | None, output: str) -> bool:
    """Whether a command that exited with ``status`` and printed ``output`` satisfies ``check``.

    A command that failed (a non-zero status) passes nothing. The output is compared stripped of its
    surrounding whitespace; the numeric comparisons read it as a number and fail on anything else."""
    if status not in (0, None):
        return False
    text = output.strip()
    if check.op == "equals":
        return text == check.value
    if check.op == "contains":
        return check.value in output
    if check.op == "regex":
        return re.search(check.value, output, re.MULTILINE) is not None
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isfinite(number) and _COMPARE[check.op](number, float(check.value))


async def run_checks(checks: Sequence[Check], shell: Callable[[str], Awaitable[_Answer]]) -> bool:
    """Run each check's command through ``shell`` (``Device.shell``), in order; True when all pass.
    Stops at the first that fails. Device errors propagate (the episode failed, it is not scored)."""
    for check in checks:
        answer = await shell(check.command)
        if not passes(check, answer.status, answer.output):
            log.debug(
                "check failed: %r gave %r (status %s)", check.command, answer.output[:200], answer.status
            )
            return False
    return True


def check_from_json(value: object, where: str) -> Check:
    """A check written as ``{"command": "...", "<op>": value}`` (one op); ValueError naming ``where``."""
    check = Document(value, where)
    command = check.take("command") if check.has("command") else None
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"{where}.command must be a non-empty string (an adb shell command)")
    ops = [key for key in check.names() if key != "command"]
    unknown = [key for key in ops if key not in CHECK_OPS]
    if unknown:
        raise ValueError(
            f"{where} has unknown key(s) {unknown}: a check has command and one of {', '.join(CHECK_OPS)}"
        )
    if len(ops) != 1:
        raise ValueError(f"{where} needs exactly one of {', '.join(CHECK_OPS)}, has {len(ops)}")
    op = ops[0]
    raw = check.take(op)
    if op in _COMPARE:
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise ValueError(f"{where}.{op} must be a number")
        try:
            number = float(raw)
        except ValueError:
            raise ValueError(f"{where}.{op} must be a number, not {raw!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"{where}.{op} must be a finite number")
        return Check(command=command, op=op, value=repr(number))
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f"{where}.{op} must be a string")  # noqa: TRY004
    text = str(raw)
    if op == "regex":
        try:
            re.compile(text)
        except re.error as exc:
            raise ValueError(f"{where}.regex is not a regular expression: {exc}") from None
    elif op == "contains" and not text:
        raise ValueError(f"{where}.contains must not be empty")
    return Check(command=command, op=op, value=text)
