"""What an app puts on the screen: ``Element`` boxes in density-independent pixels, and their rendering.

Apps describe a screen as a list of ``Element``s laid out in *dp* on a canvas ``DP_WIDTH`` wide (as
Android lays out a 1080-pixel-wide phone at 2.625 pixels per dp); the phone scales them to its real
resolution, so every app looks the same at any size. An element is a box with an id (stable, for the
expert and for tests), the text a model must read, a kind that decides how it is drawn, and an optional
tap handler. Rendering is plain Pillow: rounded boxes, text wrapped into its box, simple glyph icons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "DP_WIDTH",
    "Box",
    "Colour",
    "Element",
    "Kind",
    "Palette",
    "Painter",
    "text_width_dp",
]

DP_WIDTH = 412.0
"""Width of every screen in dp; a 1080-pixel phone has 2.625 pixels per dp."""

Colour = tuple[int, int, int]
Kind = Literal[
    "text", "button", "icon", "toggle", "field", "card", "image", "bar", "slider", "key", "progress"
]


class Palette:
    """The phone's colours (Material-like, light theme)."""

    BACKGROUND: Colour = (250, 250, 252)
    SURFACE: Colour = (255, 255, 255)
    CARD: Colour = (240, 242, 247)
    TEXT: Colour = (28, 28, 32)
    MUTED: Colour = (100, 104, 112)
    PRIMARY: Colour = (26, 115, 232)
    ON_PRIMARY: Colour = (255, 255, 255)
    ACCENT: Colour = (234, 67, 53)
    DIVIDER: Colour = (218, 220, 226)
    BAR: Colour = (242, 244, 248)
    SCRIM: Colour = (120, 120, 128)
    KEYBOARD: Colour = (226, 228, 234)
    KEY: Colour = (255, 255, 255)
    OFF: Colour = (190, 192, 198)


@dataclass(frozen=True, slots=True)
class Box:
    """A rectangle ``(x0, y0)``–``(x1, y1)``; x grows right, y grows down."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def centre(self) -> tuple[float, float]:
        return ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)

    def contains(self, x: float, y: float) -> bool:
        return self.x0 <= x < self.x1 and self.y0 <= y < self.y1

    def shifted(self, dy: float) -> Box:
        return Box(self.x0, self.y0 + dy, self.x1, self.y1 + dy)

    def scaled(self, factor: float) -> Box:
        return Box(self.x0 * factor, self.y0 * factor, self.x1 * factor, self.y1 * factor)

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


@dataclass(frozen=True, kw_only=True, slots=True)
class Element:
    """One thing on the screen. Boxes are in dp from the top of the app's content area."""

    id: str
    """Stable name (``settings/wifi``); the expert and the tests find elements by it."""
    box: Box
    text: str = ""
    """What the element says; fields show their value, or ``hint`` when empty."""
    kind: Kind = "text"
    size: float = 15.0
    """Font size in dp."""
    colour: Colour = Palette.TEXT
    fill: Colour | None = None
    """Background; None draws none (kinds ``button``, ``card``, ``field`` ... have defaults)."""
    radius: float = 0.0
    bold: bool = False
    align: Literal["left", "centre", "right"] = "left"
    on_tap: Callable[[], None] | None = None
    """Called when a tap lands on the element; None makes it inert (taps fall through)."""
    on_set: Callable[[float], None] | None = None
    """Sliders: called with the fraction (0–1) along the box where a tap or drag ended."""
    on_submit: Callable[[str], None] | None = None
    """Fields: called with the field's text on ENTER."""
    checked: bool | None = None
    """Toggles: on or off."""
    value: float | None = None
    """Sliders and progress bars: 0–1."""
    hint: str = ""
    """Fields: the placeholder shown when empty."""
    icon: str = ""
    """Icons: a glyph name (``back``, ``search``, ``cart``, ``wifi`` ...) or one or two letters."""
    fixed: bool = False
    """True: stays put when the content scrolls (app bars, floating buttons)."""
    lines: int = 1
    """Most lines of text to show; longer text is wrapped, then cut with an ellipsis."""

    @property
    def tappable(self) -> bool:
        return self.on_tap is not None or self.on_set is not None


@cache
def _font(size_px: int, bold: bool) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    # Pillow's bundled font (Aileron), so every machine renders the same pixels. Bold is drawn with a stroke.
    del bold
    return ImageFont.load_default(size=size_px)


@lru_cache(maxsize=8192)
def _text_mask(row: str, size_px: int, stroke: int) -> tuple[Image.Image, int, int, float]:
    """``row`` drawn once as an alpha mask, with its offset from the text origin and its advance width.

    Drawing text is most of a frame's cost; screens repeat the same strings, so each is rasterised once.
    """
    font = _font(size_px, False)
    left, up, right, bottom = (int(v) for v in font.getbbox(row, stroke_width=stroke))
    mask = Image.new("L", (max(1, right - left), max(1, bottom - up)))
    ImageDraw.Draw(mask).text((-left, -up), row, font=font, fill=255, stroke_width=stroke, stroke_fill=255)
    return mask, left, up, float(font.getlength(row))


@lru_cache(maxsize=8192)
def _rows(text: str, size_px: int, max_px: int, lines: int) -> tuple[str, ...]:
    """``text`` wrapped into at most ``lines`` rows of ``max_px`` pixels, the last cut with an ellipsis."""
    # No glyph is narrower than a fifth of the font size: what lies beyond cannot show.
    limit = lines * (max_px * 5 // size_px + 2)
    return tuple(_wrap(text[:limit], _font(size_px, False), float(max_px), lines))


def text_width_dp(text: str, size_dp: float) -> float:
    """Width of ``text`` at ``size_dp`` in dp (measured at 10 pixels per dp)."""
    return float(_font(round(size_dp * 10), False).getlength(text)) / 10


class Painter:
    """Draws elements on an image of ``scale`` pixels per dp."""

    def __init__(self, image: Image.Image, scale: float) -> None:
        self.image = image
        self.scale = scale
        self.draw = ImageDraw.Draw(image)

    def px(self, box: Box) -> tuple[int, int, int, int]:
        s = self.scale
        return (round(box.x0 * s), round(box.y0 * s), round(box.x1 * s) - 1, round(box.y1 * s) - 1)

    def rect(self, box: Box, fill: Colour, radius: float = 0.0, outline: Colour | None = None) -> None:
        xy = self.px(box)
        if xy[2] < xy[0] or xy[3] < xy[1]:
            return
        width = max(1, round(self.scale)) if outline else 0
        if radius > 0:
            self.draw.rounded_rectangle(
                xy, radius=round(radius * self.scale), fill=fill, outline=outline, width=width
            )
        else:
            self.draw.rectangle(xy, fill=fill, outline=outline, width=width)

    def text(
        self,
        box: Box,
        text: str,
        *,
        size: float,
        colour: Colour,
        bold: bool = False,
        align: str = "left",
        lines: int = 1,
        pad: float = 0.0,
    ) -> None:
        if not text:
            return
        size_px = max(1, round(size * self.scale))
        inner = Box(box.x0 + pad, box.y0, box.x1 - pad, box.y1)
        max_px = max(1, round(inner.width * self.scale))
        rows = _rows(text, size_px, max_px, max(1, lines))
        line_h = size * 1.3
        top = inner.y0 + max(0.0, (inner.height - line_h * len(rows)) / 2)
        stroke = max(1, round(self.scale * 0.35)) if bold else 0
        for i, row in enumerate(rows):
            mask, left, up, width_px = _text_mask(row, size_px, stroke)
            if align == "centre":
                x = inner.x0 * self.scale + (max_px - width_px) / 2
            elif align == "right":
                x = inner.x1 * self.scale - width_px
            else:
                x = inner.x0 * self.scale
            y = (top + i * line_h + (line_h - size) / 2) * self.scale
            self.image.paste(colour, (round(x) + left, round(y) + up), mask)

    def element(self, element: Element) -> None:
        """Draw one element according to its kind."""
        e = element
        kind = e.kind
        if kind == "toggle":
            self._toggle(e)
            return
        if kind == "slider" or kind == "progress":
            self._slider(e)
            return
        fill = e.fill
        if fill is None:
            fill = {
                "button": Palette.PRIMARY,
                "field": Palette.SURFACE,
                "card": Palette.CARD,
                "key": Palette.KEY,
                "bar": Palette.BAR,
                "image": Palette.CARD,
            }.get(kind)
        outline = Palette.DIVIDER if kind == "field" else None
        radius = e.radius or {"button": 20.0, "field": 8.0, "card": 12.0, "key": 5.0}.get(kind, 0.0)
        if fill is not None:
            self.rect(e.box, fill, radius, outline)
        elif outline is not None:
            self.rect(e.box, Palette.SURFACE, radius, outline)
        if kind == "icon":
            self._icon(e)
            return
        if kind == "image":
            self._placeholder(e)
        text, colour = e.text, e.colour
        if kind == "field" and not text:
            text, colour = e.hint, Palette.MUTED
        pad = 12.0 if kind in ("field", "card", "button") else 0.0
        self.text(e.box, text, size=e.size, colour=colour, bold=e.bold, align=e.align, lines=e.lines, pad=pad)

    def _toggle(self, e: Element) -> None:
        cx, cy = e.box.centre
        track = Box(e.box.x1 - 52, cy - 14, e.box.x1 - 8, cy + 14)
        on = bool(e.checked)
        self.rect(track, Palette.PRIMARY if on else Palette.OFF, 14)
        knob_x = track.x1 - 14 if on else track.x0 + 14
        self.rect(Box(knob_x - 11, cy - 11, knob_x + 11, cy + 11), Palette.SURFACE, 11)
        label = Box(e.box.x0, e.box.y0, track.x0 - 8, e.box.y1)
        self.text(label, e.text, size=e.size, colour=e.colour, bold=e.bold, lines=e.lines)
        del cx

    def _slider(self, e: Element) -> None:
        value = min(1.0, max(0.0, e.value or 0.0))
        cy = e.box.centre[1]
        track = Box(e.box.x0, cy - 3, e.box.x1, cy + 3)
        self.rect(track, Palette.OFF, 3)
        filled = Box(e.box.x0, cy - 3, e.box.x0 + e.box.width * value, cy + 3)
        self.rect(filled, e.fill or Palette.PRIMARY, 3)
        if e.kind == "slider":
            x = filled.x1
            self.rect(Box(x - 10, cy - 10, x + 10, cy + 10), Palette.PRIMARY, 10)

    def _placeholder(self, e: Element) -> None:
        # A product photo stand-in: a shape in a colour derived from the element id.
        seed = sum(e.id.encode()) % 360
        colour = _hue(seed)
        b = e.box
        inset = min(b.width, b.height) * 0.2
        self.rect(Box(b.x0 + inset, b.y0 + inset, b.x1 - inset, b.y1 - inset), colour, inset)

    def _icon(self, e: Element) -> None:
        b = e.box
        s = self.scale
        colour = e.colour
        cx, cy = b.centre
        r = min(b.width, b.height) / 2
        width = max(1, round(2 * s))
        glyph = e.icon
        d = self.draw

        def p(x: float, y: float) -> tuple[float, float]:
            return (x * s, y * s)

        if glyph == "back":
            d.line(
                [p(cx + r * 0.4, cy - r * 0.5), p(cx - r * 0.3, cy), p(cx + r * 0.4, cy + r * 0.5)],
                colour,
                width,
            )
        elif glyph == "home":
            d.ellipse(
                [p(cx - r * 0.45, cy - r * 0.45), p(cx + r * 0.45, cy + r * 0.45)],
                outline=colour,
                width=width,
            )
        elif glyph == "recents":
            d.rectangle(
                [p(cx - r * 0.4, cy - r * 0.4), p(cx + r * 0.4, cy + r * 0.4)], outline=colour, width=width
            )
        elif glyph == "search":
            d.ellipse(
                [p(cx - r * 0.5, cy - r * 0.5), p(cx + r * 0.2, cy + r * 0.2)], outline=colour, width=width
            )
            d.line([p(cx + r * 0.1, cy + r * 0.1), p(cx + r * 0.55, cy + r * 0.55)], colour, width)
        elif glyph == "plus":
            d.line([p(cx - r * 0.5, cy), p(cx + r * 0.5, cy)], colour, width)
            d.line([p(cx, cy - r * 0.5), p(cx, cy + r * 0.5)], colour, width)
        elif glyph == "close":
            d.line([p(cx - r * 0.4, cy - r * 0.4), p(cx + r * 0.4, cy + r * 0.4)], colour, width)
            d.line([p(cx - r * 0.4, cy + r * 0.4), p(cx + r * 0.4, cy - r * 0.4)], colour, width)
        elif glyph == "menu":
            for dy in (-0.4, 0.0, 0.4):
                d.line([p(cx - r * 0.5, cy + r * dy), p(cx + r * 0.5, cy + r * dy)], colour, width)
        elif glyph == "cart":
            d.line([p(cx - r * 0.7, cy - r * 0.5), p(cx - r * 0.45, cy - r * 0.5)], colour, width)
            d.polygon(
                [
                    p(cx - r * 0.45, cy - r * 0.35),
                    p(cx + r * 0.6, cy - r * 0.35),
                    p(cx + r * 0.45, cy + r * 0.25),
                    p(cx - r * 0.3, cy + r * 0.25),
                ],
                outline=colour,
                width=width,
            )
            for dx in (-0.2, 0.35):
                d.ellipse(
                    [p(cx + r * dx - r * 0.1, cy + r * 0.4), p(cx + r * dx + r * 0.1, cy + r * 0.6)],
                    fill=colour,
                )
        else:
            # An app icon or a letter badge: the fill was drawn by the caller; the letters go in the middle.
            self.text(b, glyph, size=max(6.0, r * 0.9), colour=colour, bold=True, align="centre")


def _hue(degrees: int) -> Colour:
    import colorsys

    r, g, b = colorsys.hsv_to_rgb(degrees / 360, 0.45, 0.85)
    return (round(r * 255), round(g * 255), round(b * 255))


def _wrap(
    text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, max_px: float, lines: int
) -> Sequence[str]:
    if lines == 1 or font.getlength(text) <= max_px:
        return [_fit(text, font, max_px)]
    rows: list[str] = []
    words = text.split(" ")
    current = ""
    for word in words:
        trial = f"{current} {word}" if current else word
        if font.getlength(trial) <= max_px or not current:
            current = trial
            continue
        rows.append(current)
        current = word
        if len(rows) == lines:
            break
    else:
        rows.append(current)
        current = ""
    if len(rows) > lines or current:
        rows = rows[:lines]
        rows[-1] = _fit(rows[-1] + " " + current if current else rows[-1], font, max_px, force=bool(current))
    return [_fit(row, font, max_px) for row in rows]


def _fit(
    text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, max_px: float, *, force: bool = False
) -> str:
    if not force and font.getlength(text) <= max_px:
        return text
    low, high = 0, len(text)  # the longest prefix that fits with its ellipsis: binary search
    while low < high:
        middle = (low + high + 1) // 2
        if font.getlength(text[:middle] + "…") <= max_px:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + "…"


ElementBuilder = Callable[[], list[Element]]
