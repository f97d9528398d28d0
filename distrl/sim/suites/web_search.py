"""The web-search part of the general suite: AitW "General" searches answered by the browser.

"Search for hotels in Washington DC on Google", "What's the weather like in Paris?", "How much does a
Nintendo Switch Lite cost?", "Open espn.com". The ``test`` split holds out some subjects, cities,
products and sites of these templates (``HELD_OUT``); the ``unseen`` split holds out two templates:
"What time is it in Tokyo?" and "Find a Thai restaurant in Chicago". A search task succeeds when Chrome,
in front, shows Google's results page for a query holding every key word of the goal (in any order,
with other words allowed: "hotels washington dc" will do); an "Open" task when Chrome shows a page of
that site.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from distrl.records import Action
from distrl.sim.apps.chrome import current_route, online
from distrl.sim.suites import Params, Template, held_out, pools
from distrl.sim.suites.expert import done
from distrl.sim.suites.web_expert import fill_and_submit, in_the_way, open_address, to_chrome
from distrl.sim.web.google import CITIES
from distrl.sim.web.google_pages import FIELD as GOOGLE_FIELD
from distrl.sim.web.text import STOP_WORDS, tokens

if TYPE_CHECKING:
    from distrl.sim.app import Json
    from distrl.sim.phone import Phone

__all__ = ["HELD_OUT", "TEMPLATES", "key_words"]

THINGS = (
    "hotels in Washington DC", "flights to Paris", "the best pizza in New York", "cheap flights to London",
    "how to make pancakes", "the capital of Australia", "Taylor Swift concert tickets",
    "the latest NBA scores",
    "things to do in Chicago", "the population of Japan", "coffee shops near me", "car rental in Los Angeles",
    "the meaning of serendipity", "easy chicken recipes", "how to tie a tie", "yoga classes in Seattle",
    "the height of Mount Everest", "Python tutorials", "used cars for sale", "the best running shoes",
    "Broadway shows in New York", "museums in Washington DC", "vegan restaurants in Berlin",
    "the distance from Earth to Mars", "how to change a tire", "hiking trails in Colorado",
    "news about the World Cup", "apartments for rent in Boston", "the lyrics of Bohemian Rhapsody",
    "the Golden Gate Bridge",
)  # fmt: skip
ITEMS = (
    "Nintendo Switch Lite", "Sony PlayStation 5", "Xbox Series X", "Apple AirPods Pro", "MacBook Air",
    "iPad Air", "Kindle Paperwhite", "GoPro HERO11", "Apple Watch Series 8", "Bose QuietComfort 45",
    "JBL Flip 6", "Samsung Galaxy S23", "Google Pixel 7", "iPhone 14", "Fitbit Charge 5", "Sony WH-1000XM5",
    "Canon EOS Rebel T7", "DJI Mini 3 Pro", "Logitech MX Master 3S", "Samsung Galaxy Watch5",
)  # fmt: skip
SITES = (
    "newegg.com", "ebay.com", "bestbuy.com", "walmart.com", "costco.com", "wikipedia.org", "youtube.com",
    "reddit.com", "cnn.com", "espn.com", "nytimes.com", "weather.com", "imdb.com", "github.com", "yelp.com",
    "tripadvisor.com", "allrecipes.com", "bbc.com", "theverge.com", "craigslist.org",
)  # fmt: skip
CUISINES = ("Italian", "Mexican", "Thai", "Japanese", "Indian", "Chinese")
RESTAURANT_CITIES = ("New York", "Chicago", "San Francisco", "Boston")


HELD_OUT: dict[str, tuple[str, ...]] = {
    "thing": ("cheap flights to London", "the population of Japan", "yoga classes in Seattle",
              "hiking trails in Colorado", "the lyrics of Bohemian Rhapsody", "easy chicken recipes"),
    "city": ("Seattle", "Denver", "Madrid", "Amsterdam", "Mumbai", "Cairo"),
    "item": ("Kindle Paperwhite", "JBL Flip 6", "Google Pixel 7", "DJI Mini 3 Pro"),
    "site": ("walmart.com", "imdb.com", "github.com", "bbc.com"),
}  # fmt: skip
"""The ``test`` split's subjects (``search_google``), cities (``weather``), products (``item_price``) and
sites (``open_site``): no train task of the template names them."""


def key_words(text: str) -> frozenset[str]:
    """The words a query must hold (stemmed, stop words and question words left out)."""
    return frozenset(tokens(text)) - STOP_WORDS - {"how", "much", "does", "cost", "near"}


def _showing_results(words: Callable[[Params], frozenset[str]]) -> Callable[[Params, Json], bool]:
    def check(p: Params, state: Json) -> bool:
        route = current_route(state)
        return (
            route is not None
            and route.kind == "google_search"
            and words(p) <= set(tokens(route.query))
            and online(state)
        )

    return check


def _on_site(p: Params, state: Json) -> bool:
    route = current_route(state)
    return route is not None and route.domain == p["site"] and route.kind != "invalid" and online(state)


def _search_expert(
    check: Callable[[Params, Json], bool], query: Callable[[Params], str]
) -> Callable[[Params, Phone], Action]:
    """Home screen search bar, then Google's search box (or the address bar off Google's home page)."""

    def expert(p: Params, phone: Phone) -> Action:
        state = phone.state()
        if check(p, state):
            return done()
        blocked = in_the_way(phone) or to_chrome(phone, state, via_search_bar=True)
        if blocked is not None:
            return blocked
        route = current_route(state)
        if route is not None and route.kind == "google_home":
            return fill_and_submit(phone, state, GOOGLE_FIELD, query(p))
        return open_address(phone, state, query(p))

    return expert


def _open_expert(p: Params, phone: Phone) -> Action:
    state = phone.state()
    if _on_site(p, state):
        return done()
    blocked = in_the_way(phone) or to_chrome(phone, state)
    if blocked is not None:
        return blocked
    return open_address(phone, state, str(p["site"]))


def _each(name: str, values: Sequence[str]) -> Callable[[], list[Params]]:
    return lambda: [{name: value} for value in values]


def _article(item: str) -> str:
    return "an" if item[:1].lower() in "aeiou" else "a"


def _thing_draw(rng: random.Random) -> Params:
    """Something to search for made from ``pools``, in the shapes of the train and held-out subjects
    (without their words): ``lantern``, ``the best marble turtle``, ``owl in Lisbon``, ``how to make a
    kite``, ``the honey of Oslo``, ``quick kettles to Teku``, ``the honey of Bovani Clastren``,
    ``bittomor drum tours``."""
    noun = pools.noun_phrase(rng)
    shapes = (
        noun,
        f"the best {noun}",
        f"{noun} in {pools.city(rng)}",
        f"how to make a {pools.noun(rng)}",
        f"{noun} for sale",
        f"the {pools.noun(rng)} of {pools.city(rng)}",
        f"{rng.choice(_ADJECTIVES)} {noun} to {pools.city(rng)}",
        f"the {pools.noun(rng)} of {pools.proper_name(rng)}",
        f"{pools.noun(rng)} {noun} {rng.choice(_PLURALS)}",
    )
    return {"thing": rng.choice(shapes)}


_ADJECTIVES = ("local", "best", "quick", "free", "new", "old", "small", "big", "fast", "good")
_PLURALS = ("guides", "tours", "rentals", "tickets", "reviews", "ideas", "deals", "shops")
"""Words of drawn subjects. None is a word of a held-out subject only (``tests/test_sim_general.py``)."""


def _item_draw(rng: random.Random) -> Params:
    """A made-up product, in the shapes of the train and held-out ones: ``Garmin Nova 7``, ``Asus Halo
    X20``, ``Teku Vista``, ``ZR Orbit 3 Max``."""
    number = rng.choice((str(rng.randint(2, 12)), f"X{10 * rng.randint(1, 30)}"))
    model = f"{pools.brand(rng)} {rng.choice(pools.MODELS)}"
    shapes = (f"{model} {number}", f"{model} {number}", model, f"{model} {number} {rng.choice(pools.MODELS)}")
    return {"item": rng.choice(shapes)}


def _city_draw(rng: random.Random) -> Params:
    """A train city of the answer box or one it does not know (``pools.CITY_NAMES``)."""
    train = [city.name for city in CITIES if city.name not in HELD_OUT["city"]]
    return {"city": rng.choice(train) if rng.random() < 0.3 else pools.city(rng)}


def _site_draw(rng: random.Random) -> Params:
    return {"site": pools.site(rng)}


TEMPLATES: tuple[Template, ...] = (
    Template(
        name="search_google",
        split="train",
        params=_each("thing", THINGS),
        goal=lambda p: f"Search for {p['thing']} on Google",
        setup=lambda p: [],
        check=_showing_results(lambda p: key_words(str(p["thing"]))),
        expert=_search_expert(
            _showing_results(lambda p: key_words(str(p["thing"]))), lambda p: str(p["thing"])
        ),
        held_out=held_out("thing", HELD_OUT["thing"]),
        draw=_thing_draw,
    ),
    Template(
        name="weather",
        split="train",
        params=_each("city", [city.name for city in CITIES]),
        goal=lambda p: f"What's the weather like in {p['city']}?",
        setup=lambda p: [],
        check=_showing_results(lambda p: key_words(f"weather {p['city']}")),
        expert=_search_expert(
            _showing_results(lambda p: key_words(f"weather {p['city']}")), lambda p: f"weather in {p['city']}"
        ),
        held_out=held_out("city", HELD_OUT["city"]),
        draw=_city_draw,
    ),
    Template(
        name="item_price",
        split="train",
        params=_each("item", ITEMS),
        goal=lambda p: f"How much does {_article(str(p['item']))} {p['item']} cost?",
        setup=lambda p: [],
        check=_showing_results(lambda p: key_words(str(p["item"]))),
        expert=_search_expert(
            _showing_results(lambda p: key_words(str(p["item"]))), lambda p: f"{p['item']} price"
        ),
        held_out=held_out("item", HELD_OUT["item"]),
        draw=_item_draw,
    ),
    Template(
        name="open_site",
        split="train",
        params=_each("site", SITES),
        goal=lambda p: f"Open {p['site']}",
        setup=lambda p: [],
        check=_on_site,
        expert=_open_expert,
        held_out=held_out("site", HELD_OUT["site"]),
        draw=_site_draw,
    ),
    Template(
        name="world_time",
        split="unseen",
        params=_each("city", [city.name for city in CITIES[10:]]),
        goal=lambda p: f"What time is it in {p['city']}?",
        setup=lambda p: [],
        check=_showing_results(lambda p: key_words(f"time {p['city']}")),
        expert=_search_expert(
            _showing_results(lambda p: key_words(f"time {p['city']}")), lambda p: f"time in {p['city']}"
        ),
    ),
    Template(
        name="restaurant",
        split="unseen",
        params=lambda: [{"cuisine": c, "city": city} for c in CUISINES for city in RESTAURANT_CITIES],
        goal=lambda p: f"Find {_article(str(p['cuisine']))} {p['cuisine']} restaurant in {p['city']}",
        setup=lambda p: [],
        check=_showing_results(lambda p: key_words(f"{p['cuisine']} restaurant {p['city']}")),
        expert=_search_expert(
            _showing_results(lambda p: key_words(f"{p['cuisine']} restaurant {p['city']}")),
            lambda p: f"{p['cuisine']} restaurants in {p['city']}",
        ),
    ),
)
"""Web-search templates for the general suite (step limit 10)."""
