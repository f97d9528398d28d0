"""What every shop page shares: the sticky header, the cookie banner, product photos, prices and stars."""

from __future__ import annotations

import colorsys
from collections.abc import Callable
from functools import cache

from distrl.sim.ui import DP_WIDTH, Box, Colour, Element
from distrl.sim.web.browser import BAR_HEIGHT, Browser
from distrl.sim.web.catalogue import Product
from distrl.sim.web.route import Route
from distrl.sim.web.shops import Shop, rating
from distrl.sim.web.text import clip, stable, tail
from distrl.sim.web.widgets import band, button, card, logo, text

__all__ = [
    "HEADER_HEIGHT",
    "PAGE",
    "WHITE",
    "background",
    "cookie_banner",
    "delivery",
    "header",
    "items_text",
    "money",
    "on_colour",
    "photo",
    "stars",
]

HEADER_HEIGHT = 108.0
"""Height of a site's sticky header (logo row and search row) below the browser bar."""

PAGE: Colour = (242, 243, 245)
WHITE: Colour = (255, 255, 255)


def on_colour(colour: Colour) -> Colour:
    """Text colour that reads on ``colour``."""
    r, g, b = colour
    return (17, 17, 17) if 0.299 * r + 0.587 * g + 0.114 * b > 160 else WHITE


def items_text(count: int) -> str:
    return "1 item" if count == 1 else f"{count} items"


def money(shop: Shop, amount: float) -> str:
    return f"US ${amount:,.2f}" if shop.key == "ebay" else f"${amount:,.2f}"


def header(shop: Shop, route: Route, browser: Browser) -> list[Element]:
    top = BAR_HEIGHT
    key = shop.key
    field = f"web/{key}/search"
    out = [
        band(f"web/{key}/header", top, top + HEADER_HEIGHT, shop.header, fixed=True),
        Element(
            id=f"web/{key}/menu",
            box=Box(6, top + 6, 46, top + 46),
            kind="icon",
            icon="menu",
            colour=shop.on_header,
            fixed=True,
        ),
    ]

    def home() -> None:
        browser.go(shop.home_url)

    if key == "bestbuy":
        out.append(
            card("web/bestbuy/tag", Box(52, top + 9, 160, top + 43), fill=(255, 224, 0), radius=3, fixed=True)
        )
        out += logo(f"web/{key}/logo", shop.logo, 60, top + 11, 21, fixed=True, on_tap=home)
    else:
        out += logo(f"web/{key}/logo", shop.logo, 54, top + 6, 28, fixed=True, on_tap=home)
    if key == "costco":
        out.append(
            text(
                "web/costco/wholesale",
                Box(56, top + 40, 160, top + 54),
                "WHOLESALE",
                size=10,
                colour=(0, 93, 171),
                bold=True,
                fixed=True,
            )
        )
    count = sum(item.qty for item in browser.cart(shop.domain))
    out.append(
        Element(
            id=f"web/{key}/cart",
            box=Box(DP_WIDTH - 54, top + 4, DP_WIDTH - 10, top + 48),
            kind="icon",
            icon="cart",
            colour=shop.on_header,
            on_tap=lambda: browser.go(shop.cart_url),
            fixed=True,
        )
    )
    if count:
        out.append(
            Element(
                id=f"web/{key}/cart_count",
                box=Box(DP_WIDTH - 28, top + 4, DP_WIDTH - 8, top + 24),
                kind="icon",
                icon=str(min(count, 99)),
                fill=(229, 50, 56),
                colour=WHITE,
                radius=10,
                fixed=True,
            )
        )
    typed = browser.field(field)
    shown = tail(typed) if browser.focused == field or typed else clip(route.query, 80)
    button = (255, 194, 32) if shop.accent == shop.header else shop.accent

    def submit(value: str) -> None:
        if value.strip():
            browser.go(shop.search_url(value))

    out.append(
        Element(
            id=field,
            box=Box(10, top + 56, DP_WIDTH - 62, top + 100),
            text=shown,
            hint=f"Search {shop.label}",
            kind="field",
            radius=22 if key in ("ebay", "walmart") else 6,
            on_tap=lambda: browser.edit(field),
            on_submit=submit,
            fixed=True,
        )
    )
    out.append(
        Element(
            id=f"web/{key}/search_button",
            box=Box(DP_WIDTH - 56, top + 56, DP_WIDTH - 10, top + 100),
            kind="icon",
            icon="search",
            fill=button,
            colour=on_colour(button),
            radius=22 if key in ("ebay", "walmart") else 6,
            on_tap=lambda: submit(browser.field(field)),
            fixed=True,
        )
    )
    return out


def cookie_banner(shop: Shop, browser: Browser) -> list[Element]:
    key = shop.key
    bottom = browser.viewport
    y = bottom - 178
    return [
        Element(
            id=f"web/{key}/cookies",
            box=Box(0, y, DP_WIDTH, bottom),
            kind="bar",
            fill=(32, 33, 36),
            fixed=True,
            on_tap=lambda: None,
        ),
        text(
            f"web/{key}/cookies/text",
            Box(16, y + 14, DP_WIDTH - 16, y + 110),
            f"We value your privacy. {shop.label} and its partners use cookies to personalise content "
            "and ads and to analyse traffic. Accept all cookies, or reject the optional ones.",
            size=13,
            colour=(220, 220, 224),
            lines=4,
            fixed=True,
        ),
        button(
            f"web/{key}/cookies/reject",
            Box(16, y + 120, 196, y + 164),
            "Reject all",
            lambda: browser.answer_cookies(shop.domain, False),
            fill=(60, 64, 67),
            colour=WHITE,
            radius=6,
            fixed=True,
        ),
        button(
            f"web/{key}/cookies/accept",
            Box(208, y + 120, DP_WIDTH - 16, y + 164),
            "Accept all cookies",
            lambda: browser.answer_cookies(shop.domain, True),
            fill=shop.accent,
            colour=on_colour(shop.accent),
            radius=6,
            fixed=True,
        ),
    ]


def background(key: str, top: float, bottom: float) -> Element:
    """The grey page behind a shop's cards, from ``top`` to ``bottom``."""
    return band(f"web/{key}/page", top, bottom, PAGE)


@cache
def photo_colour(brand: str, line: str, slug: str) -> Colour:
    """A hue per model line; variants (colours, sizes) differ in shade."""
    h, v = stable("photo", brand, line), stable("shade", slug)
    r, g, b = colorsys.hsv_to_rgb((h % 360) / 360, 0.3 + v % 40 / 100, 0.5 + (v >> 9) % 40 / 100)
    return (round(r * 255), round(g * 255), round(b * 255))


def photo(
    element_id: str, product: Product, box: Box, on_tap: Callable[[], None] | None = None
) -> list[Element]:
    """A product shot: a tile in the product's colour with its brand's initial."""
    inset = min(box.width, box.height) * 0.08
    return [
        Element(
            id=element_id,
            box=Box(box.x0 + inset, box.y0 + inset, box.x1 - inset, box.y1 - inset),
            kind="icon",
            icon=product.brand[:1],
            fill=photo_colour(product.brand, product.line, product.slug),
            colour=WHITE,
            radius=inset * 1.5,
            on_tap=on_tap,
        )
    ]


def stars(shop: Shop, product: Product, *, short: bool = False) -> str:
    stars, reviews = rating(shop, product)
    return (
        f"{stars:.1f} stars ({reviews:,})" if short else f"{stars:.1f} out of 5 stars ({reviews:,} reviews)"
    )


def delivery(shop: Shop, product: Product) -> str:
    return _delivery_note(shop.key, product.slug)


@cache
def _delivery_note(key: str, slug: str) -> str:
    h = stable("ship", key, slug)
    return {
        "ebay": ("Free shipping", "+$9.99 shipping", "Free returns")[h % 3],
        "newegg": ("Free Shipping", "$4.99 Shipping", "Sold by Newegg")[h % 3],
        "bestbuy": ("Get it by Tue, Oct 17", "Pick up today", "Free shipping")[h % 3],
        "walmart": ("Arrives in 2 days", "Pickup today", "Delivery tomorrow")[h % 3],
        "costco": ("Delivery included", "Members only", "Online only")[h % 3],
    }[key]
