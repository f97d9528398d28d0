"""The shopping sites: their looks, their URLs, their prices, and their search.

Every site sells the whole catalogue (``distrl.sim.web.catalogue``) under its own item numbers, at its
own prices, and ranks search results its own way, so the first entry for "razer thresher" on eBay is
not the first on Newegg. Everything is a pure function of the site and the query: the same search
gives the same list on every phone, which is what lets a success check name "the first entry".

URLs follow each real site's pattern (``https://www.newegg.com/p/pl?d=razer+thresher``); the sim's
own deep links, for task setups, are ``<cart url>?add=<item number>`` (add one of that item to the
cart, then show the cart) and ``<cart url>?clear=1`` (empty the cart).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal
from urllib.parse import quote_plus

from distrl.sim.ui import Colour
from distrl.sim.web.catalogue import PRODUCTS, Product
from distrl.sim.web.text import STOP_WORDS, normalise_query, stable, tokens

__all__ = [
    "SHOPS",
    "Shop",
    "price",
    "rating",
    "search",
    "shop_for_host",
    "sponsored",
]

Layout = Literal["list", "grid"]


@dataclass(frozen=True, kw_only=True)
class Shop:
    """One shopping site."""

    key: str
    """Short name used in element ids (``newegg``)."""
    domain: str
    """The name people type (``newegg.com``); ``current_url`` checks compare it."""
    name: str
    """The brand as its logo writes it (``newegg``, ``BEST BUY``)."""
    label: str
    """The brand in running text (``Newegg``, ``Best Buy``)."""
    host: str
    """Canonical host of its pages (``www.newegg.com``)."""
    cart_url: str
    logo: tuple[tuple[str, Colour], ...]
    """The logo as runs of coloured text."""
    header: Colour
    on_header: Colour
    """Text and icons on the header."""
    accent: Colour
    """Buttons (Add to cart, Search)."""
    price_colour: Colour
    layout: Layout
    search_url: Callable[[str], str]
    product_path: Callable[[str, str], str]
    """``(slug, item number)`` -> the product page's path."""
    product_pattern: re.Pattern[str]
    """Matches a product page's path; group ``code`` is the item number."""
    code: Callable[[int], str]
    """Catalogue index -> the site's item number."""
    search_prefix: str
    """Path of the search page; ``search_param`` holds the query."""
    search_param: str
    tagline: str
    """A line under the header of the home page."""

    def product_url(self, product: Product) -> str:
        return f"https://{self.host}{self.product_path(product.slug, self.code(product.index))}"

    @property
    def home_url(self) -> str:
        return f"https://{self.host}/"

    def cart_add_url(self, product: Product) -> str:
        """The deep link that puts ``product`` in this site's cart (task setups use it)."""
        return f"{self.cart_url}?add={self.code(product.index)}"

    @property
    def cart_clear_url(self) -> str:
        return f"{self.cart_url}?clear=1"

    def product_for_code(self, code: str) -> Product | None:
        return _codes(self.key).get(code)


def _q(query: str) -> str:
    return quote_plus(query.strip())


_WHITE: Colour = (255, 255, 255)

SHOPS: Mapping[str, Shop] = {
    shop.domain: shop
    for shop in (
        Shop(
            key="ebay",
            domain="ebay.com",
            name="eBay",
            label="eBay",
            host="www.ebay.com",
            cart_url="https://cart.ebay.com/",
            logo=(("e", (229, 50, 56)), ("b", (0, 100, 210)), ("a", (245, 175, 2)), ("y", (134, 184, 23))),
            header=(255, 255, 255),
            on_header=(51, 51, 51),
            accent=(48, 101, 223),
            price_colour=(17, 17, 17),
            layout="list",
            search_url=lambda q: f"https://www.ebay.com/sch/i.html?_nkw={_q(q)}",
            product_path=lambda slug, code: f"/itm/{code}",
            product_pattern=re.compile(r"^/itm/(?:[^/]+/)?(?P<code>\d+)$"),
            code=lambda i: str(185_742_000_000 + i * 1_337),
            search_prefix="/sch/i.html",
            search_param="_nkw",
            tagline="Shop deals on tech, home and more",
        ),
        Shop(
            key="newegg",
            domain="newegg.com",
            name="newegg",
            label="Newegg",
            host="www.newegg.com",
            cart_url="https://secure.newegg.com/shop/cart",
            logo=(("new", (255, 255, 255)), ("egg", (247, 160, 0))),
            header=(23, 28, 72),
            on_header=(255, 255, 255),
            accent=(247, 140, 0),
            price_colour=(17, 17, 17),
            layout="list",
            search_url=lambda q: f"https://www.newegg.com/p/pl?d={_q(q)}",
            product_path=lambda slug, code: f"/p/{code}",
            product_pattern=re.compile(r"^/(?:[^/]+/)?p/(?P<code>N82E16\d{8})$"),
            code=lambda i: f"N82E16{26_104_000 + i * 17:08d}",
            search_prefix="/p/pl",
            search_param="d",
            tagline="Computer parts, laptops, electronics",
        ),
        Shop(
            key="bestbuy",
            domain="bestbuy.com",
            name="BEST BUY",
            label="Best Buy",
            host="www.bestbuy.com",
            cart_url="https://www.bestbuy.com/cart",
            logo=(("BEST BUY", (0, 0, 0)),),
            header=(0, 70, 190),
            on_header=(255, 255, 255),
            accent=(255, 224, 0),
            price_colour=(0, 0, 0),
            layout="list",
            search_url=lambda q: f"https://www.bestbuy.com/site/searchpage.jsp?st={_q(q)}",
            product_path=lambda slug, code: f"/site/{slug}/{code}.p",
            product_pattern=re.compile(r"^/site/(?:[^/]+/)?(?P<code>\d{7})\.p$"),
            code=lambda i: str(6_401_000 + i * 113),
            search_prefix="/site/searchpage.jsp",
            search_param="st",
            tagline="Expert service. Unbeatable price.",
        ),
        Shop(
            key="walmart",
            domain="walmart.com",
            name="Walmart",
            label="Walmart",
            host="www.walmart.com",
            cart_url="https://www.walmart.com/cart",
            logo=(("Walmart", (255, 255, 255)), (" *", (255, 194, 32))),
            header=(0, 113, 220),
            on_header=(255, 255, 255),
            accent=(0, 113, 220),
            price_colour=(42, 135, 3),
            layout="grid",
            search_url=lambda q: f"https://www.walmart.com/search?q={_q(q)}",
            product_path=lambda slug, code: f"/ip/{slug}/{code}",
            product_pattern=re.compile(r"^/ip/(?:[^/]+/)?(?P<code>\d{9})$"),
            code=lambda i: str(512_004_000 + i * 9_173),
            search_prefix="/search",
            search_param="q",
            tagline="Save money. Live better.",
        ),
        Shop(
            key="costco",
            domain="costco.com",
            name="COSTCO",
            label="Costco",
            host="www.costco.com",
            cart_url="https://www.costco.com/CheckoutCartView",
            logo=(("COSTCO", (227, 24, 55)),),
            header=(255, 255, 255),
            on_header=(0, 93, 171),
            accent=(0, 93, 171),
            price_colour=(51, 51, 51),
            layout="grid",
            search_url=lambda q: f"https://www.costco.com/CatalogSearch?keyword={_q(q)}",
            product_path=lambda slug, code: f"/{slug}.product.{code}.html",
            product_pattern=re.compile(r"^/(?:[^/]*\.)?product\.(?P<code>\d{10})\.html$"),
            code=lambda i: str(1_008_000_000 + i * 311),
            search_prefix="/CatalogSearch",
            search_param="keyword",
            tagline="Members get more",
        ),
    )
}
"""The shopping sites by the domain people type (``newegg.com``)."""


@cache
def _codes(key: str) -> dict[str, Product]:
    shop = next(s for s in SHOPS.values() if s.key == key)
    return {shop.code(product.index): product for product in PRODUCTS}


def shop_for_host(host: str) -> Shop | None:
    """The site serving ``host`` (``www.newegg.com``, ``secure.newegg.com``, ``newegg.com``), or None."""
    host = host.lower().rstrip(".")
    for shop in SHOPS.values():
        if host == shop.domain or host.endswith("." + shop.domain):
            return shop
    return None


def price(shop: Shop, product: Product) -> float:
    """What ``shop`` asks for ``product`` (within 12% of the list price, ending in .99 or .95)."""
    return _price(shop.key, product.slug, product.price)


@cache
def _price(key: str, slug: str, list_price: float) -> float:
    factor = 0.88 + (stable("price", key, slug) % 1000) / 1000 * 0.24
    dollars = max(1, int(list_price * factor))
    cents = 0.95 if key in ("walmart", "costco") else 0.99
    return dollars + cents


def rating(shop: Shop, product: Product) -> tuple[float, int]:
    """``(stars out of 5, number of reviews)`` on ``shop``."""
    return _rating(shop.key, product.slug)


@cache
def _rating(key: str, slug: str) -> tuple[float, int]:
    h = stable("rating", key, slug)
    return 3.5 + (h % 16) / 10, 12 + (h >> 8) % 4800


def _words(query: str) -> list[str]:
    return [w for w in tokens(query) if w not in STOP_WORDS]


@lru_cache(maxsize=2048)
def search(domain: str, query: str) -> tuple[Product, ...]:
    """The real (not sponsored) results of ``query`` on the site, best first: 10 to 20 products.

    Products holding every word of the query come first, in the site's own order; then products
    holding some of the words (most first); then more of the best match's kind.
    """
    shop = SHOPS[domain]
    q = normalise_query(query)
    words = _words(q)
    size = 10 + stable("size", shop.key, q) % 11

    def order(product: Product) -> int:
        return stable("rank", shop.key, q, product.slug)

    if not words:
        return tuple(sorted(PRODUCTS, key=order)[:size])
    scored = [(sum(w in p.words for w in words), p) for p in PRODUCTS]
    full = sorted((p for n, p in scored if n == len(words)), key=order)
    partial = sorted(
        ((n, p) for n, p in scored if 0 < n < len(words)), key=lambda item: (-item[0], order(item[1]))
    )
    out = [*full, *(p for _, p in partial)]
    seen = {p.slug for p in out}
    if out:
        kind = out[0].category
        out += sorted((p for p in PRODUCTS if p.category == kind and p.slug not in seen), key=order)
    seen = {p.slug for p in out}
    out += sorted((p for p in PRODUCTS if p.slug not in seen), key=order)
    return tuple(out[:size])


def sponsored(domain: str, query: str) -> Product:
    """The ad a results page may show above the real results: never the real first entry."""
    results = search(domain, query)
    pick = 1 + stable("ad", domain, normalise_query(query)) % min(4, len(results) - 1)
    return results[pick]
