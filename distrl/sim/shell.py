"""The Android shell of the simulated phone: ``run_shell(phone, "input tap 540 1200")``.

What adbd runs for ``shell:``, ``shell,v2:`` and ``exec:``. A command line is split
(``distrl.sim.shell_syntax``) into words as ``sh`` would (single and double quotes, backslashes, an
unquoted ``#`` starting a word begins a comment), into commands joined by unquoted ``;``, ``&&``, ``||``
and newlines; a quoted operator is just text (``input text ';'`` types a semicolon), and the unquoted
``|`` and ``&`` the simulated shell does not run are syntax errors. ``$?`` outside single quotes is the
last exit status, which is what adbutils' ``shell2`` appends (``; echo X4EXIT:$?``); no other expansion
is done. The commands are the ones phone-control clients send, answering with the text and exit status
Android gives:

- ``echo``, ``true``, ``false``, ``exit [n]``;
- ``screencap -p`` (PNG) and ``screencap`` (12-byte header: width, height, format 1 as little-endian
  u32, then RGBA pixels);
- ``input [source] tap|swipe|draganddrop|text|keyevent ...`` (``%s`` in text is a space, as in
  Android's ``input``);
- ``wm size|density``, ``dumpsys display|window|activity|distrl`` (``dumpsys distrl`` prints the
  phone's ``state()`` as JSON: the sim-only hook success checks read);
- ``am start|force-stop``, ``monkey -p PKG ... 1``, ``pm clear|list packages|path``;
- ``getprop [key]``, ``settings get|put NAMESPACE KEY [VALUE]``.

Anything else is ``/system/bin/sh: X: inaccessible or not found`` with status 127. Wrong arguments
give the command's usage text and its Android status; no Python exception escapes ``run_shell``. The
commands live by family: ``distrl.sim.shell_screen`` (screencap, input, wm) and ``distrl.sim.shell_system``
(dumpsys, am, monkey, pm, getprop, settings).
``shell_ops`` names the timed operations (``latency.Op``) a command line performs, so adbd can draw
latencies and faults before it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from distrl.sim.latency import Op
from distrl.sim.phone import Phone
from distrl.sim.shell_result import Command, ShellResult, out
from distrl.sim.shell_screen import INPUT_OPS, SCREEN_COMMANDS
from distrl.sim.shell_syntax import STATUS, ShellSyntaxError, split_line
from distrl.sim.shell_system import SYSTEM_COMMANDS

__all__ = ["ShellResult", "run_shell", "shell_ops"]

logger = logging.getLogger(__name__)

_SH = "/system/bin/sh"


def run_shell(phone: Phone, command: str) -> ShellResult:
    """Run ``command`` on ``phone`` like Android's ``sh -c``; never raises."""
    try:
        chain = split_line(command)
    except ShellSyntaxError as exc:
        return ShellResult(f"{_SH}: syntax error: {exc}\n".encode(), 2)
    output = bytearray()
    status = 0
    for operator, words in chain:
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            continue
        words = [word.replace(STATUS, str(status)) for word in words]
        if words[0] == "exit":
            return ShellResult(bytes(output), _exit_status(words))
        result = _run_one(phone, words)
        output += result.output
        status = result.exit_code
    return ShellResult(bytes(output), status)


def shell_ops(command: str) -> tuple[Op, ...]:
    """The timed operations ``command`` performs, in order (none for a line that does not parse)."""
    try:
        chain = split_line(command)
    except ShellSyntaxError:
        return ()
    ops: list[Op] = []
    for _, words in chain:
        name, args = _program(words[0]), words[1:]
        if name == "screencap":
            ops.append(Op.SCREENSHOT)
        elif name == "input":
            verb = next((a for a in args if a in INPUT_OPS), None)
            ops.extend([INPUT_OPS[verb]] if verb else [])
        elif name == "monkey" or (name == "am" and args[:1] == ["start"]):
            ops.append(Op.PAGE_LOAD if "-d" in args else Op.LAUNCH)
    return tuple(ops)


def _program(word: str) -> str:
    return word.removeprefix("/system/bin/")


def _exit_status(words: Sequence[str]) -> int:
    try:
        return int(words[1]) & 0xFF if len(words) > 1 else 0
    except ValueError:
        return 2


def _run_one(phone: Phone, words: list[str]) -> ShellResult:
    name = _program(words[0])
    command = _COMMANDS.get(name)
    if command is None:
        return ShellResult(f"{_SH}: {words[0]}: inaccessible or not found\n".encode(), 127)
    try:
        return command(phone, words[1:])
    except Exception as exc:  # a bug in the phone must not kill the connection that asked
        logger.exception("sim shell: %r failed", words)
        return ShellResult(f"{name}: java.lang.RuntimeException: {exc}\n".encode(), 255)


# -- commands -----------------------------------------------------------------------------------------


def _echo(phone: Phone, args: list[str]) -> ShellResult:
    newline = args[:1] != ["-n"]
    return out(" ".join(args[0 if newline else 1 :]) + "\n" * newline)


_COMMANDS: dict[str, Command] = {
    "echo": _echo,
    "true": lambda phone, args: out(""),
    "false": lambda phone, args: out("", 1),
    **SCREEN_COMMANDS,
    **SYSTEM_COMMANDS,
}
