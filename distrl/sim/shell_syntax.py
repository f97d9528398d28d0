"""How the simulated shell splits a command line into commands and words, as ``sh`` does: single and
double quotes, backslashes and line continuations, ``#`` comments, the operators ``;``, ``&&``, ``||``
and newlines between commands, and ``$?`` (marked as ``STATUS`` until the command runs). The commands
themselves are ``distrl.sim.shell``'s."""

from __future__ import annotations

__all__ = ["STATUS", "ShellSyntaxError", "split_line"]

_OPERATORS = {";", "&&", "||"}
_OPERATOR_CHARS = ";&|"
STATUS = "\x00"
"""Stands for ``$?`` in a split word until the command runs (adb service strings hold no NUL)."""


class ShellSyntaxError(ValueError):
    """A command line ``sh`` would not run."""


def split_line(command: str) -> list[tuple[str, list[str]]]:
    """``(operator before it, words)`` for each command of the line; ``$?`` marked as ``STATUS``.

    Only unquoted operators join commands: ``input text ';'`` is one command that types ``;``."""
    chain: list[tuple[str, list[str]]] = []
    operator, words = ";", list[str]()
    for text, is_operator in _tokens(command):
        if not is_operator:
            words.append(text)
        elif text == "\n":  # ends a command like ';', but empty lines are fine
            if words:
                chain.append((operator, words))
                operator, words = ";", []
        elif text in _OPERATORS:
            if not words:
                raise ShellSyntaxError(f"unexpected '{text}'")
            chain.append((operator, words))
            operator, words = text, []
        else:
            raise ShellSyntaxError(f"'{text}' is not supported by the simulated shell")
    if words:
        chain.append((operator, words))
    elif operator != ";":
        raise ShellSyntaxError(f"the line ends after '{operator}'")
    return chain


def _tokens(command: str) -> list[tuple[str, bool]]:
    """``command`` lexed as ``sh`` does: ``(text, is_operator)`` for each word and unquoted operator.

    Words lose their quotes and backslashes; ``$?`` outside single quotes becomes ``STATUS``; an
    operator is a run of ``;&|`` or a newline, outside quotes; an unquoted ``#`` that starts a word
    starts a comment, to the end of the line."""
    tokens: list[tuple[str, bool]] = []
    word: list[str] | None = None  # None between words
    i, end = 0, len(command)

    def finish() -> None:
        nonlocal word
        if word is not None:
            tokens.append(("".join(word), False))
            word = None

    while i < end:
        char = command[i]
        if char in " \t\n" or char in _OPERATOR_CHARS:
            finish()
            if char == "\n":
                tokens.append(("\n", True))
            elif char in _OPERATOR_CHARS:
                start = i
                while i + 1 < end and command[i + 1] in _OPERATOR_CHARS:
                    i += 1
                tokens.append((command[start : i + 1], True))
            i += 1
            continue
        if char == "#" and word is None:
            newline = command.find("\n", i)
            i = end if newline < 0 else newline
            continue
        if char == "\\" and command.startswith("\\\n", i):  # a line continuation, gone
            i += 2
            continue
        word = [] if word is None else word
        if char == "\\":
            word.append(command[i + 1 : i + 2] or "\\")  # a trailing backslash stays, as in sh
            i += 2
        elif char == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise ShellSyntaxError("no closing quotation")
            word.append(command[i + 1 : close])
            i = close + 1
        elif char == '"':
            i = _double_quoted(command, i + 1, word)
        else:
            i = _plain(command, i, word)
    finish()
    return tokens


def _double_quoted(command: str, i: int, word: list[str]) -> int:
    """Append the text of a ``"..."`` whose first character is at ``i``; the index after its end."""
    while i < len(command):
        char = command[i]
        if char == '"':
            return i + 1
        if char == "\\" and command[i + 1 : i + 2] in ('"', "\\", "$", "`", "\n"):
            word.append(command[i + 1].replace("\n", ""))
            i += 2
        else:
            i = _plain(command, i, word)
    raise ShellSyntaxError("no closing quotation")


def _plain(command: str, i: int, word: list[str]) -> int:
    """Append the character at ``i``, or ``STATUS`` where ``$?`` starts there; the index after it."""
    if command.startswith("$?", i):
        word.append(STATUS)
        return i + 2
    word.append(command[i])
    return i + 1
