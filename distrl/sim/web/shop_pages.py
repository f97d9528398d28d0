"""The shopping sites' pages: home, search results, product, cart, and "page not found".

Every site has a sticky header in its own colours (logo, cart with a count, search box) and its own
layout: eBay, Newegg and Best Buy list results one per row, Walmart and Costco in a grid of two
columns (Walmart with a quick "+ Add" button). A results page may open with a sponsored entry above
the real ones (``Browser.ad``), and a site may hold a cookie banner at the bottom of the screen until
it is answered. Element ids are ``web/<site key>/...``: ``search`` (the search field), ``cart`` (the
header's cart), ``result/<i>`` (the i-th real result), ``ad`` (the sponsored entry), ``add_to_cart``,
``cart/remove/<i>``, ``cookies/accept``.
"""

from __future__ import annotations

from functools import cache

from distrl.sim.ui import DP_WIDTH, Box, Element, Palette
from distrl.sim.web.browser import BAR_HEIGHT, Browser
from distrl.sim.web.catalogue import CATEGORIES, PRODUCTS, Product, by_slug
from distrl.sim.web.route import Route
from distrl.sim.web.shop_look import (
    HEADER_HEIGHT,
    WHITE,
    background,
    cookie_banner,
    delivery,
    header,
    items_text,
    money,
    on_colour,
    photo,
    stars,
)
from distrl.sim.web.shops import SHOPS, Shop, price, search, sponsored
from distrl.sim.web.text import stable
from distrl.sim.web.widgets import band, button, card, empty_state, text, title_row, wide_button

__all__ = ["render"]

_DEPARTMENTS = ("Laptops", "Headphones", "TVs", "Phones", "Gaming", "Cameras")


def render(route: Route, browser: Browser) -> list[Element]:
    shop = SHOPS[route.domain]
    body: list[Element]
    top = BAR_HEIGHT + HEADER_HEIGHT
    if route.kind == "shop_search":
        body = _results(shop, route, browser, top)
    elif route.kind == "product":
        found = by_slug(route.product)
        body = _product(shop, found, browser, top) if found is not None else _missing(shop, browser, top)
    elif route.kind == "cart":
        body = _cart(shop, browser, top)
    elif route.kind == "shop_home":
        body = _home(shop, browser, top)
    else:
        body = _missing(shop, browser, top)
    out = [*body, *header(shop, route, browser)]
    if browser.cookie_banner(shop.domain):
        out += cookie_banner(shop, browser)
    return out


def _results(shop: Shop, route: Route, browser: Browser, top: float) -> list[Element]:
    key = shop.key
    found = search(shop.domain, route.query)
    count = {
        "ebay": f"{len(found) * 137:,}+ results for {route.query}",
        "newegg": f'{len(found)} items found for "{route.query}"',
        "bestbuy": f'{len(found)} results for "{route.query}"',
        "walmart": f'Results for "{route.query}" ({len(found)})',
        "costco": f'Showing {len(found)} results for "{route.query}"',
    }[key]
    y = top + 8
    out: list[Element] = [
        text(f"web/{key}/count", Box(12, y, DP_WIDTH - 12, y + 26), count, size=15, bold=True),
    ]
    y += 32
    out.append(
        Element(
            id=f"web/{key}/sort",
            box=Box(12, y, 232, y + 32),
            text="Sort: Best Match   |   Filter",
            kind="field",
            radius=16,
            size=13,
            align="centre",
        )
    )
    y += 44
    entries: list[tuple[str, Product, bool]] = []
    if browser.ad:
        entries.append((f"web/{key}/ad", sponsored(shop.domain, route.query), True))
    entries += [(f"web/{key}/result/{i}", product, False) for i, product in enumerate(found)]
    cards: list[Element] = []
    if shop.layout == "grid":
        width = (DP_WIDTH - 24) / 2
        for n, (element_id, product, ad) in enumerate(entries):
            row, col = divmod(n, 2)
            cards += _grid_cell(
                shop, browser, element_id, product, ad, 8 + col * (width + 8), y + row * 308, width
            )
        y += 308 * ((len(entries) + 1) // 2)
    else:
        for element_id, product, ad in entries:
            cards += _list_row(shop, browser, element_id, product, ad, y)
            y += 134
    cards.append(
        text(
            f"web/{key}/end",
            Box(12, y + 4, DP_WIDTH - 12, y + 40),
            "Page 1 of 1   |   Back to top",
            size=14,
            colour=Palette.MUTED,
            align="centre",
        )
    )
    return [background(key, top, y + 60), *out, *cards]


def _list_row(
    shop: Shop, browser: Browser, element_id: str, product: Product, ad: bool, y: float
) -> list[Element]:
    def open_page() -> None:
        browser.go(shop.product_url(product))

    x = 132.0
    return [
        card(element_id, Box(8, y, DP_WIDTH - 8, y + 126), fill=WHITE, radius=8, on_tap=open_page),
        *photo(f"{element_id}/image", product, Box(14, y + 10, 124, y + 116), open_page),
        text(
            f"{element_id}/title",
            Box(x, y + 8, DP_WIDTH - 16, y + 50),
            product.title,
            size=15,
            lines=2,
            colour=(0, 84, 163) if shop.key == "bestbuy" else Palette.TEXT,
        ),
        text(
            f"{element_id}/price",
            Box(x, y + 56, DP_WIDTH - 16, y + 84),
            money(shop, price(shop, product)),
            size=20,
            bold=True,
            colour=shop.price_colour,
        ),
        text(
            f"{element_id}/note",
            Box(x, y + 90, DP_WIDTH - 16, y + 112),
            "Sponsored" if ad else f"{stars(shop, product, short=True)}  |  {delivery(shop, product)}",
            size=12,
            colour=Palette.TEXT if ad else Palette.MUTED,
            bold=ad,
        ),
    ]


def _grid_cell(
    shop: Shop,
    browser: Browser,
    element_id: str,
    product: Product,
    ad: bool,
    x: float,
    y: float,
    width: float,
) -> list[Element]:
    def open_page() -> None:
        browser.go(shop.product_url(product))

    def quick_add() -> None:
        browser.add_to_cart(shop.domain, product.slug)
        browser.toast("Added to cart")

    out = [
        card(element_id, Box(x, y, x + width, y + 300), fill=WHITE, radius=10, on_tap=open_page),
        *photo(f"{element_id}/image", product, Box(x + 8, y + 8, x + width - 8, y + 140), open_page),
        text(
            f"{element_id}/price",
            Box(x + 10, y + 146, x + width - 10, y + 174),
            money(shop, price(shop, product)),
            size=19,
            bold=True,
            colour=shop.price_colour,
        ),
        text(
            f"{element_id}/title",
            Box(x + 10, y + 176, x + width - 10, y + 232),
            product.title,
            size=14,
            lines=3,
        ),
    ]
    if ad:
        out.append(
            text(
                f"{element_id}/note",
                Box(x + 10, y + 256, x + width - 10, y + 276),
                "Sponsored",
                size=12,
                bold=True,
            )
        )
    elif shop.key == "walmart":
        out.append(
            button(
                f"{element_id}/add",
                Box(x + 10, y + 258, x + 90, y + 290),
                "+ Add",
                quick_add,
                fill=shop.accent,
                colour=WHITE,
                size=14,
                radius=16,
            )
        )
    else:
        out.append(
            text(
                f"{element_id}/note",
                Box(x + 10, y + 256, x + width - 10, y + 276),
                stars(shop, product, short=True),
                size=12,
                colour=Palette.MUTED,
            )
        )
    return out


def _product(shop: Shop, product: Product, browser: Browser, top: float) -> list[Element]:
    key = shop.key
    y = top + 10
    department = CATEGORIES[product.category][0]

    def add() -> None:
        browser.add_to_cart(shop.domain, product.slug)
        browser.toast("Added to cart" if key != "costco" else "Item added to cart")

    out: list[Element] = [
        text(
            f"web/{key}/crumbs",
            Box(12, y, DP_WIDTH - 12, y + 20),
            f"Electronics > {department}",
            size=13,
            colour=Palette.PRIMARY if key != "ebay" else Palette.MUTED,
        ),
        text(
            f"web/{key}/title",
            Box(12, y + 24, DP_WIDTH - 12, y + 96),
            product.title,
            size=19,
            bold=True,
            lines=3,
        ),
        text(
            f"web/{key}/rating",
            Box(12, y + 98, DP_WIDTH - 12, y + 118),
            stars(shop, product),
            size=13,
            colour=Palette.MUTED,
        ),
        *photo(f"web/{key}/photo", product, Box(48, y + 126, DP_WIDTH - 48, y + 346)),
        text(
            f"web/{key}/price",
            Box(12, y + 356, DP_WIDTH - 12, y + 392),
            money(shop, price(shop, product)),
            size=28,
            bold=True,
            colour=shop.price_colour,
        ),
        text(
            f"web/{key}/delivery",
            Box(12, y + 394, DP_WIDTH - 12, y + 416),
            delivery(shop, product),
            size=14,
            colour=Palette.MUTED,
        ),
    ]
    y += 426
    if key == "ebay":
        out.append(
            wide_button(
                "web/ebay/buy_now",
                y,
                "Buy It Now",
                lambda: browser.toast("Sign in to buy"),
                fill=shop.accent,
                colour=WHITE,
            )
        )
        y += 58
        out.append(
            wide_button(
                "web/ebay/add_to_cart", y, "Add to cart", add, fill=(229, 237, 255), colour=shop.accent
            )
        )
    else:
        label = {"newegg": "ADD TO CART", "bestbuy": "Add to Cart", "walmart": "Add to cart"}.get(
            key, "Add to Cart"
        )
        out.append(
            wide_button(
                f"web/{key}/add_to_cart",
                y,
                label,
                add,
                fill=shop.accent,
                colour=on_colour(shop.accent),
                radius=24 if key == "walmart" else 6,
            )
        )
    y += 64
    out.append(title_row(f"web/{key}/about", y, "About this item", size=17))
    y += 32
    for i, line in enumerate(_bullets(product)):
        out.append(
            text(f"web/{key}/bullet/{i}", Box(12, y, DP_WIDTH - 12, y + 44), f"-  {line}", size=14, lines=2)
        )
        y += 48
    return [band(f"web/{key}/page", top, y + 24, WHITE), *out]


def _bullets(product: Product) -> tuple[str, ...]:
    kind = CATEGORIES[product.category][0].lower()
    return (
        f"Genuine {product.brand} {kind}, model {product.line}.",
        "Ships in the manufacturer's retail packaging with all accessories.",
        f"1-year {product.brand} limited warranty; 30-day returns.",
    )


def _cart(shop: Shop, browser: Browser, top: float) -> list[Element]:
    key = shop.key
    items = [(item, by_slug(item.product)) for item in browser.cart(shop.domain)]
    lines = [(item, product) for item, product in items if product is not None]
    title = {"ebay": "Shopping cart", "newegg": "Shopping Cart", "bestbuy": "Your Cart"}.get(key, "Cart")
    y = top + 10
    count = sum(item.qty for item, _ in lines)
    out: list[Element] = [
        title_row(f"web/{key}/cart_title", y, f"{title} ({items_text(count)})", size=22, height=34)
    ]
    y += 46
    if not lines:
        out += empty_state(
            text(
                f"web/{key}/cart_empty",
                Box(12, y + 20, DP_WIDTH - 12, y + 50),
                "Your cart is empty",
                size=18,
                align="centre",
            ),
            (f"web/{key}/cart_hint", "Looks like you haven't added anything yet. Find something you like!"),
            (f"web/{key}/continue", "Start shopping", lambda: browser.go(shop.home_url)),
            fill=shop.accent,
            colour=on_colour(shop.accent),
            hint_size=14,
            gaps=(4, 14),
        )
        return [background(key, top, y + 200), *out]
    total = 0.0
    for i, (item, product) in enumerate(lines):
        cost = price(shop, product)
        total += cost * item.qty

        def remove(slug: str = product.slug) -> None:
            browser.remove_from_cart(shop.domain, slug)
            browser.toast("Item removed")

        out += [
            card(f"web/{key}/cart/item/{i}", Box(8, y, DP_WIDTH - 8, y + 140), fill=WHITE, radius=8),
            *photo(f"web/{key}/cart/item/{i}/image", product, Box(16, y + 14, 100, y + 98)),
            text(
                f"web/{key}/cart/item/{i}/title",
                Box(112, y + 8, DP_WIDTH - 16, y + 50),
                product.title,
                size=15,
                lines=2,
            ),
            text(
                f"web/{key}/cart/item/{i}/price",
                Box(112, y + 54, DP_WIDTH - 16, y + 80),
                money(shop, cost),
                size=18,
                bold=True,
            ),
            text(f"web/{key}/cart/item/{i}/qty", Box(112, y + 84, 220, y + 106), f"Qty: {item.qty}", size=14),
            button(
                f"web/{key}/cart/remove/{i}",
                Box(DP_WIDTH - 128, y + 92, DP_WIDTH - 16, y + 130),
                "Remove",
                remove,
                fill=WHITE,
                colour=Palette.PRIMARY,
                radius=6,
                size=14,
            ),
        ]
        y += 148
    out += [
        text(
            f"web/{key}/subtotal",
            Box(12, y + 8, DP_WIDTH - 12, y + 36),
            f"Subtotal ({items_text(count)}): {money(shop, total)}",
            size=18,
            bold=True,
        ),
        wide_button(
            f"web/{key}/checkout",
            y + 48,
            "Go to checkout",
            lambda: browser.toast("Sign in to check out"),
            fill=shop.accent,
            colour=on_colour(shop.accent),
        ),
    ]
    return [background(key, top, y + 130), *out]


def _home(shop: Shop, browser: Browser, top: float) -> list[Element]:
    key = shop.key
    y = top + 10
    out: list[Element] = [
        card(f"web/{key}/banner", Box(8, y, DP_WIDTH - 8, y + 112), fill=shop.accent, radius=12),
        text(
            f"web/{key}/banner/title",
            Box(24, y + 14, DP_WIDTH - 24, y + 50),
            "Deals of the Day",
            size=24,
            bold=True,
            colour=on_colour(shop.accent),
        ),
        text(
            f"web/{key}/banner/text",
            Box(24, y + 54, DP_WIDTH - 24, y + 98),
            f"{shop.tagline}. Up to 40% off laptops, headphones and TVs.",
            size=14,
            lines=2,
            colour=on_colour(shop.accent),
        ),
    ]
    y += 126
    out.append(title_row(f"web/{key}/departments", y, "Shop by category", size=18))
    y += 34
    width = (DP_WIDTH - 32) / 3
    for i, name in enumerate(_DEPARTMENTS):
        row, col = divmod(i, 3)
        box = Box(8 + col * (width + 8), y + row * 48, 8 + col * (width + 8) + width, y + row * 48 + 40)

        def browse(query: str = name.lower()) -> None:
            browser.go(shop.search_url(query))

        out.append(
            Element(
                id=f"web/{key}/category/{i}",
                box=box,
                text=name,
                kind="card",
                fill=WHITE,
                radius=20,
                size=14,
                align="centre",
                on_tap=browse,
            )
        )
    y += 104
    out.append(title_row(f"web/{key}/trending", y, "Trending now", size=18))
    y += 34
    picks = _trending(key)
    width = (DP_WIDTH - 24) / 2
    for i, product in enumerate(picks):
        row, col = divmod(i, 2)
        x, cy = 8 + col * (width + 8), y + row * 230

        def open_page(p: Product = product) -> None:
            browser.go(shop.product_url(p))

        out += [
            card(
                f"web/{key}/deal/{i}",
                Box(x, cy, x + width, cy + 222),
                fill=WHITE,
                radius=10,
                on_tap=open_page,
            ),
            *photo(
                f"web/{key}/deal/{i}/image", product, Box(x + 8, cy + 8, x + width - 8, cy + 120), open_page
            ),
            text(
                f"web/{key}/deal/{i}/price",
                Box(x + 10, cy + 124, x + width - 10, cy + 150),
                money(shop, price(shop, product)),
                size=18,
                bold=True,
                colour=shop.price_colour,
            ),
            text(
                f"web/{key}/deal/{i}/title",
                Box(x + 10, cy + 152, x + width - 10, cy + 212),
                product.title,
                size=14,
                lines=3,
            ),
        ]
    y += 3 * 230
    return [background(key, top, y + 20), *out]


@cache
def _trending(key: str) -> tuple[Product, ...]:
    return tuple(sorted(PRODUCTS, key=lambda p: stable("home", key, p.slug))[:6])


def _missing(shop: Shop, browser: Browser, top: float) -> list[Element]:
    key = shop.key
    y = top + 40
    return empty_state(
        text(
            f"web/{key}/missing",
            Box(24, y, DP_WIDTH - 24, y + 64),
            "Sorry, we can't find that page.",
            size=22,
            bold=True,
            lines=2,
            align="centre",
        ),
        (f"web/{key}/missing_hint", "The item may no longer be available, or the link may be wrong."),
        (f"web/{key}/home", "Go to the home page", lambda: browser.go(shop.home_url)),
        fill=shop.accent,
        colour=on_colour(shop.accent),
    )
