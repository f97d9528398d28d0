"""Words and hashes the web pages share: tokens for search, normalised queries, stable hashes.

Everything here is deterministic across processes and machines (no ``hash()``, whose value for strings
changes with every interpreter), so the same query gives the same result page everywhere.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

__all__ = ["STOP_WORDS", "clip", "normalise_query", "stable", "stem", "tail", "title_case", "tokens"]

STOP_WORDS = frozenset(
    {"a", "an", "the", "for", "and", "of", "to", "in", "on", "with", "is", "it", "me", "my", "what", "s"}
)
"""Words a search ignores when it matches products (they still count in ``normalise_query``)."""

_WORD = re.compile(r"[a-z0-9]+")


def stable(*parts: object) -> int:
    """A 64-bit hash of ``parts`` that is the same in every process."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def stem(word: str) -> str:
    """A crude singular: ``headphones`` -> ``headphone``, ``batteries`` -> ``battery``."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=8192)
def tokens(text: str) -> tuple[str, ...]:
    """The lower-case alphanumeric words of ``text``, stemmed, in order (stop words kept)."""
    return tuple(stem(word) for word in _WORD.findall(text.lower()))


def normalise_query(text: str) -> str:
    """A query as sites compare it: lower case, quotes and outer spaces gone, spaces collapsed."""
    cleaned = text.lower().replace('"', " ").replace("'", " ").replace("+", " ")
    return " ".join(cleaned.split())


def title_case(text: str) -> str:
    """``razer thresher`` -> ``Razer Thresher`` (words already holding capitals are kept)."""
    return " ".join(word if word != word.lower() else word[:1].upper() + word[1:] for word in text.split())


def clip(value: str, limit: int = 200) -> str:
    """``value`` cut to ``limit`` characters (user-typed text can be any length; screens show a line)."""
    return value if len(value) <= limit else value[: limit - 3] + "..."


def tail(value: str, limit: int = 80) -> str:
    """The end of ``value``, as a text field scrolled to its cursor shows it."""
    return value if len(value) <= limit else "..." + value[3 - limit :]
