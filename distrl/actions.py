"""The text action grammar of Android in the Wild / AutoUI, to and from ``Action``, and device gestures.

AutoUI (as used by DigiRL and DistRL) answers with a plan and a decision::

    Action Plan: [DUAL_POINT,PRESS_HOME] ; Action Decision: "action_type": "DUAL_POINT",
    "touch_point": "[0.7852, 0.6779]", "lift_point": "[0.7852, 0.6779]", "typed_text": ""

Only the decision counts: the text after the last ``Action Decision:`` (the whole text if there is
none). Its body is a JSON object without the braces, so ``parse_action`` first reads it strictly with
``json``; when that fails (sloppy spacing, missing fields, trailing garbage, points without quotes) it
falls back to a lenient scan of ``key: value`` pairs. Unknown keys are ignored.

- ``action_type`` is an ``ActionType`` name, any case; ``TASK_IMPOSSIBLE`` and ``TASK_COMPLETE`` are
  accepted for the ``STATUS_`` types, as DigiRL and DistRL do.
- ``touch_point`` / ``lift_point`` are normalised ``[y, x]`` pairs in [0, 1], written with 4 decimals.
  Only DUAL_POINT reads them; the other types write ``"[-1.0, -1.0]"`` and ignore what they hold.
- ``typed_text`` is what TYPE types (non-empty); ``format_action`` JSON-escapes it.

Anything else becomes an ``InvalidAction`` with the reason in one sentence; ``parse_action`` never
raises. Decisions longer than ``MAX_DECISION_CHARS`` are rejected unread, and the scanning regexes use
possessive quantifiers, so no input can make parsing slow.

``to_gesture`` turns an ``Action`` into what a device does (tap, swipe, text, key, end of episode) in
pixels; ``tap_action`` and ``swipe_action`` go the other way for the simulated phone's expert.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass

from distrl.records import Action, ActionType, InvalidAction, Point

__all__ = [
    "parse_action",
    "format_action",
    "decision_spans",
    "MAX_DECISION_CHARS",
    "Tap",
    "Swipe",
    "TypeText",
    "KeyEvent",
    "EndEpisode",
    "Gesture",
    "KEYCODE_HOME",
    "KEYCODE_BACK",
    "KEYCODE_ENTER",
    "to_gesture",
    "tap_action",
    "swipe_action",
]

MAX_DECISION_CHARS = 16 * 1024
"""Longest action decision ``parse_action`` reads, in characters; longer ones are invalid."""

_MARKER = "Action Decision:"
_NO_POINT = "[-1.0, -1.0]"
_TYPE_NAMES: Mapping[str, ActionType] = {
    **{action_type.name: action_type for action_type in ActionType},
    "TASK_COMPLETE": ActionType.STATUS_TASK_COMPLETE,
    "TASK_IMPOSSIBLE": ActionType.STATUS_TASK_IMPOSSIBLE,
}

# One ``key: value`` pair. The key may be quoted, and starts a word (the lookbehind keeps the scan
# linear); the value is a JSON-ish string (closing quote optional), a bracketed list, or a bare word.
_PAIR = re.compile(
    r"""(?<![\w"])"?+(?P<key>\w++)"?+\s*+:\s*+
    (?: "(?P<string>(?:[^"\\]|\\.)*+)"?+
      | (?P<list>\[[^\]]*+\]?+)
      | (?P<bare>[^\s,"]*+) )""",
    re.VERBOSE | re.DOTALL,
)


class _Rejected(Exception):
    """Why a decision is not an action; caught in ``parse_action``, never escapes this module."""


def parse_action(text: str) -> Action | InvalidAction:
    """The action in a model's output, or an ``InvalidAction`` saying why there is none. Never raises."""
    try:
        return _to_action(_read_fields(_decision(text)))
    except _Rejected as exc:
        return InvalidAction(text=text, reason=str(exc))


_DECISION_FIELDS = frozenset({"action_type", "touch_point", "lift_point", "typed_text"})


def decision_spans(text: str) -> list[tuple[int, int]]:
    """Where the decision's values lie in ``text``: ``(start, end)`` character spans of the values of
    ``action_type``, ``touch_point``, ``lift_point`` and ``typed_text`` after the last marker (the first
    of each, as ``parse_action`` reads them), but for the ``[-1.0, -1.0]`` of "no point", which the action
    type implies. The rest (the marker, keys, quotes, separators, a plan) is
    the format every answer shares. Empty when the decision is too long to read."""
    start = text.rfind(_MARKER)
    offset = start + len(_MARKER) if start >= 0 else 0
    if len(text) - offset > MAX_DECISION_CHARS:
        return []
    spans: dict[str, tuple[int, int]] = {}
    for match in _PAIR.finditer(text, offset):
        if match["key"] not in _DECISION_FIELDS or match["key"] in spans:
            continue
        group = next(name for name in ("string", "list", "bare") if match[name] is not None)
        if match.end(group) > match.start(group) and match[group] != _NO_POINT:  # no point: the type says it
            spans[match["key"]] = (match.start(group), match.end(group))
    return sorted(spans.values())


def _decision(text: str) -> str:
    """The text after the last ``Action Decision:`` marker, or all of it if there is none."""
    start = text.rfind(_MARKER)
    body = text[start + len(_MARKER) :] if start >= 0 else text
    if len(body) > MAX_DECISION_CHARS:
        raise _Rejected(f"the action decision is longer than {MAX_DECISION_CHARS} characters")
    if not body.strip():
        raise _Rejected("the action decision is empty" if start >= 0 else "the output is empty")
    return body


def _read_fields(body: str) -> Mapping[str, object]:
    """The decision's fields: strict JSON if it is that, else whatever the lenient scan finds."""
    try:
        fields: dict[str, object] = json.loads("{" + body + "}", object_pairs_hook=_first_wins)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return _scan_fields(body)
    return fields


def _scan_fields(body: str) -> Mapping[str, object]:
    fields: dict[str, object] = {}
    for match in _PAIR.finditer(body):
        if match["string"] is not None:
            value = _unescape(match["string"])
        else:
            value = match["list"] if match["list"] is not None else match["bare"]
        fields.setdefault(match["key"], value)
    return fields


def _first_wins(pairs: list[tuple[str, object]]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for key, value in pairs:
        fields.setdefault(key, value)
    return fields


def _unescape(raw: str) -> str:
    """A JSON string body decoded; as written if its escapes are broken."""
    try:
        return str(json.loads('"' + raw + '"', strict=False))
    except ValueError:
        return raw


def _to_action(fields: Mapping[str, object]) -> Action:
    raw_type = fields.get("action_type")
    if raw_type is None:
        raise _Rejected("the output has no action_type")
    if not isinstance(raw_type, str):
        raise _Rejected(f"action_type {_preview(raw_type)} is not a string")
    action_type = _TYPE_NAMES.get(raw_type.strip().upper())
    if action_type is None:
        raise _Rejected(f"unknown action type {_preview(raw_type)}")
    if action_type is ActionType.DUAL_POINT:
        touch = _point(fields, "touch_point")
        lift = _point(fields, "lift_point")
        return Action(type=action_type, touch=touch, lift=lift)
    if action_type is ActionType.TYPE:
        typed = fields.get("typed_text")
        if not isinstance(typed, str):
            raise _Rejected("TYPE has no typed_text string")
        if not typed:
            raise _Rejected("TYPE has empty typed_text")
        if not _is_unicode(typed):
            raise _Rejected("TYPE typed_text holds lone surrogates, which no device can type")
        return Action(type=action_type, text=typed)
    return Action(type=action_type)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _point(fields: Mapping[str, object], name: str) -> Point:
    value = fields.get(name)
    if value is None:
        raise _Rejected(f"DUAL_POINT has no {name}")
    if isinstance(value, str):
        inner = value.strip().removeprefix("[").removesuffix("]")
        parts: list[object] = [part.strip().strip("\"'") for part in inner.split(",")]
    elif isinstance(value, list):
        parts = value
    else:
        raise _Rejected(f"{name} {_preview(value)} is not a [y, x] pair")
    if len(parts) != 2:
        raise _Rejected(f"{name} {_preview(value)} is not a [y, x] pair")
    try:
        y, x = (_number(part) for part in parts)
    except (ValueError, OverflowError):
        raise _Rejected(f"{name} {_preview(value)} is not a pair of numbers") from None
    if not (math.isfinite(y) and math.isfinite(x)):
        raise _Rejected(f"{name} {_preview(value)} is not finite")
    if not (0.0 <= y <= 1.0 and 0.0 <= x <= 1.0):
        raise _Rejected(f"{name} {_preview(value)} is out of range [0, 1]")
    return (y, x)


def _number(value: object) -> float:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"{value!r} is not a number")


def _preview(value: object) -> str:
    """A short repr for a reason; ``reprlib`` bounds its length and depth whatever the model wrote."""
    return _REPR.repr(value)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40


def format_action(action: Action) -> str:
    """The canonical ``Action Decision: ...`` line for ``action``; ``parse_action`` reads it back."""
    # Escaping the marker's colon keeps "after the last marker" pointing at this decision.
    text = json.dumps(action.text, ensure_ascii=False).replace(_MARKER, _MARKER[:-1] + "\\u003a")
    return (
        f'{_MARKER} "action_type": "{action.type.name}", "touch_point": "{_format_point(action.touch)}", '
        f'"lift_point": "{_format_point(action.lift)}", "typed_text": {text}'
    )


def _format_point(point: Point | None) -> str:
    return _NO_POINT if point is None else f"[{point[0]:.4f}, {point[1]:.4f}]"


KEYCODE_HOME = 3
"""Android ``KEYCODE_HOME``."""
KEYCODE_BACK = 4
"""Android ``KEYCODE_BACK``."""
KEYCODE_ENTER = 66
"""Android ``KEYCODE_ENTER``."""

_KEYCODES: Mapping[ActionType, int] = {
    ActionType.PRESS_BACK: KEYCODE_BACK,
    ActionType.PRESS_HOME: KEYCODE_HOME,
    ActionType.PRESS_ENTER: KEYCODE_ENTER,
}


@dataclass(frozen=True, slots=True)
class Tap:
    """Touch and release at one pixel (``input tap x y``)."""

    x: int
    y: int


@dataclass(frozen=True, slots=True)
class Swipe:
    """Drag from ``(x1, y1)`` to ``(x2, y2)`` in pixels (``input swipe x1 y1 x2 y2 duration_ms``)."""

    x1: int
    y1: int
    x2: int
    y2: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class TypeText:
    """Type text (``input text``): into the focused field, or to the app in front where none is (a
    keypad that takes keys); no focus tap, no enter."""

    text: str


@dataclass(frozen=True, slots=True)
class KeyEvent:
    """Press one Android key (``input keyevent keycode``)."""

    keycode: int


@dataclass(frozen=True, slots=True)
class EndEpisode:
    """The policy ended the episode; nothing happens on the device."""

    status: ActionType
    """STATUS_TASK_COMPLETE or STATUS_TASK_IMPOSSIBLE."""


Gesture = Tap | Swipe | TypeText | KeyEvent | EndEpisode


def to_gesture(
    action: Action, width: int, height: int, *, tap_radius: float = 0.04, swipe_ms: int = 200
) -> Gesture:
    """What ``action`` does on a ``width`` × ``height`` pixel screen.

    A DUAL_POINT is a tap at the touch point when the normalised distance from touch to lift is at most
    ``tap_radius`` (AitW's ``action_matching`` rule), else a swipe lasting ``swipe_ms``. DigiRL and
    DistRL instead tap when the squared *pixel* distance is below 10. Points are ``(y, x)``; pixels
    are ``(x, y)``, rounded and kept on the screen.
    """
    if width <= 0 or height <= 0:
        raise ValueError(f"screen size must be positive, got {width}x{height}")
    if action.type is ActionType.DUAL_POINT:
        # Action's own checks guarantee both points on a DUAL_POINT.
        assert action.touch is not None
        assert action.lift is not None
        x1, y1 = _pixel(action.touch, width, height)
        if math.dist(action.touch, action.lift) <= tap_radius:
            return Tap(x1, y1)
        x2, y2 = _pixel(action.lift, width, height)
        return Swipe(x1, y1, x2, y2, swipe_ms)
    if action.type is ActionType.TYPE:
        return TypeText(action.text)
    if action.type.ends_episode:
        return EndEpisode(action.type)
    return KeyEvent(_KEYCODES[action.type])


def _pixel(point: Point, width: int, height: int) -> tuple[int, int]:
    y, x = point
    return min(round(x * width), width - 1), min(round(y * height), height - 1)


def tap_action(x_px: int, y_px: int, width: int, height: int) -> Action:
    """A DUAL_POINT tapping pixel ``(x_px, y_px)``; ``to_gesture`` maps it back to that pixel (±1)."""
    touch = _normalise(x_px, y_px, width, height)
    return Action(type=ActionType.DUAL_POINT, touch=touch, lift=touch)


def swipe_action(x1: int, y1: int, x2: int, y2: int, width: int, height: int) -> Action:
    """A DUAL_POINT from pixel ``(x1, y1)`` to ``(x2, y2)``; a tap to ``to_gesture`` if they are close."""
    touch = _normalise(x1, y1, width, height)
    lift = _normalise(x2, y2, width, height)
    return Action(type=ActionType.DUAL_POINT, touch=touch, lift=lift)


def _normalise(x_px: int, y_px: int, width: int, height: int) -> Point:
    if width <= 0 or height <= 0:
        raise ValueError(f"screen size must be positive, got {width}x{height}")
    if not (0 <= x_px < width and 0 <= y_px < height):
        raise ValueError(f"pixel ({x_px}, {y_px}) is outside the {width}x{height} screen")
    return (round(y_px / height, 4), round(x_px / width, 4))
