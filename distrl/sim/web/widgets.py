"""The web pages' building blocks: text, word marks, buttons, cards, bands, title rows, empty states.

What ``distrl.sim.apps.widgets`` is for the apps, for the pages of the simulated web and Chrome's own
screens. Every builder takes its boxes in dp from the top of the content area, the browser's bar
included (pages start at ``BAR_HEIGHT``), and returns plain ``Element``s: the pages stay pure functions
of a route and a ``Browser``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from distrl.sim.ui import DP_WIDTH, Box, Colour, Element, Palette, text_width_dp
from distrl.sim.web.text import clip

__all__ = [
    "band",
    "button",
    "card",
    "empty_state",
    "error_screen",
    "logo",
    "text",
    "title_row",
    "wide_button",
]

W = DP_WIDTH


def text(
    element_id: str,
    box: Box,
    value: str,
    *,
    size: float = 15.0,
    colour: Colour = Palette.TEXT,
    bold: bool = False,
    lines: int = 1,
    align: str = "left",
    fixed: bool = False,
) -> Element:
    """A line (or a few wrapped lines) of inert text (cut to a few hundred characters)."""
    return Element(
        id=element_id,
        box=box,
        text=clip(value, 80 * lines),
        size=size,
        colour=colour,
        bold=bold,
        lines=lines,
        align="centre" if align == "centre" else "right" if align == "right" else "left",
        fixed=fixed,
    )


def logo(
    element_id: str,
    runs: Sequence[tuple[str, Colour]],
    x: float,
    y: float,
    size: float,
    *,
    centre: bool = False,
    fixed: bool = False,
    on_tap: Callable[[], None] | None = None,
) -> list[Element]:
    """A word mark written as runs of coloured bold text starting at ``(x, y)`` (top left)."""
    widths = [text_width_dp(run, size) + size * 0.06 for run, _ in runs]
    if centre:
        x = (W - sum(widths)) / 2
    out: list[Element] = []
    for i, ((run, colour), width) in enumerate(zip(runs, widths, strict=True)):
        out.append(
            Element(
                id=f"{element_id}/{i}" if i else element_id,
                box=Box(x, y, x + width + 2, y + size * 1.4),
                text=run,
                size=size,
                colour=colour,
                bold=True,
                fixed=fixed,
                on_tap=on_tap,
            )
        )
        x += width
    return out


def button(
    element_id: str,
    box: Box,
    label: str,
    on_tap: Callable[[], None],
    *,
    fill: Colour | None = None,
    colour: Colour = Palette.TEXT,
    radius: float = 0.0,
    size: float = 15.0,
    bold: bool = False,
    fixed: bool = False,
) -> Element:
    """A button: ``label`` centred in ``box`` (``fill`` None draws the kind's default)."""
    return Element(
        id=element_id,
        box=box,
        text=label,
        kind="button",
        fill=fill,
        colour=colour,
        radius=radius,
        size=size,
        bold=bold,
        align="centre",
        fixed=fixed,
        on_tap=on_tap,
    )


def wide_button(
    element_id: str,
    y: float,
    label: str,
    on_tap: Callable[[], None],
    *,
    fill: Colour,
    colour: Colour,
    radius: float = 24.0,
) -> Element:
    """A page's main action: a bold button 48 dp high across the page (12 dp margins) from ``y``."""
    return button(
        element_id,
        Box(12, y, W - 12, y + 48),
        label,
        on_tap,
        fill=fill,
        colour=colour,
        radius=radius,
        size=16,
        bold=True,
    )


def card(
    element_id: str,
    box: Box,
    *,
    fill: Colour | None = None,
    radius: float = 0.0,
    on_tap: Callable[[], None] | None = None,
    fixed: bool = False,
) -> Element:
    """A rounded panel (``fill`` None draws the kind's default); with ``on_tap``, all of it is a target."""
    return Element(id=element_id, box=box, kind="card", fill=fill, radius=radius, on_tap=on_tap, fixed=fixed)


def band(element_id: str, top: float, bottom: float, fill: Colour, *, fixed: bool = False) -> Element:
    """A strip of colour across the page from ``top`` to ``bottom`` (headers, page backgrounds, footers)."""
    return Element(id=element_id, box=Box(0, top, W, bottom), kind="bar", fill=fill, fixed=fixed)


def title_row(
    element_id: str, y: float, title: str, *, size: float, height: float = 28.0, margin: float = 12.0
) -> Element:
    """A bold title across the page from ``y`` (``margin`` dp in from each side)."""
    return text(element_id, Box(margin, y, W - margin, y + height), title, size=size, bold=True)


def empty_state(
    heading: Element,
    hint: tuple[str, str],
    action: tuple[str, str, Callable[[], None]],
    *,
    fill: Colour,
    colour: Colour,
    hint_size: float = 15.0,
    gaps: tuple[float, float] = (6.0, 18.0),
) -> list[Element]:
    """A page with nothing to show: ``heading``, then under it a muted centred ``hint`` (``id, text``, two
    lines) and a centred round button (``action``: ``id, label, on_tap``), ``gaps`` dp apart."""
    hint_id, hint_text = hint
    button_id, label, on_tap = action
    y = heading.box.y1 + gaps[0]
    y1 = y + 42 + gaps[1]
    return [
        heading,
        text(
            hint_id,
            Box(24, y, W - 24, y + 42),
            hint_text,
            size=hint_size,
            colour=Palette.MUTED,
            lines=2,
            align="centre",
        ),
        button(button_id, Box(80, y1, W - 80, y1 + 48), label, on_tap, fill=fill, colour=colour, radius=24),
    ]


def error_screen(
    prefix: str,
    top: float,
    *,
    title: str,
    title_size: float,
    detail: str,
    detail_lines: int,
    detail_height: float,
    code: str,
    detail_name: str = "detail",
) -> list[Element]:
    """Chrome's "can't show this page" screens, 40 dp in from each side: a bold ``title``, a muted
    ``detail`` of up to ``detail_lines`` lines, and the error ``code`` under it. Ids are ``<prefix>/title``,
    ``<prefix>/<detail_name>`` and ``<prefix>/code``."""
    y = top + 236 + detail_height
    return [
        text(f"{prefix}/title", Box(40, top + 190, W - 40, top + 224), title, size=title_size, bold=True),
        text(
            f"{prefix}/{detail_name}",
            Box(40, top + 236, W - 40, y),
            detail,
            size=15,
            colour=Palette.MUTED,
            lines=detail_lines,
        ),
        text(f"{prefix}/code", Box(40, y + 10, W - 40, y + 34), code, size=13, colour=Palette.MUTED),
    ]
