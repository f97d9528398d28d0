"""The AitW / AutoUI text action grammar: parsing, formatting, and gestures in pixels."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from distrl.actions import (
    KEYCODE_BACK,
    KEYCODE_ENTER,
    KEYCODE_HOME,
    MAX_DECISION_CHARS,
    EndEpisode,
    KeyEvent,
    Swipe,
    Tap,
    TypeText,
    format_action,
    parse_action,
    swipe_action,
    tap_action,
    to_gesture,
)
from distrl.records import Action, ActionType, InvalidAction, Point

T = ActionType
PAPER_OUTPUT = (
    'Action Plan: [DUAL_POINT,PRESS_HOME] ; Action Decision: "action_type": "DUAL_POINT", '
    '"touch_point": "[0.7852, 0.6779]", "lift_point": "[0.7852, 0.6779]", "typed_text": ""'
)


def decision(
    action_type: str, touch: str = "[-1.0, -1.0]", lift: str = "[-1.0, -1.0]", text: str = ""
) -> str:
    return (
        f'Action Decision: "action_type": "{action_type}", "touch_point": "{touch}", '
        f'"lift_point": "{lift}", "typed_text": "{text}"'
    )


# Strategies ------------------------------------------------------------------------------------------

POINT_FREE_TYPES = [
    T.PRESS_BACK,
    T.PRESS_HOME,
    T.PRESS_ENTER,
    T.STATUS_TASK_COMPLETE,
    T.STATUS_TASK_IMPOSSIBLE,
]


def actions(coordinate: st.SearchStrategy[float]) -> st.SearchStrategy[Action]:
    point = st.tuples(coordinate, coordinate)
    return st.one_of(
        st.builds(lambda touch, lift: Action(type=T.DUAL_POINT, touch=touch, lift=lift), point, point),
        st.text(min_size=1).map(lambda text: Action(type=T.TYPE, text=text)),
        st.sampled_from(POINT_FREE_TYPES).map(lambda action_type: Action(type=action_type)),
    )


GRID = st.integers(0, 10_000).map(lambda n: n / 10_000)
"""Coordinates that are multiples of 1e-4, which format_action writes exactly."""
UNIT = st.floats(0.0, 1.0)
SCREEN = st.integers(1, 4000)


def rounded(action: Action) -> Action:
    def r(point: Point | None) -> Point | None:
        return None if point is None else (round(point[0], 4), round(point[1], 4))

    return Action(type=action.type, touch=r(action.touch), lift=r(action.lift), text=action.text)


def assert_well_formed(text: str, result: Action | InvalidAction) -> None:
    assert isinstance(result, Action | InvalidAction)
    if isinstance(result, InvalidAction):
        assert result.text == text
        assert result.reason
        assert "\n" not in result.reason
    else:
        result.text.encode("utf-8")  # an action is always sendable: no lone surrogates
    if isinstance(result, Action) and len(formatted := format_action(result)) <= MAX_DECISION_CHARS:
        # Whatever parses is an action the canonical format can carry (escaping may make it too long).
        assert parse_action(formatted) == rounded(result)


# Parsing: examples --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PAPER_OUTPUT, Action(type=T.DUAL_POINT, touch=(0.7852, 0.6779), lift=(0.7852, 0.6779))),
        (
            decision("DUAL_POINT", "[0.2, 0.5]", "[0.8, 0.5]"),
            Action(type=T.DUAL_POINT, touch=(0.2, 0.5), lift=(0.8, 0.5)),
        ),
        (decision("TYPE", text="weather in Paris"), Action(type=T.TYPE, text="weather in Paris")),
        (decision("PRESS_HOME"), Action(type=T.PRESS_HOME)),
        (decision("PRESS_BACK"), Action(type=T.PRESS_BACK)),
        (decision("PRESS_ENTER"), Action(type=T.PRESS_ENTER)),
        (decision("STATUS_TASK_COMPLETE"), Action(type=T.STATUS_TASK_COMPLETE)),
        (decision("STATUS_TASK_IMPOSSIBLE"), Action(type=T.STATUS_TASK_IMPOSSIBLE)),
        (decision("TASK_IMPOSSIBLE"), Action(type=T.STATUS_TASK_IMPOSSIBLE)),
        (decision("TASK_COMPLETE"), Action(type=T.STATUS_TASK_COMPLETE)),
    ],
)
def test_paper_examples_parse(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # No marker: the whole text is the decision.
        ('"action_type": "PRESS_BACK"', Action(type=T.PRESS_BACK)),
        # Extra spaces, lower case, missing trailing fields.
        ('Action Decision:   "action_type" :  " press_home "  ', Action(type=T.PRESS_HOME)),
        (
            'Action Decision: "action_type": "DUAL_POINT", "touch_point": "[0.1,0.2]", '
            '"lift_point": "[0.3, 0.4]"',
            Action(type=T.DUAL_POINT, touch=(0.1, 0.2), lift=(0.3, 0.4)),
        ),
        # Points without inner quotes, or as JSON lists, or with quoted numbers.
        (
            'Action Decision: "action_type": "DUAL_POINT", "touch_point": [0.1, 0.2], '
            '"lift_point": [0.3, 0.4]',
            Action(type=T.DUAL_POINT, touch=(0.1, 0.2), lift=(0.3, 0.4)),
        ),
        (
            'Action Decision: "action_type": "DUAL_POINT", "touch_point": ["0.1", "0.2"], '
            '"lift_point": "[0.3, 0.4]" </s> garbage',
            Action(type=T.DUAL_POINT, touch=(0.1, 0.2), lift=(0.3, 0.4)),
        ),
        # Trailing garbage after the last field.
        (decision("TYPE", text="hello") + " ; Action Plan: [PRESS_ENTER]", Action(type=T.TYPE, text="hello")),
        # Escaped quotes survive, in the strict and in the lenient reading.
        (r'"action_type": "TYPE", "typed_text": "say \"hi\""', Action(type=T.TYPE, text='say "hi"')),
        (r'"action_type": "TYPE", "typed_text": "say \"hi\"" </s>', Action(type=T.TYPE, text='say "hi"')),
        # Unknown keys are ignored; non-point actions ignore whatever their points hold.
        (
            '"action_type": "PRESS_BACK", "confidence": 0.9, "touch_point": "[nan, 7]"',
            Action(type=T.PRESS_BACK),
        ),
        (decision("PRESS_ENTER", touch="garbage", lift="[5, -3]", text="x"), Action(type=T.PRESS_ENTER)),
        # The last decision counts.
        (decision("PRESS_BACK") + " " + decision("PRESS_HOME"), Action(type=T.PRESS_HOME)),
        # The first of two equal keys counts, strictly and leniently.
        ('"action_type": "PRESS_BACK", "action_type": "PRESS_HOME"', Action(type=T.PRESS_BACK)),
        ('"action_type": "PRESS_BACK", "action_type": "PRESS_HOME" junk', Action(type=T.PRESS_BACK)),
        # Bare words, unquoted keys and values, as small models write them: read by the lenient scan.
        ("Action Decision: action_type: PRESS_BACK", Action(type=T.PRESS_BACK)),
        (
            'action_type: DUAL_POINT, touch_point: [0.1, 0.2], lift_point: "[0.3, 0.4]"',
            Action(type=T.DUAL_POINT, touch=(0.1, 0.2), lift=(0.3, 0.4)),
        ),
    ],
)
def test_sloppy_outputs_parse(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("Action Decision:   ", "empty"),
        ("I think I should tap the button", "no action_type"),
        ('Action Decision: "touch_point": "[0.5, 0.5]"', "no action_type"),
        (decision("CLICK"), "unknown action type 'CLICK'"),
        (decision(""), "unknown action type"),
        ('"action_type": 4', "not a string"),
        ('"action_type": "DUAL_POINT"', "no touch_point"),
        ('"action_type": "DUAL_POINT", "touch_point": "[0.5, 0.5]"', "no lift_point"),
        (decision("DUAL_POINT", "[0.5, 0.5]", "[-1.0, -1.0]"), "lift_point '[-1.0, -1.0]' is out of range"),
        (decision("DUAL_POINT", "[1.5, 0.5]", "[0.5, 0.5]"), "touch_point '[1.5, 0.5]' is out of range"),
        (decision("DUAL_POINT", "[0.5, 0.5]", "[0.5, 1.0001]"), "out of range"),
        (decision("DUAL_POINT", "[nan, 0.5]", "[0.5, 0.5]"), "not finite"),
        (decision("DUAL_POINT", "[0.5, inf]", "[0.5, 0.5]"), "not finite"),
        (decision("DUAL_POINT", "[0.5, 1e999]", "[0.5, 0.5]"), "not finite"),
        ('"action_type": "DUAL_POINT", "touch_point": [NaN, 0.5], "lift_point": [0.5, 0.5]', "not finite"),
        (decision("DUAL_POINT", "[0.5]", "[0.5, 0.5]"), "not a [y, x] pair"),
        (decision("DUAL_POINT", "[0.1, 0.2, 0.3]", "[0.5, 0.5]"), "not a [y, x] pair"),
        (decision("DUAL_POINT", "[a, b]", "[0.5, 0.5]"), "not a pair of numbers"),
        ('"action_type": "DUAL_POINT", "touch_point": [true, 0.5], "lift_point": [0.5, 0.5]', "numbers"),
        ('"action_type": "DUAL_POINT", "touch_point": {"y": 0.5}, "lift_point": [0.5, 0.5]', "pair"),
        (decision("TYPE"), "TYPE has empty typed_text"),
        ('"action_type": "TYPE"', "TYPE has no typed_text"),
        ('"action_type": "TYPE", "typed_text": 42', "TYPE has no typed_text"),
        ("Action Decision: " + " " * (MAX_DECISION_CHARS + 1), "longer than"),
        (decision("TYPE", text="a" * MAX_DECISION_CHARS), "longer than"),
    ],
)
def test_invalid_outputs_say_why(text: str, reason: str) -> None:
    result = parse_action(text)
    assert isinstance(result, InvalidAction)
    assert result.text == text
    assert reason in result.reason


def test_a_decision_of_exactly_the_limit_is_read() -> None:
    fields = ' "action_type": "TYPE", "typed_text": "'
    body = fields + "a" * (MAX_DECISION_CHARS - len(fields) - 1) + '"'
    assert len(body) == MAX_DECISION_CHARS
    assert parse_action("Action Decision:" + body) == Action(type=T.TYPE, text=body[len(fields) : -1])


def test_long_plan_before_a_short_decision_is_read() -> None:
    text = "Action Plan: [" + "DUAL_POINT," * 10_000 + "] ; " + decision("PRESS_BACK")
    assert parse_action(text) == Action(type=T.PRESS_BACK)


@pytest.mark.parametrize(
    "text",
    [
        '"' * MAX_DECISION_CHARS,
        "\\" * MAX_DECISION_CHARS,
        "a" * MAX_DECISION_CHARS,
        " " * (MAX_DECISION_CHARS - 1) + "a",
        '"action_type": "DUAL_POINT", "touch_point": "[' + "1" * 16_000,
        '"action_type": "DUAL_POINT", "touch_point": [' + "[" * 8000 + "]" * 8000,
        '"action_type": "DUAL_POINT", "touch_point": [' + "[" * 900 + "]" * 900 + ', "lift_point": [1]',
        '"action_type": "TYPE", "typed_text": "' + "\\u" * 8000,
        '"action_type": "TYPE", "typed_text": ' + "9" * 16_000,
        ('action_type: "' * 2000)[:MAX_DECISION_CHARS],
        ("a" * 100 + " " * 100 + ":") * 70,
        "\x00\ud800\udfff\u2028\ufeff" * 3000,
    ],
)
def test_pathological_outputs_do_not_raise(text: str) -> None:
    assert_well_formed(text, parse_action(text))


# Formatting ------------------------------------------------------------------------------------------


def test_format_matches_the_paper() -> None:
    tap = Action(type=T.DUAL_POINT, touch=(0.7852, 0.6779), lift=(0.7852, 0.6779))
    assert format_action(tap) == PAPER_OUTPUT.split(" ; ")[1]
    assert format_action(Action(type=T.PRESS_HOME)) == decision("PRESS_HOME")
    assert format_action(Action(type=T.TYPE, text="hi")) == decision("TYPE", text="hi")
    assert format_action(Action(type=T.TYPE, text="café 東京")) == decision("TYPE", text="café 東京")
    assert format_action(Action(type=T.DUAL_POINT, touch=(0.5, 0), lift=(1, 0.25))) == decision(
        "DUAL_POINT", "[0.5000, 0.0000]", "[1.0000, 0.2500]"
    )
    # The marker inside typed text is written with its colon escaped, exactly so: tiny-bc learned it.
    assert format_action(Action(type=T.TYPE, text="Action Decision: go")).endswith(
        '"typed_text": "Action Decision\\u003a go"'
    )


@pytest.mark.parametrize(
    "text",
    [
        'say "hi"',
        "back\\slash\\",
        "two\nlines\r\n",
        'a", "b',
        '", "typed_text": "x',
        "Action Decision: x",
        "\u2028 \U0001f600 \x00",
    ],
)
def test_typed_text_survives_formatting(text: str) -> None:
    formatted = format_action(Action(type=T.TYPE, text=text))
    assert "\n" not in formatted
    assert parse_action(formatted) == Action(type=T.TYPE, text=text)
    # As the last decision of a longer output too.
    assert parse_action("Action Plan: [TYPE] ; " + formatted) == Action(type=T.TYPE, text=text)


@given(actions(GRID))
def test_format_then_parse_round_trips(action: Action) -> None:
    assert parse_action(format_action(action)) == action


@given(actions(UNIT))
def test_format_rounds_points_to_4_decimals(action: Action) -> None:
    assert parse_action(format_action(action)) == rounded(action)


# Parsing: never raises ------------------------------------------------------------------------------

MARKED = st.text().map(lambda text: "Action Decision: " + text)
DECODED = st.binary().flatmap(
    lambda data: st.sampled_from(
        [data.decode("utf-8", errors="surrogateescape"), data.decode("utf-8", errors="replace")]
    )
)
FIELDS = st.lists(
    st.tuples(
        st.sampled_from(["action_type", "touch_point", "lift_point", "typed_text", "x"]),
        st.one_of(
            st.sampled_from([t.name for t in T] + ["TASK_IMPOSSIBLE", "[0.5, 0.5]", "[-1.0, -1.0]"]),
            st.text(max_size=12),
        ),
        st.sampled_from(['"{}": "{}"', "{}: {}", '"{}": [{}]', '"{}":"{}']),
    ),
    max_size=5,
).map(lambda fields: ", ".join(template.format(key, value) for key, value, template in fields))


SURROGATES = st.text(st.characters(codec=None, categories=["Cs", "Lu", "Po"])).map(
    lambda text: '"action_type": "TYPE", "typed_text": "' + text + '"'
)
ESCAPED_SURROGATES = st.integers(0xD800, 0xDFFF).map(
    lambda code: f'"action_type": "TYPE", "typed_text": "a\\u{code:04x}"'
)


@pytest.mark.parametrize(
    "text",
    ['"action_type": "TYPE", "typed_text": "\ud800"', '"action_type": "TYPE", "typed_text": "\\udfff"'],
)
def test_lone_surrogates_cannot_be_typed(text: str) -> None:
    result = parse_action(text)
    assert isinstance(result, InvalidAction)
    assert "lone surrogates" in result.reason


@given(st.one_of(st.text(), MARKED, DECODED, FIELDS, SURROGATES, ESCAPED_SURROGATES))
def test_parse_never_raises(text: str) -> None:
    assert_well_formed(text, parse_action(text))


EDIT_CHARS = st.one_of(st.characters(), st.sampled_from(list('"\\,:[]{} .-0123456789eE\n')))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    chars = list(format_action(draw(actions(UNIT))))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(chars)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        if edit == "insert":
            chars.insert(at, draw(EDIT_CHARS))
        elif at < len(chars):
            if edit == "delete":
                del chars[at]
            else:
                chars[at] = draw(EDIT_CHARS)
    return "".join(chars)


@given(mutated())
def test_mutated_actions_never_raise(text: str) -> None:
    assert_well_formed(text, parse_action(text))


# Gestures ---------------------------------------------------------------------------------------------


def test_gestures_for_each_type() -> None:
    tap = Action(type=T.DUAL_POINT, touch=(0.7852, 0.6779), lift=(0.7852, 0.6779))
    assert to_gesture(tap, 1080, 2400) == Tap(732, 1884)  # (y, x) becomes (x, y)
    swipe = Action(type=T.DUAL_POINT, touch=(0.8, 0.5), lift=(0.2, 0.5))
    assert to_gesture(swipe, 1080, 2400) == Swipe(540, 1920, 540, 480, 200)
    assert to_gesture(swipe, 1080, 2400, swipe_ms=350) == Swipe(540, 1920, 540, 480, 350)
    assert to_gesture(swipe, 1080, 2400, tap_radius=0.7) == Tap(540, 1920)
    assert to_gesture(Action(type=T.DUAL_POINT, touch=(1, 1), lift=(1, 1)), 1080, 2400) == Tap(1079, 2399)
    assert to_gesture(Action(type=T.TYPE, text="hi there"), 1080, 2400) == TypeText("hi there")
    assert to_gesture(Action(type=T.PRESS_BACK), 1080, 2400) == KeyEvent(KEYCODE_BACK)
    assert to_gesture(Action(type=T.PRESS_HOME), 1080, 2400) == KeyEvent(KEYCODE_HOME)
    assert to_gesture(Action(type=T.PRESS_ENTER), 1080, 2400) == KeyEvent(KEYCODE_ENTER)
    assert (KEYCODE_BACK, KEYCODE_HOME, KEYCODE_ENTER) == (4, 3, 66)
    for status in (T.STATUS_TASK_COMPLETE, T.STATUS_TASK_IMPOSSIBLE):
        assert to_gesture(Action(type=status), 1080, 2400) == EndEpisode(status)


@pytest.mark.parametrize(("width", "height"), [(0, 100), (100, 0), (-1, 100), (100, -5)])
def test_screen_size_must_be_positive(width: int, height: int) -> None:
    with pytest.raises(ValueError, match="screen size must be positive"):
        to_gesture(Action(type=T.PRESS_BACK), width, height)
    with pytest.raises(ValueError, match="screen size must be positive"):
        tap_action(0, 0, width, height)


@pytest.mark.parametrize(("x", "y"), [(-1, 0), (0, -1), (1080, 0), (0, 2400)])
def test_expert_pixels_must_be_on_screen(x: int, y: int) -> None:
    with pytest.raises(ValueError, match="outside the 1080x2400 screen"):
        tap_action(x, y, 1080, 2400)
    with pytest.raises(ValueError, match="outside the 1080x2400 screen"):
        swipe_action(0, 0, x, y, 1080, 2400)


def pixels(gesture: Tap | Swipe) -> list[tuple[int, int]]:
    if isinstance(gesture, Tap):
        return [(gesture.x, gesture.y)]
    return [(gesture.x1, gesture.y1), (gesture.x2, gesture.y2)]


@given(actions(UNIT), SCREEN, SCREEN)
def test_gestures_stay_on_screen(action: Action, width: int, height: int) -> None:
    gesture = to_gesture(action, width, height)
    if action.type is T.DUAL_POINT:
        assert isinstance(gesture, Tap | Swipe)
        for x, y in pixels(gesture):
            assert type(x) is int
            assert type(y) is int
            assert 0 <= x < width
            assert 0 <= y < height
    else:
        assert not isinstance(gesture, Tap | Swipe)


@given(st.tuples(UNIT, UNIT), st.tuples(UNIT, UNIT))
def test_tap_or_swipe_splits_exactly_at_the_radius(touch: Point, lift: Point) -> None:
    action = Action(type=T.DUAL_POINT, touch=touch, lift=lift)
    distance = math.dist(touch, lift)
    assert isinstance(to_gesture(action, 1080, 2400, tap_radius=distance), Tap)
    assume(distance > 0)
    assert isinstance(to_gesture(action, 1080, 2400, tap_radius=math.nextafter(distance, 0)), Swipe)
    assert isinstance(to_gesture(action, 1080, 2400), Tap if distance <= 0.04 else Swipe)


def test_default_radius_is_aitw_s() -> None:
    def gesture(lift_x: float) -> object:
        return to_gesture(Action(type=T.DUAL_POINT, touch=(0.5, 0.25), lift=(0.5, lift_x)), 1000, 1000)

    assert gesture(0.25 + 0.04) == Tap(250, 500)  # 0.29 - 0.25 is 0.039999... in floats
    assert gesture(0.2901) == Swipe(250, 500, 290, 500, 200)


@st.composite
def screen_pixels(draw: st.DrawFn) -> tuple[int, int, int, int]:
    width, height = draw(SCREEN), draw(SCREEN)
    return draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1)), width, height


def near(found: tuple[int, int], expected: tuple[int, int]) -> bool:
    return abs(found[0] - expected[0]) <= 1 and abs(found[1] - expected[1]) <= 1


@given(screen_pixels())
def test_tap_action_lands_on_its_pixel(case: tuple[int, int, int, int]) -> None:
    x, y, width, height = case
    action = tap_action(x, y, width, height)
    assert parse_action(format_action(action)) == action  # already rounded to 4 decimals
    gesture = to_gesture(action, width, height)
    assert isinstance(gesture, Tap)
    assert near((gesture.x, gesture.y), (x, y))


@given(SCREEN, SCREEN, st.data())
def test_swipe_action_lands_on_its_pixels(width: int, height: int, data: st.DataObject) -> None:
    x1, x2 = data.draw(st.integers(0, width - 1)), data.draw(st.integers(0, width - 1))
    y1, y2 = data.draw(st.integers(0, height - 1)), data.draw(st.integers(0, height - 1))
    action = swipe_action(x1, y1, x2, y2, width, height)
    assert parse_action(format_action(action)) == action
    gesture = to_gesture(action, width, height)
    assert action.touch is not None
    assert action.lift is not None
    if math.dist(action.touch, action.lift) <= 0.04:
        assert isinstance(gesture, Tap)
        assert near((gesture.x, gesture.y), (x1, y1))
    else:
        assert isinstance(gesture, Swipe)
        assert near((gesture.x1, gesture.y1), (x1, y1))
        assert near((gesture.x2, gesture.y2), (x2, y2))


def test_typed_text_keeps_raw_control_characters_beside_its_escapes() -> None:
    """A model writes a tab or a newline inside typed_text as it is, next to JSON escapes: both read as
    meant (a strict JSON decoder would refuse the whole string and keep the escapes as written)."""
    parsed = parse_action('"action_type": "TYPE", "typed_text": "caf\\u00e9\tbar\nbaz"')
    assert parsed == Action(type=ActionType.TYPE, text="café\tbar\nbaz")


def test_a_point_with_garbage_around_its_numbers_is_invalid() -> None:
    for point in ("[0.5X, 0.3]", "[X0.5, 0.3]", "[0.5, 0.3X]"):
        parsed = parse_action(
            f'"action_type": "DUAL_POINT", "touch_point": "{point}", "lift_point": "{point}"'
        )
        assert isinstance(parsed, InvalidAction), point
