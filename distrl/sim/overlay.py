"""What the phone draws over and around an app: system bars, dialogs, toasts and loading pages."""

from __future__ import annotations

from typing import Protocol

from distrl.sim.app import Context, Host, Json
from distrl.sim.ui import DP_WIDTH, Box, Element, Palette

__all__ = ["NAV_HEIGHT", "STATUS_HEIGHT", "Screen", "dialog", "loading_view", "system_bars", "toast"]

STATUS_HEIGHT = 28.0
"""Height of the status bar in dp."""
NAV_HEIGHT = 48.0
"""Height of the navigation bar in dp."""


class Screen(Host, Protocol):
    """The phone as its overlay sees it (``distrl.sim.phone.Phone`` is one): its apps' view, the whole
    screen's height and the navigation bar's keys."""

    @property
    def screen_height(self) -> float:
        """Height of the whole screen in dp."""
        ...

    def home(self) -> None: ...

    def key(self, keycode: int) -> None: ...


def dialog(phone: Screen, ctx: Context, dialog: Json) -> list[tuple[Element, Box]]:
    """The open dialog: a scrim that takes every tap, a card, its title, text and buttons."""
    screen = Box(0, 0, DP_WIDTH, phone.screen_height)

    def dismiss() -> None:
        if dialog.get("cancelable", True):
            ctx.frame["dialog"] = None

    out: list[tuple[Element, Box]] = [
        (Element(id="dialog/scrim", box=screen, kind="bar", fill=Palette.SCRIM, on_tap=dismiss), screen)
    ]
    buttons: list[str] = list(dialog["buttons"])
    height = 200.0 + 20 * (len(str(dialog["text"])) // 34)
    top = (phone.screen_height - height) / 2
    card = Box(28, top, DP_WIDTH - 28, top + height)
    out.append((Element(id="dialog/card", box=card, kind="card", fill=Palette.SURFACE, radius=24), card))
    title = Box(52, top + 20, DP_WIDTH - 52, top + 56)
    out.append((Element(id="dialog/title", box=title, text=str(dialog["title"]), size=20, bold=True), title))
    body = Box(52, top + 60, DP_WIDTH - 52, top + height - 64)
    out.append(
        (
            Element(id="dialog/text", box=body, text=str(dialog["text"]), colour=Palette.MUTED, lines=6),
            body,
        )
    )
    x1 = DP_WIDTH - 44
    for label in reversed(buttons):
        width = 24 + len(label) * 9.5
        box = Box(x1 - width, top + height - 56, x1, top + height - 16)

        def press(label: str = label) -> None:
            ctx.frame["dialog"] = None
            ctx.app.on_dialog(ctx, str(dialog["id"]), label)

        out.append(
            (
                Element(
                    id=f"dialog/button/{label}",
                    box=box,
                    text=label,
                    kind="button",
                    fill=Palette.SURFACE,
                    colour=Palette.PRIMARY,
                    bold=True,
                    align="centre",
                    on_tap=press,
                ),
                box,
            )
        )
        x1 = box.x0 - 8
    return out


def system_bars(phone: Screen) -> list[tuple[Element, Box]]:
    """The status bar (clock, radios, battery) and the navigation bar (back, home, recents)."""
    settings = phone.data["settings"]
    status = Box(0, 0, DP_WIDTH, STATUS_HEIGHT)
    bar_fill = Palette.BAR
    icons = []
    if settings["global"].get("airplane_mode_on") == "1":
        icons.append("Airplane")
    else:
        if settings["global"].get("wifi_on") == "1":
            icons.append("Wi-Fi")
        icons.append("LTE" if settings["global"].get("mobile_data") == "1" else "")
    if settings["global"].get("bluetooth_on") == "1":
        icons.append("BT")
    icons.append("87%")
    right = "  ".join(i for i in icons if i)
    out: list[tuple[Element, Box]] = [
        (Element(id="system/status_bar", box=status, kind="bar", fill=bar_fill), status),
        (
            Element(
                id="system/clock",
                box=Box(16, 0, 120, STATUS_HEIGHT),
                text=phone.now.strftime("%H:%M"),
                size=13,
                bold=True,
            ),
            Box(16, 0, 120, STATUS_HEIGHT),
        ),
        (
            Element(
                id="system/status_icons",
                box=Box(150, 0, DP_WIDTH - 16, STATUS_HEIGHT),
                text=right,
                size=12,
                align="right",
            ),
            Box(150, 0, DP_WIDTH - 16, STATUS_HEIGHT),
        ),
    ]
    nav_top = phone.screen_height - NAV_HEIGHT
    nav = Box(0, nav_top, DP_WIDTH, phone.screen_height)
    out.append((Element(id="system/nav_bar", box=nav, kind="bar", fill=bar_fill), nav))
    for i, (name, action) in enumerate(
        (("back", phone.back), ("home", phone.home), ("recents", lambda: phone.key(187)))
    ):
        cx = DP_WIDTH * (0.25 + 0.25 * i)
        box = Box(cx - 30, nav_top + 4, cx + 30, nav_top + NAV_HEIGHT - 4)
        out.append(
            (
                Element(
                    id=f"system/nav/{name}",
                    box=box,
                    kind="icon",
                    icon=name,
                    colour=Palette.MUTED,
                    on_tap=action,
                ),
                box,
            )
        )
    return out


def toast(phone: Screen) -> list[tuple[Element, Box]]:
    """The toast, while one shows: a dark pill above the navigation bar."""
    shown = phone.data["toast"]
    if shown is None:
        return []
    text = str(shown["text"])
    y = STATUS_HEIGHT + phone.content_height - 90
    width = min(DP_WIDTH - 48, 40 + len(text) * 8.0)
    box = Box((DP_WIDTH - width) / 2, y, (DP_WIDTH + width) / 2, y + 40)
    pill = Element(
        id="system/toast",
        box=box,
        text=text,
        kind="card",
        fill=(60, 60, 66),
        colour=(255, 255, 255),
        radius=20,
        align="centre",
    )
    return [(pill, box)]


def loading_view(ctx: Context) -> list[Element]:
    """A page still loading: the app's bar stays, the rest is blank with a progress bar; taps do nothing."""
    height = ctx.viewport_height
    bar = [e for e in ctx.app.view(ctx) if e.fixed and e.box.y1 <= 64]
    top = max((e.box.y1 for e in bar), default=0.0)
    remaining = float(ctx.frame.get("loading_until", 0.0)) - ctx.now
    progress = max(0.1, min(0.9, 1 - remaining / 4))
    blank = Box(0, top, DP_WIDTH, height)
    return [
        *bar,
        Element(
            id="system/loading_page",
            box=blank,
            kind="bar",
            fill=Palette.SURFACE,
            fixed=True,
            on_tap=lambda: None,
        ),
        Element(
            id="system/loading_bar",
            box=Box(0, top, DP_WIDTH, top + 4),
            kind="progress",
            value=progress,
            fixed=True,
        ),
        Element(
            id="system/loading_text",
            box=Box(0, height / 2 - 20, DP_WIDTH, height / 2 + 20),
            text="Loading…",
            colour=Palette.MUTED,
            align="centre",
            fixed=True,
        ),
    ]
