"""URLs: what the address bar makes of typed text, and which page a URL names.

``resolve`` turns what a user types into the address bar into a URL (words that are not a web address
become a Google search); ``parse`` turns a URL into a ``Route`` (the site, the kind of page, the query
or the product) that the pages render and the success checks read. Both are pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import parse_qs, quote_plus, urlsplit

from distrl.sim.web.shops import shop_for_host
from distrl.sim.web.text import normalise_query

__all__ = [
    "GOOGLE_HOME",
    "HISTORY_URL",
    "Route",
    "display_url",
    "google_search_url",
    "host_domain",
    "parse",
    "resolve",
]

GOOGLE_HOME = "https://www.google.com/"
HISTORY_URL = "chrome://history/"

PageKind = Literal[
    "google_home",
    "google_search",
    "shop_home",
    "shop_search",
    "product",
    "cart",
    "cart_add",
    "cart_clear",
    "missing",
    "page",
    "history",
    "invalid",
]

_DOMAIN = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$")
_TLDS = frozenset(
    {"com", "org", "net", "edu", "gov", "io", "co", "uk", "de", "fr", "jp", "us", "ca", "info", "tv", "ai"}
)


@dataclass(frozen=True, slots=True)
class Route:
    """Which page a URL names."""

    kind: PageKind
    url: str
    domain: str = ""
    """The site's registered domain (``newegg.com``; ``en.wikipedia.org`` -> ``wikipedia.org``)."""
    query: str = ""
    """Search pages: the query, normalised (``normalise_query``)."""
    product: str = ""
    """Product pages and cart links: the product's slug."""
    code: str = ""
    """Product pages and cart links: the site's item number as the URL has it."""
    path: str = "/"


def google_search_url(query: str) -> str:
    return f"https://www.google.com/search?q={quote_plus(query.strip())}"


def host_domain(host: str) -> str:
    """``www.en.wikipedia.org`` -> ``wikipedia.org``; ``www.bbc.co.uk`` -> ``bbc.co.uk``."""
    labels = host.lower().rstrip(".").split(".")
    if len(labels) >= 3 and labels[-2] in ("co", "com", "org", "ac") and len(labels[-1]) == 2:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def resolve(text: str) -> str | None:
    """The URL the address bar opens for typed ``text``; None for blank text.

    ``newegg.com`` and ``http://x.org/a`` are addresses; anything else (spaces, no dot, an unknown
    ending) is searched on Google, as Chrome does.
    """
    typed = text.strip()
    if not typed:
        return None
    lower = typed.lower()
    if lower.startswith(("http://", "https://", "chrome://")) and " " not in typed:
        return canonical(typed)
    if " " not in typed:
        host = lower.split("/", 1)[0].split("?", 1)[0]
        if _DOMAIN.match(host) and host.rsplit(".", 1)[-1] in _TLDS:
            return canonical("https://" + typed)
    return google_search_url(typed)


def canonical(url: str) -> str:
    """``url`` as the site redirects it: https, the site's canonical host, a path of at least ``/``."""
    if url.lower().startswith("chrome://"):
        return url.lower()
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:  # a malformed address (an unclosed IPv6 bracket ...): shown as an error page
        return url
    scheme = "https"
    path = parts.path or "/"
    shop = shop_for_host(host)
    if shop is not None and host in (shop.domain, "m." + shop.domain, "www." + shop.domain):
        host = shop.host
    elif host in ("google.com", "m.google.com"):
        host = "www.google.com"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{host}{path}{query}"


def display_url(url: str) -> str:
    """What the address bar shows for ``url``: no scheme, no ``www.``, no lone trailing slash."""
    if url.startswith("chrome://"):
        return url
    text = re.sub(r"^https?://", "", url)
    text = text.removeprefix("www.")
    return text[:-1] if text.endswith("/") and text.count("/") == 1 else text


@lru_cache(maxsize=4096)
def parse(url: str) -> Route:
    """The page ``url`` names."""
    if url.startswith("chrome://"):
        return Route("history" if url.startswith("chrome://history") else "invalid", url)
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return Route("invalid", url)
    if parts.scheme not in ("http", "https") or not host:
        return Route("invalid", url)
    domain = host_domain(host)
    path = parts.path or "/"
    params = parse_qs(parts.query)

    def param(name: str) -> str:
        values = params.get(name)
        return values[0] if values else ""

    if domain == "google.com":
        if path == "/search" and param("q").strip():
            return Route("google_search", url, domain, normalise_query(param("q")), path=path)
        return Route("google_home", url, domain, path=path)
    shop = shop_for_host(host)
    if shop is None:
        return Route("page", url, domain, path=path)
    if url.split("?", 1)[0].rstrip("/") == shop.cart_url.rstrip("/") or (
        path.rstrip("/") == "/cart" and host == shop.host
    ):
        if param("add"):
            product = shop.product_for_code(param("add"))
            if product is None:
                return Route("missing", url, shop.domain, code=param("add"), path=path)
            return Route("cart_add", url, shop.domain, product=product.slug, code=param("add"), path=path)
        if param("clear"):
            return Route("cart_clear", url, shop.domain, path=path)
        return Route("cart", url, shop.domain, path=path)
    if path == shop.search_prefix:
        return Route("shop_search", url, shop.domain, normalise_query(param(shop.search_param)), path=path)
    match = shop.product_pattern.match(path)
    if match is not None:
        product = shop.product_for_code(match["code"])
        if product is None:
            return Route("missing", url, shop.domain, code=match["code"], path=path)
        return Route("product", url, shop.domain, product=product.slug, code=match["code"], path=path)
    if path == "/":
        return Route("shop_home", url, shop.domain, path=path)
    return Route("missing", url, shop.domain, path=path)
