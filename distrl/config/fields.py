"""How a setting states its bounds: ``num_field`` and ``text_field`` put them in the dataclass field's
metadata, where ``distrl.config.values`` checks every value at load time."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

__all__ = ["NAME", "NAME_MEANING", "num_field", "text_field"]


def num_field(
    default: float,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    allow_inf: bool = False,
) -> Any:
    """A numeric field with its bounds, checked at load time. Infinity is refused unless allowed."""
    return field(default=default, metadata={"ge": ge, "gt": gt, "le": le, "allow_inf": allow_inf})


def text_field(default: str, pattern: str, meaning: str) -> Any:
    """A string field that must match ``pattern`` (empty always passes); ``meaning`` is for the error."""
    return field(default=default, metadata={"pattern": re.compile(pattern), "meaning": meaning})


NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""The pattern of a run's or a host's name."""
NAME_MEANING = "a name (letters, digits, '.', '_', '-'; at most 64)"
