"""Word pools for drawn parameter sets (``Template.draw``): things to search for, places, products and
sites that are neither ``train`` nor ``test`` values.

A drawn task types words from these pools, or half the time made-up words (``made_up``), so a policy
cloned on drawn tasks has to copy what it types from the goal: a pool's words alone can be memorised.
None of the pools holds a word that only a held-out (``test``) value of a ``general`` template has
(``tests/test_sim_general.py`` checks it): "guitar lessons", "Seattle" or "Kindle Paperwhite" are never
typed in pretraining.
"""

from __future__ import annotations

import random
from functools import cache

__all__ = [
    "BRANDS",
    "CITY_NAMES",
    "MODELS",
    "NOUNS",
    "PLACES",
    "TOPICS",
    "acronym",
    "brand",
    "city",
    "made_up",
    "noun",
    "noun_phrase",
    "proper_name",
    "site",
]

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


_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_CLUSTERS = ("bl", "br", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "pl", "pr", "sk", "sl", "sp", "st", "tr",
             "ch", "sh")  # fmt: skip
_CODAS = ("n", "r", "l", "s", "t", "m", "ss", "tt", "ll", "nd", "st", "ck", "ng", "rk")


def made_up(rng: random.Random) -> str:
    """A word no language has, two or three syllables: ``bovani``, ``teku``, ``clastren``, ``bittomor``.

    Half of what drawn tasks type is made up: a policy cloned on them cannot recall what to type from the
    words it has seen, so it learns to copy from the goal, which is what held-out values ask. A syllable
    starts with a consonant or, a quarter of the time, a cluster (``cl``, ``st``), and a third of them end
    in one (``ss``, ``nd``): real words are spelt so ("classes", "Seattle"), and a policy that has only ever
    copied consonant-vowel pairs turns them into words it knows. A made-up word is never a word of a
    held-out goal (those are drawn again)."""
    while True:
        syllables = []
        for _ in range(rng.choice((2, 3))):
            onset = rng.choice(_CLUSTERS) if rng.random() < 0.25 else rng.choice(_CONSONANTS)
            coda = rng.choice(_CODAS) if rng.random() < 0.33 else ""
            syllables.append(onset + rng.choice(_VOWELS) + coda)
        word = "".join(syllables)
        if word not in _held_out_words():
            return word


def acronym(rng: random.Random) -> str:
    """Two to four capital letters, a maker's name as some are written (``JBL``, ``DJI``); never a word of
    a held-out goal."""
    while True:
        word = "".join(rng.choice("ABCDEFGHIJKLMNOPRSTVWXZ") for _ in range(rng.choice((2, 3, 3, 4))))
        if word.lower() not in _held_out_words():
            return word


@cache
def _held_out_words() -> frozenset[str]:
    from distrl.sim.suites import SUITES

    return frozenset(
        word.strip(".,?!'\"").lower()
        for found in SUITES.values()
        for task in found.tasks()
        if task.split != "train"
        for word in task.goal.split()
    )


def noun(rng: random.Random) -> str:
    """An everyday noun (``NOUNS``) or, half the time, a made-up one."""
    return rng.choice(NOUNS) if rng.random() < 0.5 else made_up(rng)


def city(rng: random.Random) -> str:
    """A city of ``CITY_NAMES`` or, half the time, a made-up one."""
    return rng.choice(CITY_NAMES) if rng.random() < 0.5 else made_up(rng).capitalize()


def brand(rng: random.Random) -> str:
    """A maker of ``BRANDS`` or, half the time, a made-up one (a fifth of those an ``acronym``)."""
    if rng.random() < 0.5:
        return rng.choice(BRANDS)
    return acronym(rng) if rng.random() < 0.2 else made_up(rng).capitalize()


def proper_name(rng: random.Random) -> str:
    """One or two capitalised made-up words, the name of a song, a team or a place: ``Bovani Clastren``."""
    return " ".join(made_up(rng).capitalize() for _ in range(rng.choice((1, 2))))


def noun_phrase(rng: random.Random) -> str:
    """One or two nouns: ``lantern``, ``marble turtle``, ``bovani turtle``."""
    return " ".join(noun(rng) for _ in range(rng.choice((1, 2))))


def site(rng: random.Random) -> str:
    """A site address that is nobody's in particular: ``lantern.com``, ``pandaradio.net``, ``teku.io``."""
    words = [noun(rng) for _ in range(rng.choice((1, 1, 2)))]
    return f"{''.join(words)}.{rng.choice(_SITE_TLDS)}"
