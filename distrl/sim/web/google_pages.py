"""Google's pages: the home page with its search box, and the results page with its answer box."""

from __future__ import annotations

from distrl.sim.ui import DP_WIDTH, Box, Colour, Element, Palette
from distrl.sim.web.browser import BAR_HEIGHT, Browser
from distrl.sim.web.google import answer, results
from distrl.sim.web.route import Route, google_search_url
from distrl.sim.web.text import clip, tail
from distrl.sim.web.widgets import band, button, card, logo, text

__all__ = ["FIELD", "render"]

FIELD = "google/search"
"""The id of Google's search box (a text field)."""

LOGO: tuple[tuple[str, Colour], ...] = (
    ("G", (66, 133, 244)),
    ("o", (234, 67, 53)),
    ("o", (251, 188, 5)),
    ("g", (66, 133, 244)),
    ("l", (52, 168, 83)),
    ("e", (234, 67, 53)),
)
_LINK: Colour = (26, 13, 171)
_GREY: Colour = (236, 238, 241)
_CHIP: Colour = (248, 249, 250)


def render(route: Route, browser: Browser) -> list[Element]:
    if route.kind == "google_search":
        return _results(route, browser)
    return _home(browser)


def _search_box(browser: Browser, y: float, query: str, *, hint: str) -> Element:
    typed = browser.field(FIELD)
    shown = tail(typed) if browser.focused == FIELD or typed else clip(query, 80)

    def submit(value: str) -> None:
        if value.strip():
            browser.go(google_search_url(value))

    return Element(
        id=FIELD,
        box=Box(16, y, DP_WIDTH - 16, y + 48),
        text=shown,
        hint=hint,
        kind="field",
        radius=24,
        size=16,
        on_tap=lambda: browser.edit(FIELD),
        on_submit=submit,
    )


def _sign_in(browser: Browser, y: float) -> Element:
    return button(
        "google/sign_in",
        Box(DP_WIDTH - 96, y, DP_WIDTH - 12, y + 36),
        "Sign in",
        lambda: browser.toast("Signing in is not available"),
        size=14,
        radius=6,
    )


def _home(browser: Browser) -> list[Element]:
    top = BAR_HEIGHT
    height = browser.viewport

    def lucky() -> None:
        value = browser.field(FIELD).strip()
        if value:
            browser.go(google_search_url(value))

    out = [
        text("google/gmail", Box(16, top + 14, 80, top + 44), "Gmail", size=14),
        text("google/images", Box(84, top + 14, 160, top + 44), "Images", size=14),
        _sign_in(browser, top + 12),
        *logo("google/logo", LOGO, 0, top + 140, 52, centre=True),
        _search_box(browser, top + 236, "", hint="Search Google or type a URL"),
    ]
    for i, label in enumerate(("Google Search", "I'm Feeling Lucky")):
        x = DP_WIDTH / 2 - 152 + i * 160
        out.append(
            button(
                f"google/button/{i}",
                Box(x, top + 304, x + 144, top + 344),
                label,
                lucky,
                fill=_CHIP,
                size=14,
                radius=6,
            )
        )
    out.append(
        text(
            "google/offered",
            Box(16, top + 370, DP_WIDTH - 16, top + 394),
            "Google offered in: Espanol  Francais  Deutsch",
            size=13,
            colour=Palette.MUTED,
            align="centre",
        )
    )
    foot = max(top + 420, height - 96)
    out += [
        band("google/footer", foot, foot + 96, _CHIP),
        text(
            "google/country",
            Box(16, foot + 8, DP_WIDTH - 16, foot + 40),
            "United States",
            size=14,
            colour=Palette.MUTED,
        ),
        text(
            "google/links",
            Box(16, foot + 48, DP_WIDTH - 16, foot + 80),
            "Privacy    Terms    Settings    Advertising    Business",
            size=13,
            colour=Palette.MUTED,
        ),
    ]
    return out


def _results(route: Route, browser: Browser) -> list[Element]:
    top = BAR_HEIGHT
    out: list[Element] = [
        *logo("google/logo", LOGO, 16, top + 10, 26),
        _sign_in(browser, top + 8),
        _search_box(browser, top + 52, route.query, hint="Search"),
    ]
    x = 16.0
    for i, tab in enumerate(("All", "Images", "News", "Videos", "Shopping", "Maps")):
        width = 14 + len(tab) * 8.5
        active = i == 0
        out.append(
            text(
                f"google/tab/{i}",
                Box(x, top + 108, x + width, top + 140),
                tab,
                size=14,
                colour=Palette.PRIMARY if active else Palette.MUTED,
                bold=active,
                align="centre",
            )
        )
        if active:
            out.append(
                Element(
                    id="google/tab/active",
                    box=Box(x, top + 139, x + width, top + 142),
                    kind="bar",
                    fill=Palette.PRIMARY,
                )
            )
        x += width + 6
    y = top + 150
    found = results(route.query)
    body_end = y + 8 + 300 * (answer(route.query, browser.now) is not None) + 124 * len(found) + 80
    out.append(band("google/page", y, body_end, _GREY))
    y += 8
    box = answer(route.query, browser.now)
    if box is not None:
        height = 112 + 24 * len(box.details)
        out += [
            card("google/answer", Box(8, y, DP_WIDTH - 8, y + height), fill=Palette.SURFACE, radius=14),
            text(
                "google/answer/heading",
                Box(24, y + 12, DP_WIDTH - 24, y + 36),
                box.heading,
                size=14,
                colour=Palette.MUTED,
            ),
            text(
                "google/answer/value", Box(24, y + 40, DP_WIDTH - 24, y + 92), box.value, size=36, bold=True
            ),
        ]
        for i, line in enumerate(box.details):
            out.append(
                text(
                    f"google/answer/detail/{i}",
                    Box(24, y + 98 + 24 * i, DP_WIDTH - 24, y + 122 + 24 * i),
                    line,
                    size=15,
                )
            )
        y += height + 10
    for i, result in enumerate(found):

        def follow(url: str = result.url) -> None:
            browser.go(url)

        crumbs = " > ".join(part for part in result.url.split("://", 1)[-1].split("?")[0].split("/") if part)
        out += [
            card(
                f"google/result/{i}",
                Box(8, y, DP_WIDTH - 8, y + 114),
                fill=Palette.SURFACE,
                radius=14,
                on_tap=follow,
            ),
            text(
                f"google/result/{i}/site",
                Box(24, y + 10, DP_WIDTH - 24, y + 28),
                crumbs,
                size=12,
                colour=Palette.MUTED,
            ),
            text(
                f"google/result/{i}/title",
                Box(24, y + 30, DP_WIDTH - 24, y + 56),
                result.title,
                size=18,
                colour=_LINK,
            ),
            text(
                f"google/result/{i}/snippet",
                Box(24, y + 60, DP_WIDTH - 24, y + 104),
                result.snippet,
                size=14,
                colour=Palette.MUTED,
                lines=2,
            ),
        ]
        y += 124
    out.append(
        text(
            "google/pages",
            Box(16, y + 10, DP_WIDTH - 16, y + 50),
            "1   2   3   4   5      Next >",
            size=16,
            colour=_LINK,
            align="centre",
        )
    )
    return out
