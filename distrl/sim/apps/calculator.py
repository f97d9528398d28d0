"""Calculator (``com.google.android.calculator``): a keypad that really calculates.

The display shows the expression as typed; ``=`` evaluates it (``+ - x /``, parentheses, decimals, with
the usual precedence) and shows the result, which the next operator continues from and the next digit
replaces. Typed text works as on a Pixel with a keyboard: each character presses its key (``12+34=``;
``*`` and ``×`` are ``x``, ``÷`` is ``/``), spaces and other characters do nothing.

Data: ``expr`` (the display), ``fresh`` (a result is showing), ``history`` (``{"expr", "result"}`` for
every ``=``, which success checks read).
"""

from __future__ import annotations

from functools import partial

from distrl.sim.app import BaseApp, Context, Json
from distrl.sim.apps.widgets import W
from distrl.sim.ui import Box, Colour, Element, Palette

__all__ = ["Calculator", "calculate"]


def calculate(expression: str) -> str:
    """Evaluate a calculator expression (digits, ``.``, ``+ - x /``, parentheses) as the Pixel shows it.

    Returns the result formatted (``161``, ``0.3333333333``), or ``Error`` / ``Can't divide by 0``.
    """
    tokens: list[str] = []
    number = ""
    for ch in expression.replace(" ", ""):
        if ch.isdigit() or ch == ".":
            number += ch
            continue
        if number:
            tokens.append(number)
            number = ""
        if ch not in "+-x*/()":
            return "Error"
        tokens.append("x" if ch == "*" else ch)
    if number:
        tokens.append(number)
    try:
        value, rest = _sum(tokens)
    except ZeroDivisionError:
        return "Can't divide by 0"
    except (ValueError, IndexError):
        return "Error"
    if rest:
        return "Error"
    return _format_number(value)


def _sum(tokens: list[str]) -> tuple[float, list[str]]:
    value, tokens = _product(tokens)
    while tokens and tokens[0] in "+-":
        op = tokens[0]
        right, tokens = _product(tokens[1:])
        value = value + right if op == "+" else value - right
    return value, tokens


def _product(tokens: list[str]) -> tuple[float, list[str]]:
    value, tokens = _unary(tokens)
    while tokens and tokens[0] in ("x", "/"):
        op = tokens[0]
        right, tokens = _unary(tokens[1:])
        value = value * right if op == "x" else value / right
    return value, tokens


def _unary(tokens: list[str]) -> tuple[float, list[str]]:
    if tokens[0] == "-":
        value, rest = _unary(tokens[1:])
        return -value, rest
    if tokens[0] == "(":
        value, rest = _sum(tokens[1:])
        if not rest or rest[0] != ")":
            raise ValueError("unbalanced parenthesis")
        return value, rest[1:]
    if tokens[0] in "+x/)":
        raise ValueError(f"unexpected {tokens[0]!r}")
    if tokens[0].count(".") > 1 or tokens[0] == ".":
        raise ValueError(f"bad number {tokens[0]!r}")
    return float(tokens[0]), tokens[1:]


def _format_number(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "Error"
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return str(round(value))
    text = f"{value:.10g}"
    return text


_CALC_KEYS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("AC", "clear"), ("(", "lparen"), (")", "rparen"), ("/", "divide")),
    (("7", "7"), ("8", "8"), ("9", "9"), ("x", "times")),
    (("4", "4"), ("5", "5"), ("6", "6"), ("-", "minus")),
    (("1", "1"), ("2", "2"), ("3", "3"), ("+", "plus")),
    (("0", "0"), (".", "dot"), ("DEL", "del"), ("=", "equals")),
)


_TYPED_KEYS: dict[str, tuple[str, str]] = {
    **{text: (name, text) for row in _CALC_KEYS for text, name in row if len(text) == 1},
    "X": ("times", "x"),
    "*": ("times", "x"),
    "×": ("times", "x"),
    "÷": ("divide", "/"),
}
"""Typed characters and the keys they press: (key name, key text)."""


class Calculator(BaseApp):
    """A working calculator: the expression on top, a keypad below, ``=`` evaluates.

    Data: ``expr`` (what the display shows), ``history`` (``{"expr", "result"}`` for every ``=``).
    """

    package = "com.google.android.calculator"
    activity = "com.android.calculator2.Calculator"
    label = "Calculator"
    icon = "+="
    colour = (60, 64, 67)

    def defaults(self) -> Json:
        return {"expr": "", "history": [], "fresh": False}

    def view(self, ctx: Context) -> list[Element]:
        data = ctx.data
        expr = str(data.get("expr", ""))
        history = data.get("history", [])
        height = ctx.viewport_height
        key_h = 72.0
        gap = 12.0
        pad_top = height - 5 * key_h - 4 * gap - 20
        out = [
            Element(
                id="calc/display",
                box=Box(0, 0, W, pad_top - 12),
                kind="bar",
                fill=Palette.SURFACE,
                fixed=True,
            ),
        ]
        if data.get("fresh") and history:
            out.append(
                Element(
                    id="calc/previous",
                    box=Box(24, pad_top - 170, W - 24, pad_top - 130),
                    text=f"{history[-1]['expr']} =",
                    size=22,
                    colour=Palette.MUTED,
                    align="right",
                    fixed=True,
                )
            )
        out.append(
            Element(
                id="calc/expr",
                box=Box(24, pad_top - 130, W - 24, pad_top - 70),
                text=expr or "0",
                size=40,
                align="right",
                fixed=True,
            )
        )
        preview = "" if data.get("fresh") or not _has_operator(expr) else calculate(expr)
        if preview and not preview[0].isdigit() and not preview.startswith("-"):
            preview = ""
        out.append(
            Element(
                id="calc/preview",
                box=Box(24, pad_top - 66, W - 24, pad_top - 30),
                text=preview,
                size=24,
                colour=Palette.MUTED,
                align="right",
                fixed=True,
            )
        )
        key_w = (W - 2 * 20 - 3 * gap) / 4
        for r, row in enumerate(_CALC_KEYS):
            for c, (text, name) in enumerate(row):
                x = 20 + c * (key_w + gap)
                y = pad_top + r * (key_h + gap)
                operator = name in ("divide", "times", "minus", "plus", "lparen", "rparen", "clear")
                fill: Colour = (
                    (26, 115, 232) if name == "equals" else ((218, 226, 249) if operator else (233, 236, 243))
                )
                colour = Palette.ON_PRIMARY if name == "equals" else Palette.TEXT
                out.append(
                    Element(
                        id=f"calc/key/{name}",
                        box=Box(x, y, x + key_w, y + key_h),
                        kind="key",
                        text=text,
                        size=26 if len(text) == 1 else 20,
                        fill=fill,
                        colour=colour,
                        radius=36,
                        align="centre",
                        fixed=True,
                        on_tap=partial(self._press, ctx, name, text),
                    )
                )
        return out

    def on_text(self, ctx: Context, text: str) -> None:
        for ch in text:
            key = _TYPED_KEYS.get(ch)
            if key is not None:
                self._press(ctx, *key)

    def _press(self, ctx: Context, name: str, text: str) -> None:
        data = ctx.data
        expr = str(data.get("expr", ""))
        fresh = bool(data.get("fresh"))
        data["fresh"] = False
        if name == "clear":
            data["expr"] = ""
        elif name == "del":
            data["expr"] = "" if fresh else expr[:-1]
        elif name == "equals":
            if not expr:
                return
            result = calculate(expr)
            data.setdefault("history", []).append({"expr": expr, "result": result})
            data["expr"] = result if result[:1].isdigit() or result[:1] == "-" else ""
            if data["expr"] == "":
                ctx.toast(result)
            data["fresh"] = True
        elif fresh and (text.isdigit() or text in ".("):
            data["expr"] = text
        elif len(expr) < 40:
            data["expr"] = expr + text


def _has_operator(expr: str) -> bool:
    return any(op in expr[1:] for op in "+-x/")
