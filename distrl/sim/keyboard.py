"""The on-screen keyboard: shown while a field has focus, covering the bottom of the screen.

Its keys really type (a tap on ``q`` adds ``q`` to the focused field), so a policy can type by tapping as
well as with TYPE actions; ``enter`` submits the field, ``del`` deletes, ``hide`` hides the keyboard.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from distrl.sim.ui import DP_WIDTH, Box, Element, Palette

if TYPE_CHECKING:
    from distrl.sim.app import Context

__all__ = ["KEYBOARD_HEIGHT", "Typist", "keyboard_elements"]


class Typist(Protocol):
    """What the keys do to the focused field (``distrl.sim.phone.Phone`` does it)."""

    def insert_text(self, text: str) -> None: ...

    def delete_char(self) -> None: ...

    def submit(self) -> None: ...


KEYBOARD_HEIGHT = 262.0
"""Height of the keyboard in dp, from the bottom of the content area."""

_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_H = 46.0
_GAP = 5.0


def keyboard_elements(phone: Typist, ctx: Context) -> list[Element]:
    """The keyboard's elements in dp from its top edge."""
    out = [
        Element(
            id="keyboard/panel",
            box=Box(0, 0, DP_WIDTH, KEYBOARD_HEIGHT),
            kind="bar",
            fill=Palette.KEYBOARD,
            on_tap=lambda: None,
        )
    ]
    key_w = (DP_WIDTH - _GAP * 11) / 10
    for row, keys in enumerate(_ROWS):
        y = _GAP + row * (_KEY_H + _GAP)
        x = _GAP + (DP_WIDTH - _GAP - len(keys) * (key_w + _GAP)) / 2
        for ch in keys:
            box = Box(x, y, x + key_w, y + _KEY_H)
            out.append(
                Element(
                    id=f"keyboard/{ch}",
                    box=box,
                    text=ch,
                    kind="key",
                    size=18,
                    align="centre",
                    on_tap=partial(phone.insert_text, ch),
                )
            )
            x += key_w + _GAP
    y = _GAP + 4 * (_KEY_H + _GAP)
    wide: list[tuple[str, str, float, Callable[[], None]]] = [
        ("hide", "hide", 0.14, lambda: ctx.focus(None)),
        ("space", "space", 0.58, partial(phone.insert_text, " ")),
        ("delete", "del", 0.13, phone.delete_char),
        ("enter", "enter", 0.15, phone.submit),
    ]
    x = _GAP
    for name, label, share, action in wide:
        width = (DP_WIDTH - _GAP * 5) * share
        out.append(
            Element(
                id=f"keyboard/{name}",
                box=Box(x, y, x + width, y + _KEY_H),
                text=label,
                kind="key",
                size=16,
                align="centre",
                fill=Palette.PRIMARY if name == "enter" else None,
                colour=Palette.ON_PRIMARY if name == "enter" else Palette.TEXT,
                on_tap=action,
            )
        )
        x += width + _GAP
    return out
