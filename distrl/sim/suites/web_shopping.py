"""The web-shopping suite: AitW "Web Shopping" tasks on the simulated shopping sites.

"Go to newegg.com, search for "razer thresher", and select the first entry", in the wording of the
DigiRL/DistRL task files, on eBay, Newegg, Best Buy and Walmart. "The first entry" is the first real
result: a sponsored entry above it does not count. Three splits (see ``distrl.sim.suites``): the
``test`` split is the train templates' searches for products no train task names (``HELD_OUT_QUERIES``,
on the same four sites); the ``unseen`` split is Costco (``UNSEEN_SITES``) and two held-out templates
("..., select the first entry, and add it to cart", which needs the product page, and "Show me the cart
on ...").

Every task starts from the home screen with Chrome's data cleared (``pm clear``); cart tasks then fill
the cart with the sites' deep links (``<cart url>?add=<item number>``, see ``distrl.sim.web.shops``)
and stop Chrome again. Checks read Chrome's state: the page in front, the searches made, the carts.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from distrl.records import Action
from distrl.sim.apps.chrome import CHROME, cart, current_route, online, searched
from distrl.sim.suites import Params, Suite, Template, held_out
from distrl.sim.suites.expert import done
from distrl.sim.suites.web_expert import fill_and_submit, in_the_way, open_address, reach, to_chrome
from distrl.sim.web.catalogue import PRODUCTS, Product
from distrl.sim.web.route import parse
from distrl.sim.web.shops import SHOPS, search
from distrl.sim.web.text import normalise_query, stable

if TYPE_CHECKING:
    from distrl.sim.app import Json
    from distrl.sim.phone import Phone

__all__ = ["HELD_OUT_QUERIES", "QUERIES", "TRAIN_SITES", "UNSEEN_SITES", "WEB_SHOPPING", "cart_setup"]

TRAIN_SITES = ("ebay.com", "newegg.com", "bestbuy.com", "walmart.com")
UNSEEN_SITES = ("costco.com",)
"""Held out: every Costco task is in the ``unseen`` split."""

QUERIES = (
    "razer thresher", "macbook air", "alienware area 51", "logitech g933", "corsair k70", "jbl flip 4",
    "bose soundlink mini", "beats solo3", "razer blade 15", "razer kraken", "razer deathadder",
    "logitech g502", "logitech g pro", "nintendo switch", "xbox series x", "playstation 5",
    "samsung galaxy s23", "airpods pro", "sony wh-1000xm5", "dell xps 13", "lenovo thinkpad",
    "asus rog strix", "acer predator", "hp spectre x360", "surface pro 9", "ipad air", "kindle paperwhite",
    "gopro hero11", "canon eos rebel", "lg oled tv", "samsung qled tv", "fitbit charge 5", "apple watch",
    "anker power bank", "sandisk microsd", "samsung 970 evo", "rtx 4070", "corsair vengeance",
    "steelseries arctis 7", "hyperx cloud ii", "duracell aa batteries", "logitech mx master",
    "bose quietcomfort", "google pixel 7", "iphone 14 pro", "jbl charge 5", "netgear nighthawk",
    "dji mini 3 pro",
)  # fmt: skip
"""Product searches (each one's first result on every site holds all its words)."""

HELD_OUT_QUERIES = (
    "samsung galaxy s23", "airpods pro", "dell xps 13", "lenovo thinkpad", "asus rog strix",
    "hp spectre x360", "surface pro 9", "ipad air", "gopro hero11", "lg oled tv", "fitbit charge 5",
)  # fmt: skip
"""The ``test`` split's products: the train sites' searches for them (in every template) are ``test``
tasks, so no ``train`` task names one."""

_CLEAR_WORDINGS = ("Clear the cart on {site}", "Remove everything from my cart on {site}",
                   "Empty the shopping cart on {site}")  # fmt: skip


def _first(p: Params) -> Product:
    return search(str(p["site"]), str(p["product"]))[0]


def cart_setup(site: str, products: Sequence[Product]) -> list[str]:
    """Shell commands that clear Chrome, put ``products`` in ``site``'s cart and return home."""
    shop = SHOPS[site]
    links = [
        f"am start -a android.intent.action.VIEW -d {shlex.quote(shop.cart_add_url(product))}"
        for product in products
    ]
    return [f"pm clear {CHROME}", *links, f"am force-stop {CHROME}"]


def _setup_items(site: str, count: int) -> list[Product]:
    ranked = sorted(PRODUCTS, key=lambda product: stable("cart-setup", site, count, product.slug))
    return ranked[:count]


# ---------------------------------------------------------------------- checks
def _on_results(p: Params, state: Json) -> bool:
    route = current_route(state)
    return (
        route is not None
        and route.kind == "shop_search"
        and route.domain == p["site"]
        and route.query == normalise_query(str(p["product"]))
        and online(state)
    )


def _on_first(p: Params, state: Json) -> bool:
    route = current_route(state)
    return (
        route is not None
        and route.kind == "product"
        and route.domain == p["site"]
        and route.product == _first(p).slug
        and searched(state, str(p["site"]), str(p["product"]))
        and online(state)
    )


def _first_in_cart(p: Params, state: Json) -> bool:
    items = cart(state, str(p["site"]))
    return [item.product for item in items] == [_first(p).slug] and searched(
        state, str(p["site"]), str(p["product"])
    )


def _opened_first(p: Params, state: Json) -> bool:
    slug = _first(p).slug
    return any(
        (route := parse(str(url))).kind == "product" and route.domain == p["site"] and route.product == slug
        for url in state["apps"][CHROME]["history"]
    )


def _selected_and_added(p: Params, state: Json) -> bool:
    return _first_in_cart(p, state) and _opened_first(p, state)


def _cart_empty(p: Params, state: Json) -> bool:
    return not cart(state, str(p["site"])) and online(state)


def _on_cart(p: Params, state: Json) -> bool:
    route = current_route(state)
    return route is not None and route.kind == "cart" and route.domain == p["site"] and online(state)


# ---------------------------------------------------------------------- expert
Check = Callable[[Params, "Json"], bool]


def _shop_expert(check: Check, goal: str) -> Callable[[Params, Phone], Action]:
    """An expert for ``goal``: ``results``, ``product``, ``add``, ``clear`` or ``cart``."""

    def expert(p: Params, phone: Phone) -> Action:
        state = phone.state()
        if check(p, state):
            return done()
        blocked = in_the_way(phone) or to_chrome(phone, state)
        if blocked is not None:
            return blocked
        site = str(p["site"])
        shop = SHOPS[site]
        key = shop.key
        route = current_route(state)
        here = route is not None and route.domain == site and route.kind not in ("invalid", "page")
        items = cart(state, site)
        wanted = [] if goal in ("clear", "cart") else [_first(p).slug]
        extra = [i for i, item in enumerate(items) if item.product not in wanted]
        if goal in ("clear", "cart") or (goal == "add" and extra):
            if route is not None and route.kind == "cart" and route.domain == site:
                if goal == "cart":
                    return done()
                return reach(phone, state, f"web/{key}/cart/remove/{extra[0]}")
            if here:
                return reach(phone, state, f"web/{key}/cart")
            return open_address(phone, state, site)
        query = normalise_query(str(p["product"]))
        first = _first(p)
        if (
            route is not None
            and route.kind == "product"
            and route.domain == site
            and route.product == first.slug
            and searched(state, site, query)
        ):
            return reach(phone, state, f"web/{key}/add_to_cart")
        if (
            route is not None
            and route.kind == "shop_search"
            and route.domain == site
            and route.query == query
        ):
            return reach(phone, state, f"web/{key}/result/0")
        if here:
            return fill_and_submit(phone, state, f"web/{key}/search", query)
        return open_address(phone, state, site)

    return expert


# ---------------------------------------------------------------------- templates
def _search_goal(p: Params) -> str:
    return f'Go to {p["site"]}, search for "{p["product"]}"'


def _select_goal(p: Params) -> str:
    return f'Go to {p["site"]}, search for "{p["product"]}", and select the first entry'


def _add_goal(p: Params) -> str:
    return f'Go to {p["site"]}, search for "{p["product"]}", and add the first entry to the cart'


def _select_add_goal(p: Params) -> str:
    return f'Go to {p["site"]}, search for "{p["product"]}", select the first entry, and add it to cart'


def _clean(p: Params) -> list[str]:
    del p
    return [f"pm clear {CHROME}"]


def _filled(p: Params) -> list[str]:
    site = str(p["site"])
    return cart_setup(site, _setup_items(site, int(p["items"])))


def _searches(sites: Sequence[str], queries: Sequence[str]) -> Callable[[], list[Params]]:
    return lambda: [{"site": site, "product": query} for site in sites for query in queries]


def _carts(sites: Sequence[str], counts: Sequence[int]) -> Callable[[], list[Params]]:
    return lambda: [{"site": site, "items": n} for site in sites for n in counts]


def _templates() -> tuple[Template, ...]:
    out: list[Template] = []
    products = held_out("product", HELD_OUT_QUERIES)
    for split, sites, suffix, spans in (
        ("train", TRAIN_SITES, "", ((16, 40), (0, 32), (8, 36))),
        ("unseen", UNSEEN_SITES, "_heldout_site", ((0, 16), (16, 32), (32, 48))),
    ):
        out += [
            Template(
                name=f"search{suffix}",
                split=split,
                params=_searches(sites, QUERIES[slice(*spans[0])]),
                goal=_search_goal,
                setup=_clean,
                check=_on_results,
                expert=_shop_expert(_on_results, "results"),
                held_out=products,
            ),
            Template(
                name=f"select_first{suffix}",
                split=split,
                params=_searches(sites, QUERIES[slice(*spans[1])]),
                goal=_select_goal,
                setup=_clean,
                check=_on_first,
                expert=_shop_expert(_on_first, "product"),
                held_out=products,
            ),
            Template(
                name=f"add_first{suffix}",
                split=split,
                params=_searches(sites, QUERIES[slice(*spans[2])]),
                goal=_add_goal,
                setup=_clean,
                check=_first_in_cart,
                expert=_shop_expert(_first_in_cart, "add"),
                held_out=products,
            ),
            Template(
                name=f"clear_cart{suffix}",
                split=split,
                params=_carts(sites, (1, 2, 3)),
                goal=lambda p: _CLEAR_WORDINGS[int(p["items"]) - 1].format(site=p["site"]),
                setup=_filled,
                check=_cart_empty,
                expert=_shop_expert(_cart_empty, "clear"),
            ),
        ]
    all_sites = (*TRAIN_SITES, *UNSEEN_SITES)
    out += [
        Template(
            name="select_and_add",
            split="unseen",
            params=_searches(all_sites, QUERIES[36:48]),
            goal=_select_add_goal,
            setup=_clean,
            check=_selected_and_added,
            expert=_shop_expert(_selected_and_added, "add"),
        ),
        Template(
            name="show_cart",
            split="unseen",
            params=_carts(all_sites, (2,)),
            goal=lambda p: f"Show me the cart on {p['site']}",
            setup=_filled,
            check=_on_cart,
            expert=_shop_expert(_on_cart, "cart"),
        ),
    ]
    return tuple(out)


WEB_SHOPPING = Suite(name="web_shopping", max_steps=20, templates=_templates())
"""AitW-style web shopping: train on four sites; test on held-out products there; unseen: held-out
templates and a held-out site."""
