"""Word pools for drawn parameter sets (``Template.draw``): things to search for, places, products and
sites that are neither ``train`` nor ``test`` values.

A drawn task types words from these pools, so a policy cloned on drawn tasks has to copy what it types
from the goal. None of the pools holds a word that only a held-out (``test``) value of a ``general``
template has (``tests/test_sim_general.py`` checks it): "guitar lessons", "Seattle" or "Kindle
Paperwhite" are never typed in pretraining.
"""

from __future__ import annotations

import random

__all__ = ["BRANDS", "CITY_NAMES", "MODELS", "NOUNS", "PLACES", "TOPICS", "noun_phrase", "site"]

NOUNS = (
    "apple", "banana", "bakery", "basket", "beach", "bicycle", "blanket", "boat", "bread", "bridge",
    "brush", "bucket", "butter", "cactus", "candle", "canoe", "carpet", "castle", "cheese", "cherry",
    "circus", "cookie", "cotton", "crayon", "crystal", "curtain", "dolphin", "donut", "dragon", "drum",
    "eagle", "engine", "fabric", "falcon", "feather", "fence", "forest", "fountain", "garden", "garlic",
    "giraffe", "glove", "granite", "hammer", "harbor", "helmet", "honey", "island", "jacket", "jungle",
    "kettle", "kite", "ladder", "lantern", "lemon", "lizard", "magnet", "mango", "marble", "meadow",
    "mirror", "monkey", "mushroom", "needle", "noodle", "ocean", "olive", "orchid", "owl", "paddle",
    "panda", "parrot", "peach", "pencil", "pepper", "piano", "pillow", "planet", "pumpkin", "puzzle",
    "rabbit", "radio", "rainbow", "ribbon", "river", "robot", "rocket", "saddle", "salmon", "sandal",
    "scarf", "shark", "shovel", "silver", "skate", "sofa", "spider", "spoon", "squirrel", "statue",
    "sunflower", "sweater", "tablet", "tiger", "tomato", "tractor", "trumpet", "tulip", "turtle",
    "umbrella", "valley", "violin", "volcano", "wagon", "walnut", "whale", "window", "wizard", "zebra",
)  # fmt: skip
"""Everyday nouns for searches and site names."""

TOPICS = (
    "piano covers", "dog training", "chess openings", "home workouts", "travel vlogs", "space documentaries",
    "drum solos", "magic tricks", "origami", "knitting", "woodworking", "bird songs", "rain sounds",
    "stand up comedy", "car reviews", "painting tutorial", "card games", "bread baking", "skateboard tricks",
    "science experiments", "surfing", "tennis highlights", "salsa dancing", "camping tips",
)  # fmt: skip
"""Things to watch (YouTube searches)."""

PLACES = (
    "bakery", "bookstore", "car wash", "dentist", "post office", "library", "bike shop", "sushi", "bank",
    "hospital", "museum", "park", "zoo", "hardware store", "florist", "barber", "laundromat", "cinema",
    "tea house", "ice cream", "pet store", "train station", "bus stop", "swimming pool",
)  # fmt: skip
"""Places to find nearby (Maps searches)."""

CITY_NAMES = (
    "Lisbon", "Oslo", "Vienna", "Prague", "Dublin", "Athens", "Stockholm", "Helsinki", "Warsaw", "Budapest",
    "Brussels", "Zurich", "Copenhagen", "Istanbul", "Bangkok", "Manila", "Jakarta", "Lima", "Bogota",
    "Santiago", "Buenos Aires", "Nairobi", "Lagos", "Cape Town", "Melbourne", "Auckland", "Vancouver",
    "Montreal", "Phoenix", "Dallas", "Houston", "Atlanta", "Portland", "Nashville", "Detroit", "Orlando",
    "San Diego", "Philadelphia", "Kyoto", "Osaka", "Hanoi", "Delhi", "Doha", "Havana", "Edinburgh",
    "Munich", "Hamburg", "Milan", "Naples", "Venice", "Florence", "Barcelona", "Porto", "Krakow", "Geneva",
    "Lyon",
)  # fmt: skip
"""Cities beyond the ones the Google answer box knows."""

BRANDS = (
    "Lenovo", "Dell", "Asus", "Acer", "Razer", "Garmin", "Nikon", "Fujifilm", "Panasonic", "Philips",
    "Dyson", "Roku", "Anker", "Corsair", "Huawei", "Xiaomi", "OnePlus", "Motorola", "Nokia", "Toshiba",
    "Sonos", "Beats", "Skullcandy", "Peloton", "Kobo", "Polaroid", "Casio", "Brother",
)  # fmt: skip
"""Makers of drawn products."""

MODELS = (
    "Nova", "Aero", "Spark", "Vortex", "Orbit", "Edge", "Note", "Pulse", "Zen", "Surge", "Halo", "Nimbus",
    "Prime", "Ultra", "Max", "Plus", "Go", "One", "Blade", "Vista", "Echo", "Flex", "Vibe", "Swift",
)  # fmt: skip
"""Model names of drawn products."""

_SITE_TLDS = ("com", "com", "com", "org", "net", "io", "co", "tv", "info")


def noun_phrase(rng: random.Random) -> str:
    """One or two nouns: ``lantern``, ``marble turtle``."""
    words = rng.sample(NOUNS, rng.choice((1, 2)))
    return " ".join(words)


def site(rng: random.Random) -> str:
    """A site address that is nobody's in particular: ``lantern.com``, ``pandaradio.net``."""
    words = rng.sample(NOUNS, rng.choice((1, 1, 2)))
    return f"{''.join(words)}.{rng.choice(_SITE_TLDS)}"
