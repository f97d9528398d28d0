"""A table of TOML (or JSON) read into a settings dataclass: each key against the dataclass's fields
(unknown keys refused, with the nearest known one), each value against its field's type and bounds
(``distrl.config.fields``). ``Values`` is that reading alone; ``distrl.config.reader.Reader`` builds the
inventory on it."""

from __future__ import annotations

import dataclasses
import difflib
import math
import operator
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from distrl.errors import ConfigError

T = TypeVar("T")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class Values:
    """Reads tables into settings dataclasses; every error is a ``ConfigError`` naming ``file`` and the
    TOML path."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.base = Path(file).resolve().parent if file else Path.cwd()

    def local_path(self, value: str) -> str:
        """A path on this machine: ``~`` expanded, relative paths from the inventory's folder."""
        return str(self.base / Path(value).expanduser()) if value else ""

    def fail(self, path: str, problem: str) -> ConfigError:
        return ConfigError.at(path, problem, self.file)

    def section(self, cls: type[T], table: object, path: str) -> T:
        """``table`` read into ``cls``; the dataclass's own checks (across fields, or an algorithm's
        ``__post_init__``) are named at ``path`` too."""
        values = self.fields(cls, self.table(table, path), path)
        try:
            return cls(**values)
        except ConfigError as exc:  # a bound across fields, checked by the dataclass itself: name the file
            if exc.file or not self.file:
                raise
            raise self.fail(exc.path or path, exc.problem or str(exc)) from None
        except (ValueError, TypeError) as exc:  # an algorithm's settings checking themselves their own way
            raise self.fail(path, str(exc) or type(exc).__name__) from None

    def fields(self, cls: type[Any], table: dict[str, Any], path: str) -> dict[str, Any]:
        """Check ``table``'s keys and values against ``cls``'s fields; returns the converted values."""
        # a field marked ``not_a_key`` is the reader's to set: the inventory's source, the learner's tables
        specs = {f.name: f for f in dataclasses.fields(cls) if f.init and not f.metadata.get("not_a_key")}
        self.reject_unknown(table, list(specs), path)
        try:
            hints = typing.get_type_hints(cls)
        except Exception as exc:  # a name only imported for type checking, say, in an algorithm's settings
            raise self.fail(path, f"{cls.__qualname__}'s field types cannot be read: {exc}") from None
        values: dict[str, Any] = {}
        for key, raw in table.items():
            where = join(path, key)
            value = self.value(hints[key], raw, where)
            self.check_bounds(specs[key].metadata, value, where)
            pattern = specs[key].metadata.get("pattern")
            if pattern is not None and value and not pattern.fullmatch(value):
                raise self.fail(where, f"{value!r} is not {specs[key].metadata['meaning']}")
            values[key] = value
        return values

    def value(self, hint: Any, raw: object, path: str) -> Any:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if isinstance(raw, int) and not isinstance(raw, bool) and not -(2**63) <= raw < 2**63:
            raise self.fail(path, f"a {raw.bit_length() + 1}-bit integer is beyond TOML's (64 bits)")
        if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
            # Optional: TOML has no null, so a key set is the other type's (a key left out keeps None)
            return self.value(next(a for a in args if a is not type(None)), raw, path)
        if hint is bool:
            if isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected true or false, got {describe(raw)}")
        if hint is int:
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected an integer, got {describe(raw)}")
        if hint is float:
            if isinstance(raw, float) and math.isnan(raw):
                raise self.fail(path, "must be a number, not nan")
            if isinstance(raw, int | float) and not isinstance(raw, bool):
                return float(raw)
            raise self.fail(path, f"expected a number, got {describe(raw)}")
        if hint is str:
            if not isinstance(raw, str):
                raise self.fail(path, f"expected a string, got {describe(raw)}")
            if "\0" in raw:
                raise self.fail(path, "must not contain a NUL character")
            return raw
        if origin is Literal:
            if any(type(choice) is type(raw) and choice == raw for choice in args):  # 1 is no "1", nor True
                return raw
            choices = ", ".join(repr(a) for a in args)
            raise self.fail(path, f"expected one of {choices}, got {describe(raw)}")
        if origin is tuple:
            if not isinstance(raw, list):
                raise self.fail(path, f"expected an array, got {describe(raw)}")
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(self.value(args[0], item, f"{path}[{i}]") for i, item in enumerate(raw))
            if len(raw) != len(args):
                raise self.fail(path, f"expected an array of {len(args)} items, got {len(raw)}")
            return tuple(
                self.value(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, raw, strict=True))
            )
        if origin in (Mapping, dict):
            table = self.table(raw, path)
            result: dict[str, str] = {}
            for key, item in table.items():
                where = join(path, key)
                if not _ENV_NAME.fullmatch(key):
                    raise self.fail(where, f"{key!r} is not a valid environment variable name")
                result[key] = self.value(args[1] if len(args) == 2 else Any, item, where)
            return result
        if origin is list:
            if not isinstance(raw, list):
                raise self.fail(path, f"expected an array, got {describe(raw)}")
            return [self.value(args[0] if args else Any, item, f"{path}[{i}]") for i, item in enumerate(raw)]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self.section(hint, raw, path)
        if hint is Any:
            return raw
        # an algorithm's own settings may declare any type: say which one TOML cannot set
        declared = hint.__name__ if isinstance(hint, type) else str(hint)
        raise self.fail(
            path,
            f"is declared {declared}, a type the inventory cannot set (it sets bool, int, float, str,"
            " Literal, tuple, list, dict of str, a dataclass, and X | None)",
        )

    def check_bounds(self, bounds: Mapping[str, Any], value: object, path: str) -> None:
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                self.check_bounds(bounds, item, f"{path}[{i}]")
            return
        if not isinstance(value, int | float):
            return
        if math.isinf(value) and not bounds.get("allow_inf"):
            raise self.fail(path, f"must be finite, got {value}")
        checks = (
            ("ge", operator.ge, "at least"),
            ("gt", operator.gt, "greater than"),
            ("le", operator.le, "at most"),
        )
        for key, ok, words in checks:
            bound = bounds.get(key)
            if bound is not None and not ok(value, bound):
                raise self.fail(path, f"must be {words} {bound:g}, got {value:g}")

    def table(self, raw: object, path: str) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(path, f"expected a table, got {describe(raw)}")
        return raw

    def reject_unknown(self, table: Mapping[str, object], allowed: list[str], path: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise self.fail(join(path, key), f"unknown key{hint}")


def join(path: str, key: str) -> str:
    part = key if _BARE_KEY.fullmatch(key) else '"' + key.replace('"', '\\"') + '"'
    return f"{path}.{part}" if path else part


def describe(value: object) -> str:
    kinds: dict[type[Any], str] = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    kind = next((words for cls, words in kinds.items() if isinstance(value, cls)), type(value).__name__)
    if isinstance(value, dict | list):
        return kind
    shown = repr(value) if not isinstance(value, bool) else str(value).lower()
    return f"{kind} ({shown[:60]})"
