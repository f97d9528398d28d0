"""The search engine: Google's result pages, generated from the query alone.

``results(query)`` gives about eight results (title, URL, snippet): links to the shopping sites when the
query names one or names a product, an encyclopaedia entry, and pages from a fixed list of well-known
sites, chosen and worded from the query by stable hashes. ``answer(query, now)`` gives the answer box
Google shows above the results for simple questions: the weather or the time in a city, the price of a
product. All of it is pure: the same query gives the same page on every phone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from urllib.parse import quote, quote_plus

from distrl.sim.web.catalogue import PRODUCTS, Product
from distrl.sim.web.shops import SHOPS, price, search
from distrl.sim.web.text import STOP_WORDS, normalise_query, stable, title_case, tokens

__all__ = ["CITIES", "Answer", "City", "Result", "answer", "city_in", "results"]


@dataclass(frozen=True, slots=True)
class City:
    name: str
    """As people write it (``Washington DC``)."""
    region: str
    """What follows the name in an answer (``Washington, DC, USA``)."""
    utc_offset_h: float
    """Offset from UTC on the phone's date (mid-October 2023, summer time where it applies)."""
    zone: str
    """Time zone abbreviation (``EDT``)."""
    mean_c: int
    """Typical mid-October temperature in Celsius."""


CITIES: tuple[City, ...] = (
    City("New York", "New York, NY, USA", -4, "EDT", 16),
    City("Washington DC", "Washington, DC, USA", -4, "EDT", 17),
    City("Boston", "Boston, MA, USA", -4, "EDT", 14),
    City("Chicago", "Chicago, IL, USA", -5, "CDT", 14),
    City("Los Angeles", "Los Angeles, CA, USA", -7, "PDT", 23),
    City("San Francisco", "San Francisco, CA, USA", -7, "PDT", 19),
    City("Seattle", "Seattle, WA, USA", -7, "PDT", 13),
    City("Miami", "Miami, FL, USA", -4, "EDT", 28),
    City("Denver", "Denver, CO, USA", -6, "MDT", 13),
    City("Austin", "Austin, TX, USA", -5, "CDT", 25),
    City("Las Vegas", "Las Vegas, NV, USA", -7, "PDT", 22),
    City("Toronto", "Toronto, ON, Canada", -4, "EDT", 11),
    City("Mexico City", "Mexico City, Mexico", -6, "CST", 17),
    City("London", "London, UK", 1, "BST", 13),
    City("Paris", "Paris, France", 2, "CEST", 14),
    City("Berlin", "Berlin, Germany", 2, "CEST", 11),
    City("Madrid", "Madrid, Spain", 2, "CEST", 17),
    City("Rome", "Rome, Italy", 2, "CEST", 19),
    City("Amsterdam", "Amsterdam, Netherlands", 2, "CEST", 12),
    City("Moscow", "Moscow, Russia", 3, "MSK", 7),
    City("Dubai", "Dubai, UAE", 4, "GST", 32),
    City("Mumbai", "Mumbai, India", 5.5, "IST", 30),
    City("Singapore", "Singapore", 8, "SGT", 28),
    City("Beijing", "Beijing, China", 8, "CST", 14),
    City("Hong Kong", "Hong Kong", 8, "HKT", 26),
    City("Tokyo", "Tokyo, Japan", 9, "JST", 19),
    City("Seoul", "Seoul, South Korea", 9, "KST", 15),
    City("Sydney", "Sydney, Australia", 11, "AEDT", 19),
    City("Cairo", "Cairo, Egypt", 3, "EEST", 26),
    City("Rio de Janeiro", "Rio de Janeiro, Brazil", -3, "BRT", 25),
)
"""Cities the answer box knows (the weather and world-clock templates draw from these)."""

_CONDITIONS = ("Sunny", "Partly cloudy", "Mostly cloudy", "Light rain", "Clear", "Showers", "Overcast")


@dataclass(frozen=True, slots=True)
class Result:
    title: str
    url: str
    snippet: str

    @property
    def site(self) -> str:
        """The host as the result shows it above its title."""
        return self.url.split("://", 1)[-1].split("/", 1)[0].removeprefix("www.")


@dataclass(frozen=True, slots=True)
class Answer:
    """The box above the results: a heading, the answer in large type, and detail lines."""

    kind: str
    """``weather``, ``time`` or ``price``."""
    heading: str
    value: str
    details: tuple[str, ...]


def city_in(query: str) -> City | None:
    """The first known city named in ``query`` (``weather in washington dc`` -> Washington DC)."""
    words = f" {' '.join(tokens(query))} "
    for city in sorted(CITIES, key=lambda c: -len(c.name)):
        if f" {' '.join(tokens(city.name))} " in words:
            return city
    return None


def _product_in(query: str) -> Product | None:
    """The product line the query names: its whole model, or its brand and first model word."""
    words = set(tokens(query))
    best: tuple[int, Product] | None = None
    for product in PRODUCTS:
        model = [w for w in tokens(product.line) if w not in STOP_WORDS]
        brand = set(tokens(product.brand))
        hits = sum(w in words for w in model)
        named = model[0] in words and (brand <= words or hits >= 2 or hits == len(model))
        score = hits + len(brand & words)
        if named and (best is None or score > best[0]):
            best = (score, product)
    return None if best is None else best[1]


def answer(query: str, now: datetime) -> Answer | None:
    """The answer box for ``query`` at UTC time ``now``, or None when Google would show none."""
    words = set(tokens(query))
    city = city_in(query)
    if city is not None and words & {"weather", "temperature", "forecast", "rain", "hot", "cold"}:
        h = stable("weather", city.name, now.date().isoformat())
        temp_c = city.mean_c + (h % 9) - 4
        temp_f = round(temp_c * 9 / 5 + 32)
        local = now + timedelta(hours=city.utc_offset_h)
        return Answer(
            "weather",
            f"Weather in {city.region}",
            f"{temp_f} F  ({temp_c} C)",
            (
                f"{_CONDITIONS[h % len(_CONDITIONS)]}",
                f"{local.strftime('%A')} {_clock(local)}",
                f"Precipitation: {(h >> 8) % 60}%   Humidity: {40 + (h >> 16) % 50}%",
                f"Wind: {3 + (h >> 24) % 18} mph",
            ),
        )
    if city is not None and "time" in words:
        local = now + timedelta(hours=city.utc_offset_h)
        return Answer(
            "time",
            f"Local time in {city.region}",
            _clock(local),
            (local.strftime("%A, %B %-d, %Y"), f"Time zone: {city.zone} (GMT{_offset(city.utc_offset_h)})"),
        )
    if words & {"cost", "price", "much", "cheap", "buy"}:
        product = _product_in(query)
        if product is not None:
            shops = sorted(SHOPS.values(), key=lambda s: price(s, product))
            low = price(shops[0], product)
            return Answer(
                "price",
                f"{product.brand} {product.line}",
                f"${low:,.2f}",
                (
                    f"Lowest price, at {shops[0].domain}",
                    *(f"{s.domain}: ${price(s, product):,.2f}" for s in shops[1:4]),
                ),
            )
    return None


def _clock(moment: datetime) -> str:
    return moment.strftime("%-I:%M %p")


def _offset(hours: float) -> str:
    sign = "+" if hours >= 0 else "-"
    whole, frac = divmod(abs(hours), 1)
    return f"{sign}{int(whole)}" + (f":{round(frac * 60):02d}" if frac else "")


# (domain, path pattern, title pattern, snippet pattern); {q} is the query as typed, {Q} in title case,
# {slug} the query joined with hyphens.
_GENERIC: tuple[tuple[str, str, str, str], ...] = (
    (
        "www.youtube.com",
        "/results?search_query={plus}",
        "{Q} - YouTube",
        "Watch videos about {q} on YouTube.",
    ),
    ("www.reddit.com", "/r/all/search?q={plus}", "{q} : r/AskReddit - Reddit", "Discussions about {q}."),
    (
        "www.nytimes.com",
        "/search?query={plus}",
        "{Q} - The New York Times",
        "The latest news and analysis on {q}.",
    ),
    (
        "www.cnet.com",
        "/{slug}/",
        "{Q}: Reviews and Buying Guide - CNET",
        "Everything you need to know about {q}.",
    ),
    ("www.tripadvisor.com", "/Search?q={plus}", "{Q} - Tripadvisor", "Reviews, photos and prices for {q}."),
    ("www.yelp.com", "/search?find_desc={plus}", "Top 10 Best {Q} - Yelp", "Find the best {q} near you."),
    ("www.bbc.com", "/search?q={plus}", "{Q} - BBC News", "Breaking news, analysis and features on {q}."),
    ("www.quora.com", "/search?q={plus}", "What should I know about {q}? - Quora", "Answers from experts."),
    (
        "www.theverge.com",
        "/{slug}",
        "The best {q} right now - The Verge",
        "Our picks after weeks of testing.",
    ),
    ("www.pinterest.com", "/search/pins/?q={plus}", "{Q} ideas - Pinterest", "Discover ideas about {q}."),
)


_QUESTION = frozenset(
    {"what", "whats", "how", "when", "where", "who", "why", "which", "is", "are", "can", "do"}
)
_TOPICAL = frozenset({3, 5, 8, 9})
"""Generic results that read wrongly for a question (reviews, top-10 lists, best-of lists, pins)."""


@lru_cache(maxsize=1024)
def results(query: str) -> tuple[Result, ...]:
    """The result list for ``query`` (normalised first), eight entries."""
    q = normalise_query(query).strip("?!. ")
    if not q:
        return ()
    words = set(tokens(q))
    question = q.split()[0] in _QUESTION
    big = title_case(q)
    out: list[Result] = []
    named = [shop for shop in SHOPS.values() if shop.key in words or set(tokens(shop.domain)) <= words]
    rest = " ".join(
        w for w in q.split() if w not in {t for shop in named for t in (shop.key, shop.domain, "com")}
    )
    for shop in named:
        url = shop.search_url(rest) if rest else shop.home_url
        out.append(Result(f"{shop.label}: {shop.tagline}", url, f"Shop {rest or 'deals'} at {shop.domain}."))
    product = _product_in(q)
    if product is not None and not named:
        wanted = f"{product.brand} {product.line}".lower() if question else q
        for shop in sorted(SHOPS.values(), key=lambda s: stable("google", q, s.key))[:3]:
            first = search(shop.domain, wanted)[0]
            out.append(
                Result(
                    f"{title_case(wanted)} - {shop.label}",
                    shop.search_url(wanted),
                    f"Shop {wanted} at {shop.domain}. {first.title}: ${price(shop, first):,.2f}.",
                )
            )
    city = city_in(q)
    if city is not None and "weather" in words:
        slug = quote(city.name.replace(" ", "-").lower())
        out.append(
            Result(
                f"{city.name} Weather Forecast - weather.com",
                f"https://weather.com/weather/today/l/{slug}",
                f"Today's and tonight's {city.name} weather forecast, conditions and radar.",
            )
        )
    if city is not None and "time" in words:
        slug = quote(city.name.replace(" ", "-").lower())
        out.append(
            Result(
                f"Current Local Time in {city.region} - timeanddate.com",
                f"https://www.timeanddate.com/worldclock/{slug}",
                f"Current local time in {city.region}, with time zone and daylight saving dates.",
            )
        )
    if not question:
        wiki = quote(big.replace(" ", "_"))
        out.append(
            Result(
                f"{big} - Wikipedia",
                f"https://en.wikipedia.org/wiki/{wiki}",
                f"{big} may refer to several topics. This article is about {q}.",
            )
        )
    order = sorted(range(len(_GENERIC)), key=lambda i: stable("generic", q, i))
    for i in order:
        if question and i in _TOPICAL:
            continue
        if len(out) >= 8:
            break
        host, path, title, snippet = _GENERIC[i]
        fill = {"q": q, "Q": big, "plus": quote_plus(q), "slug": quote(q.replace(" ", "-"))}
        out.append(
            Result(title.format(**fill), f"https://{host}{path.format(**fill)}", snippet.format(**fill))
        )
    return tuple(out[:8])
