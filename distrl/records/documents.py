"""The one typed reader of the JSON documents distrl reads: wire headers, episodes, task files, the
records' JSON form (``distrl.records.forms``), the replay buffer's file header and the weights' headers.

A document is read field by field, each value checked for its JSON type as it is taken, and every
problem is one error naming the field's path (``header.task.max_steps must be an integer, not a
string``). The error is the reader's to choose (``Fail``): a ``DocumentError`` (a ``ValueError``) by
default, a ``WireError`` for the wire, a ``WeightsError`` for the weights. ``close`` refuses the fields
nobody read, for formats that allow none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from distrl.records.vocabulary import ParamValue

__all__ = [
    "Document",
    "DocumentError",
    "Fail",
    "boolean",
    "integer",
    "kind_of",
    "number",
    "scalar",
    "scalars",
    "string",
]

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


class DocumentError(ValueError):
    """A document that is not what its reader expects: ``problem`` with the field at ``where``."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where} {problem}" if where else problem)
        self.where = where
        self.problem = problem


Fail = Callable[[str, str], Exception]
"""Makes the error for a field's path and its problem (``DocumentError`` unless the reader says)."""


def kind_of(value: object) -> str:
    """The JSON type of ``value`` in words: ``a string``, ``an object``, ``null``."""
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int():
            return "an integer"
        case float():
            return "a number"
        case str():
            return "a string"
        case list():
            return "an array"
        case dict():
            return "an object"
    return f"a {type(value).__name__}"


def integer(value: object, where: str, *, minimum: int | None = None, fail: Fail = DocumentError) -> int:
    """``value`` as a signed 64-bit integer (no boolean), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(where, f"must be an integer, not {kind_of(value)}")
    if not _INT_MIN <= value <= _INT_MAX:
        raise fail(where, f"is {value}, outside the signed 64-bit range")
    if minimum is not None and value < minimum:
        raise fail(where, f"must be >= {minimum}, not {value}")
    return int(value)


def number(value: object, where: str, *, finite: bool = True, fail: Fail = DocumentError) -> float:
    """``value`` as a float (an integer is one too); a finite one unless ``finite`` is False (Python's
    ``json`` writes and reads ``NaN`` and ``Infinity``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(integer(value, where, fail=fail))
    if not isinstance(value, float):
        raise fail(where, f"must be a number, not {kind_of(value)}")
    if finite and not math.isfinite(value):
        raise fail(where, f"is {value!r}: a non-finite number, which JSON cannot hold")
    return float(value)


def string(value: object, where: str, *, fail: Fail = DocumentError) -> str:
    if not isinstance(value, str):
        raise fail(where, f"must be a string, not {kind_of(value)}")
    return str(value)


def boolean(value: object, where: str, *, fail: Fail = DocumentError) -> bool:
    if not isinstance(value, bool):
        raise fail(where, f"must be a boolean, not {kind_of(value)}")
    return value


def scalar(value: object, where: str, *, fail: Fail = DocumentError) -> ParamValue:
    """A string, number or boolean (a task's parameter value)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return integer(value, where, fail=fail)
    if isinstance(value, float):
        return number(value, where, fail=fail)
    raise fail(where, f"must be a string, number or boolean, not {kind_of(value)}")


def scalars(value: object, where: str, *, fail: Fail = DocumentError) -> dict[str, ParamValue]:
    """A string-keyed mapping of scalars, keys sorted so equal mappings encode alike."""
    if not isinstance(value, Mapping):
        raise fail(where, f"must be a mapping, not {kind_of(value)}")
    keys = [string(key, f"{where} key {key!r}", fail=fail) for key in value]
    return {key: scalar(value[key], f"{where}.{key}", fail=fail) for key in sorted(keys)}


class Document:
    """A JSON object being read field by field; ``close`` refuses the fields nobody read.

    ``where`` is the object's path (``header.task``), or empty for a whole document whose errors name
    its fields alone (``fail`` then says which file)."""

    __slots__ = ("_data", "_read", "fail", "where")

    def __init__(self, data: object, where: str, *, fail: Fail = DocumentError) -> None:
        if not isinstance(data, dict):
            raise fail(where, f"must be an object, not {kind_of(data)}")
        self._data: dict[str, object] = data
        self._read: set[str] = set()
        self.where = where
        self.fail = fail

    def at(self, key: str) -> str:
        """The path of field ``key``."""
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        return key in self._data

    def take(self, key: str) -> object:
        """The value of ``key``, of any type; missing is an error."""
        if key not in self._data:
            raise self.fail(self.at(key), "is missing")
        self._read.add(key)
        return self._data[key]

    def is_null(self, key: str) -> bool:
        """Whether ``key`` is there and null (then it counts as read)."""
        if self._data.get(key, ...) is None:
            self._read.add(key)
            return True
        return False

    def integer(self, key: str, *, minimum: int | None = None) -> int:
        return integer(self.take(key), self.at(key), minimum=minimum, fail=self.fail)

    def number(self, key: str, *, finite: bool = True) -> float:
        return number(self.take(key), self.at(key), finite=finite, fail=self.fail)

    def string(self, key: str) -> str:
        return string(self.take(key), self.at(key), fail=self.fail)

    def boolean(self, key: str) -> bool:
        return boolean(self.take(key), self.at(key), fail=self.fail)

    def array(self, key: str) -> list[object]:
        value = self.take(key)
        if not isinstance(value, list):
            raise self.fail(self.at(key), f"must be an array, not {kind_of(value)}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        """An array of strings."""
        values, where = self.array(key), self.at(key)
        return tuple(string(value, f"{where}[{i}]", fail=self.fail) for i, value in enumerate(values))

    def document(self, key: str) -> Document:
        """The object at ``key``, to be read field by field in turn."""
        return Document(self.take(key), self.at(key), fail=self.fail)

    def names(self) -> list[str]:
        return list(self._data)

    def close(self) -> None:
        """Refuse the fields nobody read."""
        unknown = self._data.keys() - self._read
        if unknown:
            raise self.fail(self.where, f"has unknown field(s) {sorted(unknown)}")
