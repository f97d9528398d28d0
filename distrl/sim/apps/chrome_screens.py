"""Chrome's own screens: the toolbar, address suggestions, the menu, the new tab page, history, errors.

Each takes Chrome's context and ``go``, the function that opens a URL as a new page (``chrome.navigate``).
"""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import Context
from distrl.sim.ui import DP_WIDTH, Box, Element, Palette
from distrl.sim.web.browser import BAR_HEIGHT
from distrl.sim.web.google_pages import LOGO
from distrl.sim.web.route import HISTORY_URL, Route, display_url, parse, resolve
from distrl.sim.web.text import clip, tail
from distrl.sim.web.widgets import band, card, error_screen, logo, text, title_row

__all__ = [
    "URL_FIELD",
    "bar",
    "edit_url",
    "error_page",
    "history_page",
    "menu",
    "new_tab_page",
    "offline_page",
    "suggestions",
]

Go = Callable[[str], None]

URL_FIELD = "chrome/url"
"""The id of the address bar (a text field)."""
_OMNIBOX: tuple[int, int, int] = (241, 243, 244)


def bar(ctx: Context, shown: str, go: Go) -> list[Element]:
    typed = ctx.field(URL_FIELD)
    focused = ctx.focused == URL_FIELD

    def submit(value: str) -> None:
        url = resolve(value)
        if url is not None:
            go(url)

    def toggle_menu() -> None:
        ctx.args["menu"] = not ctx.args.get("menu")

    return [
        band("chrome/bar", 0, BAR_HEIGHT, Palette.SURFACE, fixed=True),
        Element(
            id="chrome/home",
            box=Box(4, 8, 44, 48),
            kind="icon",
            icon="home",
            colour=Palette.MUTED,
            on_tap=lambda: ctx.push("main"),
            fixed=True,
        ),
        Element(
            id=URL_FIELD,
            box=Box(50, 8, DP_WIDTH - 98, 48),
            kind="field",
            fill=_OMNIBOX,
            radius=20,
            text=tail(typed) if focused else clip(shown, 80),
            hint="Search or type web address",
            size=15,
            on_tap=lambda: edit_url(ctx),
            on_submit=submit,
            fixed=True,
        ),
        Element(
            id="chrome/tabs",
            box=Box(DP_WIDTH - 94, 14, DP_WIDTH - 60, 42),
            kind="field",
            text="1",
            size=13,
            radius=5,
            align="centre",
            fixed=True,
        ),
        Element(
            id="chrome/menu",
            box=Box(DP_WIDTH - 56, 8, DP_WIDTH - 12, 48),
            kind="icon",
            icon="menu",
            colour=Palette.MUTED,
            on_tap=toggle_menu,
            fixed=True,
        ),
    ]


def edit_url(ctx: Context) -> None:
    ctx.args["menu"] = False
    ctx.set_field(URL_FIELD, "")
    ctx.focus(URL_FIELD)


def suggestions(ctx: Context, go: Go) -> list[Element]:
    typed = ctx.field(URL_FIELD).strip()
    rows: list[tuple[str, str, str]] = []  # (url, label, detail)
    if typed:
        target = resolve(typed)
        if target is not None:
            is_search = parse(target).kind == "google_search" and not typed.lower().startswith(
                ("http", "www")
            )
            rows.append((target, typed, "Search Google" if is_search else display_url(target)))
    seen = {row[0] for row in rows}
    for url in reversed(ctx.data["history"]):
        if len(rows) >= 6:
            break
        if url in seen or (typed and typed.lower() not in str(url).lower()):
            continue
        seen.add(url)
        rows.append((str(url), display_url(str(url)), "From your history"))
    out = [
        Element(
            id="chrome/suggestions",
            box=Box(0, BAR_HEIGHT, DP_WIDTH, ctx.viewport_height),
            kind="bar",
            fill=Palette.SURFACE,
            on_tap=lambda: None,
            fixed=True,
        )
    ]
    for i, (url, label, detail) in enumerate(rows):
        y = BAR_HEIGHT + 4 + 60 * i

        def follow(url: str = url) -> None:
            ctx.focus(None)
            go(url)

        out += [
            Element(
                id=f"chrome/suggestion/{i}/icon",
                box=Box(12, y + 12, 48, y + 48),
                kind="icon",
                icon="search" if detail == "Search Google" else display_url(url)[:1].upper(),
                fill=None if detail == "Search Google" else _OMNIBOX,
                radius=18,
                colour=Palette.MUTED,
                fixed=True,
            ),
            text(
                f"chrome/suggestion/{i}/label",
                Box(60, y + 6, DP_WIDTH - 16, y + 32),
                label,
                size=16,
                fixed=True,
            ),
            text(
                f"chrome/suggestion/{i}/detail",
                Box(60, y + 32, DP_WIDTH - 16, y + 54),
                detail,
                size=13,
                colour=Palette.MUTED,
                fixed=True,
            ),
            Element(id=f"chrome/suggestion/{i}", box=Box(0, y, DP_WIDTH, y + 60), on_tap=follow, fixed=True),
        ]
    return out


def menu(ctx: Context, go: Go) -> list[Element]:
    def close() -> None:
        ctx.args["menu"] = False

    def new_tab() -> None:
        close()
        ctx.push("main")

    def history() -> None:
        close()
        go(HISTORY_URL)

    items = (("New tab", new_tab), ("History", history), ("Downloads", close), ("Bookmarks", close))
    panel = Box(DP_WIDTH - 220, 8, DP_WIDTH - 8, 16 + 52 * len(items))
    edge = Box(panel.x0 - 1, panel.y0 - 1, panel.x1 + 1, panel.y1 + 2)
    out = [
        Element(
            id="chrome/menu/scrim", box=Box(0, 0, DP_WIDTH, ctx.viewport_height), on_tap=close, fixed=True
        ),
        card("chrome/menu/shadow", edge, fill=Palette.DIVIDER, radius=9, fixed=True),
        card("chrome/menu/card", panel, fill=Palette.SURFACE, radius=8, fixed=True),
    ]
    for i, (label, action) in enumerate(items):
        y = 12 + 52 * i
        out.append(
            Element(
                id=f"chrome/menu/{label.lower().replace(' ', '_')}",
                box=Box(panel.x0 + 20, y, panel.x1, y + 52),
                text=label,
                size=16,
                on_tap=action,
                fixed=True,
            )
        )
    return out


def new_tab_page(ctx: Context, go: Go) -> list[Element]:
    top = BAR_HEIGHT
    out = [
        *logo("ntp/logo", LOGO, 0, top + 90, 44, centre=True),
        Element(
            id="ntp/search",
            box=Box(20, top + 170, DP_WIDTH - 20, top + 222),
            kind="field",
            fill=_OMNIBOX,
            radius=26,
            hint="Search or type web address",
            size=16,
            on_tap=lambda: edit_url(ctx),
        ),
    ]
    hosts: list[str] = []
    for url in reversed(ctx.data["history"]):
        route = parse(str(url))
        if route.kind in ("history", "invalid") or route.domain in hosts:
            continue
        hosts.append(route.domain)
        if len(hosts) == 8:
            break
    width = (DP_WIDTH - 16) / 4
    for i, domain in enumerate(hosts):
        row, col = divmod(i, 4)
        x, y = 8 + col * width, top + 250 + row * 96

        def open_site(domain: str = domain) -> None:
            go(f"https://{domain}/")

        out += [
            Element(
                id=f"ntp/tile/{i}/icon",
                box=Box(x + width / 2 - 24, y + 4, x + width / 2 + 24, y + 52),
                kind="icon",
                icon=domain[:1].upper(),
                fill=_OMNIBOX,
                colour=Palette.TEXT,
                radius=24,
            ),
            text(
                f"ntp/tile/{i}/label",
                Box(x, y + 58, x + width, y + 80),
                domain.split(".")[0].title(),
                size=13,
                align="centre",
            ),
            Element(id=f"ntp/tile/{i}", box=Box(x, y, x + width, y + 88), on_tap=open_site),
        ]
    y = top + 250 + 96 * ((len(hosts) + 3) // 4) + 12
    out.append(title_row("ntp/discover", y, "Discover", size=17, margin=20))
    stories = (
        ("The best laptops of 2023, tested and ranked", "https://www.theverge.com/best-laptops"),
        ("Hurricane season: what to expect this fall", "https://www.nytimes.com/hurricane-season"),
        ("10 easy weeknight dinners", "https://www.allrecipes.com/weeknight-dinners"),
    )
    for i, (title, url) in enumerate(stories):
        cy = y + 36 + i * 120

        def read(url: str = url) -> None:
            go(url)

        out += [
            card(f"ntp/story/{i}", Box(12, cy, DP_WIDTH - 12, cy + 110), radius=14, on_tap=read),
            Element(
                id=f"ntp/story/{i}/image",
                box=Box(DP_WIDTH - 112, cy + 10, DP_WIDTH - 22, cy + 100),
                kind="icon",
                icon="",
                fill=((96, 125, 139), (230, 145, 56), (106, 168, 79))[i],
                radius=10,
            ),
            text(f"ntp/story/{i}/title", Box(26, cy + 12, DP_WIDTH - 124, cy + 72), title, size=16, lines=3),
            text(
                f"ntp/story/{i}/site",
                Box(26, cy + 76, DP_WIDTH - 124, cy + 98),
                display_url(url).split("/")[0],
                size=12,
                colour=Palette.MUTED,
            ),
        ]
    return out


def history_page(ctx: Context, go: Go) -> list[Element]:
    top = BAR_HEIGHT
    out = [title_row("history/title", top + 12, "History", size=24, height=36, margin=16)]
    urls: list[str] = []
    for url in reversed(ctx.data["history"]):
        if url not in urls and parse(str(url)).kind != "history":
            urls.append(str(url))
    if not urls:
        out.append(
            text(
                "history/empty",
                Box(16, top + 70, DP_WIDTH - 16, top + 100),
                "Pages you visit appear here",
                colour=Palette.MUTED,
            )
        )
    for i, url in enumerate(urls[:12]):
        y = top + 60 + 64 * i

        def follow(url: str = url) -> None:
            go(url)

        out += [
            Element(
                id=f"history/entry/{i}/icon",
                box=Box(16, y + 14, 48, y + 46),
                kind="icon",
                icon=display_url(url)[:1].upper(),
                fill=_OMNIBOX,
                colour=Palette.TEXT,
                radius=16,
            ),
            text(
                f"history/entry/{i}/url",
                Box(60, y + 8, DP_WIDTH - 16, y + 52),
                display_url(url),
                size=15,
                lines=2,
            ),
            Element(id=f"history/entry/{i}", box=Box(0, y, DP_WIDTH, y + 60), on_tap=follow),
        ]
    return out


def offline_page() -> list[Element]:
    top = BAR_HEIGHT
    return [
        Element(
            id="offline/icon",
            box=Box(40, top + 110, 96, top + 166),
            kind="icon",
            icon="!",
            fill=Palette.OFF,
            colour=Palette.SURFACE,
            radius=8,
        ),
        *error_screen(
            "offline",
            top,
            title="No internet",
            title_size=24,
            detail="Try: checking the network cables, modem and router; turning off airplane mode; "
            "reconnecting to Wi-Fi.",
            detail_name="try",
            detail_lines=4,
            detail_height=90,
            code="ERR_INTERNET_DISCONNECTED",
        ),
    ]


def error_page(route: Route) -> list[Element]:
    return error_screen(
        "error",
        BAR_HEIGHT,
        title="This site can't be reached",
        title_size=22,
        detail=f"{display_url(route.url)} is not a web address Chrome can open.",
        detail_lines=3,
        detail_height=64,
        code="ERR_INVALID_URL",
    )
