"""Pixel-style building blocks the system apps share: app bars, rows, switches, sliders, buttons.

Each row builder lays out one row in dp from ``y`` and returns its elements with the y where the next row
starts. A row's tap target is an invisible element drawn last, so a tap anywhere on the row (icon,
title, subtitle) lands on it. ``launch_nuisance`` gives apps their pop-ups and slow first loads when the
phone's ``nuisances`` are on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from distrl.sim.app import Context
from distrl.sim.ui import DP_WIDTH, Box, Colour, Element, Palette

__all__ = [
    "ACCENT_BG",
    "BAR_H",
    "ON_ACCENT",
    "W",
    "app_bar",
    "fab",
    "ignore_text",
    "launch_nuisance",
    "list_row",
    "load_seconds",
    "main_switch",
    "page_title",
    "radio_row",
    "section_header",
    "slider_row",
    "slug",
    "spacer",
    "text_block",
    "toggle_row",
]

W = DP_WIDTH
BAR_H = 64.0
"""Height of an app bar in dp."""
ACCENT_BG: Colour = (211, 227, 253)
"""Material You's light accent container (selected tabs, floating buttons)."""
ON_ACCENT: Colour = (4, 30, 73)
"""Text and icons on ``ACCENT_BG``."""


def _up(ctx: Context) -> None:
    """The app bar's back arrow: close the keyboard, then leave the screen."""
    ctx.focus(None)
    ctx.back()


def app_bar(
    ctx: Context,
    prefix: str,
    title: str,
    *,
    back: bool = True,
    actions: Sequence[Element] = (),
    size: float = 22.0,
) -> list[Element]:
    """A fixed app bar: an optional back arrow, the title, and ``actions`` (fixed elements) on the right."""
    left = 64.0 if back else 20.0
    right = min((a.box.x0 for a in actions), default=W - 8) - 8
    out = [
        Element(
            id=f"{prefix}/app_bar", box=Box(0, 0, W, BAR_H), kind="bar", fill=Palette.BACKGROUND, fixed=True
        )
    ]
    if back:
        out.append(
            Element(
                id=f"{prefix}/back",
                box=Box(6, 8, 54, 56),
                kind="icon",
                icon="back",
                fixed=True,
                on_tap=lambda: _up(ctx),
            )
        )
    out.append(
        Element(id=f"{prefix}/title", box=Box(left, 0, right, BAR_H), text=title, size=size, fixed=True)
    )
    out.extend(actions)
    return out


def page_title(prefix: str, title: str, y: float = BAR_H) -> tuple[list[Element], float]:
    """The large title under the app bar of a settings page (it scrolls with the page)."""
    return [Element(id=f"{prefix}/heading", box=Box(24, y + 8, W - 24, y + 64), text=title, size=30)], y + 80


def section_header(prefix: str, y: float, text: str) -> tuple[list[Element], float]:
    """A small coloured header over a group of rows."""
    return [
        Element(
            id=f"{prefix}/header",
            box=Box(24, y + 12, W - 24, y + 36),
            text=text,
            size=14,
            bold=True,
            colour=Palette.PRIMARY,
        )
    ], y + 40


def list_row(
    row_id: str,
    y: float,
    title: str,
    subtitle: str = "",
    *,
    on_tap: Callable[[], None] | None,
    icon: str = "",
    icon_fill: Colour | None = None,
    icon_colour: Colour = Palette.ON_PRIMARY,
    enabled: bool = True,
    trailing: str = "",
) -> tuple[list[Element], float]:
    """A row: optional round icon, title, optional subtitle and trailing text; the whole row is the target."""
    height = 76.0 if subtitle else 60.0
    x = 24.0
    out: list[Element] = []
    if icon or icon_fill is not None:
        cy = y + height / 2
        out.append(
            Element(
                id=f"{row_id}/icon",
                box=Box(20, cy - 20, 60, cy + 20),
                kind="icon",
                icon=icon,
                fill=icon_fill or Palette.PRIMARY,
                colour=icon_colour,
                radius=20,
            )
        )
        x = 80.0
    colour = Palette.TEXT if enabled else Palette.OFF
    right = W - 24 - (8 + len(trailing) * 8.5 if trailing else 0)
    if subtitle:
        out.append(
            Element(
                id=f"{row_id}/title", box=Box(x, y + 12, right, y + 38), text=title, size=17, colour=colour
            )
        )
        out.append(
            Element(
                id=f"{row_id}/subtitle",
                box=Box(x, y + 38, right, y + 62),
                text=subtitle,
                size=14,
                colour=Palette.MUTED if enabled else Palette.OFF,
            )
        )
    else:
        out.append(
            Element(
                id=f"{row_id}/title", box=Box(x, y, right, y + height), text=title, size=17, colour=colour
            )
        )
    if trailing:
        out.append(
            Element(
                id=f"{row_id}/trailing",
                box=Box(right + 8, y, W - 24, y + height),
                text=trailing,
                size=15,
                colour=Palette.MUTED,
                align="right",
            )
        )
    out.append(Element(id=row_id, box=Box(0, y, W, y + height), text="", on_tap=on_tap))
    return out, y + height


def toggle_row(
    row_id: str,
    y: float,
    title: str,
    checked: bool,
    on_tap: Callable[[], None],
    *,
    enabled: bool = True,
) -> tuple[list[Element], float]:
    """A row with a switch at the right; a tap anywhere on it flips the switch."""
    return [
        Element(
            id=row_id,
            box=Box(24, y, W - 12, y + 60),
            text=title,
            kind="toggle",
            size=17,
            checked=checked,
            colour=Palette.TEXT if enabled else Palette.OFF,
            on_tap=on_tap,
        )
    ], y + 60


def main_switch(
    row_id: str, y: float, title: str, checked: bool, on_tap: Callable[[], None]
) -> tuple[list[Element], float]:
    """The tinted "Use Wi-Fi" bar at the top of an Android 13 settings page."""
    fill: Colour = ACCENT_BG if checked else Palette.CARD
    return [
        Element(id=f"{row_id}/bar", box=Box(16, y + 8, W - 16, y + 80), kind="card", fill=fill, radius=28),
        Element(
            id=row_id,
            box=Box(40, y + 8, W - 24, y + 80),
            text=title,
            kind="toggle",
            size=19,
            checked=checked,
            on_tap=on_tap,
        ),
    ], y + 96


def slider_row(
    row_id: str,
    y: float,
    title: str,
    value: float,
    on_value: Callable[[float], None],
    *,
    caption: str = "",
) -> tuple[list[Element], float]:
    """A titled slider. ``value`` and the argument of ``on_value`` are fractions (0-1) of the track.

    The touch area reaches 16 dp past each end of the track, like a real slider's thumb, so a tap just
    beyond an end gives exactly 0 or 1.
    """
    track = Box(28, y + 40, W - 28, y + 72)
    hit = Box(track.x0 - 16, y + 34, track.x1 + 16, y + 78)

    def on_set(fraction: float) -> None:
        x = hit.x0 + fraction * hit.width
        on_value(min(1.0, max(0.0, (x - track.x0) / track.width)))

    out = [
        Element(id=f"{row_id}/title", box=Box(24, y + 8, W - 110, y + 36), text=title, size=17),
        Element(id=f"{row_id}/track", box=track, kind="slider", value=value),
        Element(id=row_id, box=hit, text="", on_set=on_set),
    ]
    if caption:
        out.insert(
            1,
            Element(
                id=f"{row_id}/value",
                box=Box(W - 110, y + 8, W - 24, y + 36),
                text=caption,
                size=15,
                colour=Palette.MUTED,
                align="right",
            ),
        )
    return out, y + 84


def radio_row(
    row_id: str, y: float, title: str, selected: bool, on_tap: Callable[[], None]
) -> tuple[list[Element], float]:
    """A radio button row (choice lists such as Screen timeout)."""
    cy = y + 28
    ring = Palette.PRIMARY if selected else Palette.MUTED
    out = [
        Element(id=f"{row_id}/ring", box=Box(24, cy - 11, 46, cy + 11), kind="card", fill=ring, radius=11),
        Element(
            id=f"{row_id}/hole",
            box=Box(27, cy - 8, 43, cy + 8),
            kind="card",
            fill=Palette.BACKGROUND,
            radius=8,
        ),
    ]
    if selected:
        out.append(
            Element(
                id=f"{row_id}/dot",
                box=Box(30, cy - 5, 40, cy + 5),
                kind="card",
                fill=Palette.PRIMARY,
                radius=5,
            )
        )
    out.append(Element(id=f"{row_id}/title", box=Box(68, y, W - 24, y + 56), text=title, size=17))
    out.append(Element(id=row_id, box=Box(0, y, W, y + 56), text="", on_tap=on_tap))
    return out, y + 56


def text_block(
    block_id: str, y: float, text: str, *, lines: int = 3, size: float = 15.0
) -> tuple[list[Element], float]:
    """Muted explanatory text."""
    height = lines * size * 1.3 + 16
    return [
        Element(
            id=block_id,
            box=Box(24, y + 8, W - 24, y + height),
            text=text,
            size=size,
            colour=Palette.MUTED,
            lines=lines,
        )
    ], y + height + 8


def spacer(prefix: str, y: float) -> Element:
    """Nothing at ``y``: lets the content scroll past fixed things at the bottom (tab bars, buttons)."""
    return Element(id=f"{prefix}/end", box=Box(0, y - 1, W, y), text="")


def fab(
    fab_id: str,
    ctx: Context,
    text: str,
    on_tap: Callable[[], None],
    *,
    icon: str = "plus",
    bottom: float = 24.0,
) -> list[Element]:
    """A floating action button at the bottom right (fixed): an icon, or an extended button with text."""
    y1 = ctx.viewport_height - bottom
    if text:
        width = 64 + len(text) * 9.0
        box = Box(W - 20 - width, y1 - 56, W - 20, y1)
        return [
            Element(
                id=fab_id,
                box=box,
                kind="button",
                text=text,
                fill=ACCENT_BG,
                colour=ON_ACCENT,
                radius=18,
                size=16,
                bold=True,
                align="centre",
                fixed=True,
                on_tap=on_tap,
            )
        ]
    box = Box(W - 20 - 56, y1 - 56, W - 20, y1)
    return [
        Element(
            id=fab_id,
            box=box,
            kind="icon",
            icon=icon,
            fill=ACCENT_BG,
            colour=ON_ACCENT,
            radius=18,
            fixed=True,
            on_tap=on_tap,
        )
    ]


def launch_nuisance(
    ctx: Context,
    dialog: tuple[str, str, str, Sequence[str]] | None,
    *,
    p_dialog: float = 0.2,
    p_loading: float = 0.0,
) -> None:
    """On a fresh launch, with nuisances on: maybe a pop-up (``id, title, text, buttons``), maybe a slow load.

    Load times are 0.5-4 s of virtual time with a heavy tail (most loads are quick).
    """
    if not ctx.phone.config.nuisances:
        return
    draw = ctx.random()
    if dialog is not None and draw < p_dialog:
        dialog_id, title, text, buttons = dialog
        ctx.dialog(dialog_id, title, text, list(buttons))
    elif draw < p_dialog + p_loading:
        ctx.set_loading(load_seconds(ctx))


def load_seconds(ctx: Context) -> float:
    """A page-load time: 0.5-4 s, heavy-tailed."""
    return 0.5 + 3.5 * ctx.random() ** 3


def slug(text: str) -> str:
    """An id-friendly form of ``text``: lower case, runs of other characters as ``_``."""
    out = []
    last = ""
    for ch in text.lower():
        c = ch if ch.isascii() and ch.isalnum() else "_"
        if c == "_" and last == "_":
            continue
        out.append(c)
        last = c
    return "".join(out).strip("_")


def ignore_text(_text: str) -> None:
    """A field's ENTER that only closes the keyboard (the phone already did)."""
