"""Web pages as screens: what a URL looks like, given the browser that shows it.

``render(route, browser)`` draws the page a ``Route`` names as ``Element``s below the browser's own
bar. Pages never touch the phone: everything they read or change goes through the ``Browser``
protocol (``browser``: navigate, text fields, the carts, the cookie banners), which the Chrome app
implements over its JSON data. Google's pages are in ``google_pages``, the shops' in ``shop_pages``;
this module holds the pages of every other site; what pages are drawn with is in ``widgets``.
"""

from __future__ import annotations

from distrl.sim.ui import DP_WIDTH, Box, Colour, Element, Palette
from distrl.sim.web import google_pages, shop_pages
from distrl.sim.web.browser import BAR_HEIGHT, Browser
from distrl.sim.web.route import Route, display_url
from distrl.sim.web.text import stable, title_case
from distrl.sim.web.widgets import band, text

__all__ = ["generic_page", "render"]


def render(route: Route, browser: Browser) -> list[Element]:
    """The elements of the page ``route`` names, from ``BAR_HEIGHT`` down."""
    if route.kind in ("google_home", "google_search"):
        return google_pages.render(route, browser)
    if route.kind in ("shop_home", "shop_search", "product", "cart", "missing"):
        return shop_pages.render(route, browser)
    return generic_page(route, browser)


_SENTENCES = (
    "{T} has been covered widely over the past year, with new developments every few weeks.",
    "Readers looking for the essentials will find the key facts summarised below.",
    "Experts we spoke to agree that the details matter more than the headlines.",
    "Prices, availability and opening hours can change, so check before you go.",
    "Our editors update this page regularly as new information comes in.",
    "Community members have shared hundreds of tips and photos about {t}.",
    "See the related links at the bottom of the page for more background.",
    "This guide was last reviewed on October 12, 2023.",
)


def generic_page(route: Route, browser: Browser) -> list[Element]:
    """Any site the sim does not model: a coloured header with the site's name, a headline, text."""
    del browser
    host = display_url(route.url).split("/", 1)[0]
    site = host.split(".")[-2] if host.count(".") else host
    h = stable("site", route.domain)
    hue = _site_colour(h)
    top = BAR_HEIGHT
    words = [w for w in route.path.replace("_", " ").replace("-", " ").replace("+", " ").split("/") if w]
    topic = title_case(words[-1].split("?")[0]) if words else f"Welcome to {host}"
    if "?" in route.url and "=" in route.url:
        topic = title_case(route.url.split("=", 1)[1].split("&")[0].replace("+", " ").replace("%20", " "))
    out = [
        band("page/header", top, top + 56, hue),
        text(
            "page/site",
            Box(16, top, DP_WIDTH - 60, top + 56),
            site.title(),
            size=22,
            bold=True,
            colour=(255, 255, 255),
        ),
        Element(
            id="page/menu",
            box=Box(DP_WIDTH - 52, top + 8, DP_WIDTH - 12, top + 48),
            kind="icon",
            icon="menu",
            colour=(255, 255, 255),
        ),
        text("page/title", Box(16, top + 72, DP_WIDTH - 16, top + 148), topic, size=24, bold=True, lines=2),
        text(
            "page/byline",
            Box(16, top + 150, DP_WIDTH - 16, top + 172),
            f"{host}  |  Updated Oct 2023",
            size=13,
            colour=Palette.MUTED,
        ),
        Element(id="page/image", box=Box(16, top + 184, DP_WIDTH - 16, top + 364), kind="image"),
    ]
    y = top + 380
    t = topic.lower()
    for i in range(6):
        sentence = _SENTENCES[(h + i) % len(_SENTENCES)].format(T=topic, t=t)
        out.append(text(f"page/p/{i}", Box(16, y, DP_WIDTH - 16, y + 66), sentence, lines=3, size=16))
        y += 76
    return out


def _site_colour(h: int) -> Colour:
    palette: tuple[Colour, ...] = (
        (25, 103, 210),
        (196, 43, 28),
        (15, 118, 110),
        (88, 28, 135),
        (30, 41, 59),
        (180, 83, 9),
        (22, 101, 52),
    )
    return palette[h % len(palette)]
