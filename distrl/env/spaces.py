"""The environment's spaces, and what crosses them: agents' actions to ``Action``, screens to arrays.

- Observation: ``{"screen": Box(uint8, H×W×3), "goal": Text, "step": Discrete(limit + 1)}``.
- Text actions: AutoUI's action text (``distrl.actions``), ``Action Decision: "action_type": ...``.
- Structured actions: ``{"action_type": Discrete(7), "touch_point": Box([0, 1]², float32),
  "lift_point": Box([0, 1]², float32), "typed_text": Text}``, the type an index into ``ACTION_TYPES``
  (or an ``ActionType`` member, which means itself: ``ActionType.DUAL_POINT`` is a swipe, never the
  fifth type) and the points normalised ``[y, x]`` as AutoUI writes them. Points matter to DUAL_POINT
  only and the text to TYPE only: the others ignore them. A ``typed_text`` longer than
  ``MAX_TYPED_CHARS`` or with a control character is invalid.
- Text spaces hold printable characters only (``PRINTABLE``: no tab, newline or other control
  character), plus whatever characters the goals themselves hold.

Whatever an agent sends becomes an ``Action`` or an ``InvalidAction`` saying why it is none: an agent's
output never raises. An ``InvalidAction`` sent is kept as it is: a wrapper's verdict on an action outside
its own space (``distrl.env.flat.GridActions``).

The goal's space is a ``GoalText``: an ``AsyncVectorEnv`` with shared memory (its default) reads each
part of the observations' shared memory once, when it starts, and relies on getting views that follow
the workers' writes; for a ``Text`` it gets a tuple of strings that never changes (gymnasium 1.4). A
``GoalText``'s batch is read through a view instead (``Goals``), which the vector env's copy of each
batch turns into a tuple of strings.
"""

from __future__ import annotations

import io
import string
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any, cast, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import read_from_shared_memory
from PIL import Image

from distrl.actions import parse_action
from distrl.records import Action, ActionType, InvalidAction, Observation

__all__ = [
    "ACTION_MODES",
    "ACTION_TYPES",
    "GoalText",
    "Goals",
    "MAX_ACTION_CHARS",
    "MAX_TYPED_CHARS",
    "PRINTABLE",
    "action_space",
    "observation_space",
    "screen_array",
    "to_action",
]

ACTION_MODES = ("text", "structured")
"""The env's action modes: AutoUI's text, or a ``Dict`` of its fields."""
ACTION_TYPES: tuple[ActionType, ...] = tuple(ActionType)
"""The structured action's ``action_type``: an index into this tuple (TYPE, DUAL_POINT, PRESS_BACK,
PRESS_HOME, PRESS_ENTER, STATUS_TASK_COMPLETE, STATUS_TASK_IMPOSSIBLE)."""
MAX_ACTION_CHARS = 1024
"""Longest text action the action space describes (longer ones are still read)."""
MAX_TYPED_CHARS = 256
"""Longest ``typed_text`` the structured action space describes."""

PRINTABLE = "".join(c for c in string.printable if c.isprintable())
"""The characters of the text spaces: ASCII letters, digits, punctuation and the space (``string.printable``
without its tab, newline, carriage return, vertical tab and form feed)."""

_PRINTABLE = frozenset(PRINTABLE)


class GoalText(spaces.Text):
    """The goal's ``Text``; in a vector env's shared memory it is read through ``Goals``."""


class Goals(Sequence[str]):
    """The goals of a batch, read from the vector env's shared memory whenever they are read; a copy
    (``copy.deepcopy``, as the vector env copies every batch it returns) is a tuple of strings."""

    def __init__(self, space: GoalText, indices: np.ndarray[Any, np.dtype[np.int32]]) -> None:
        self._characters = space.character_list
        self._indices = indices  # (n, max_length) indices into the charset; the charset's size pads

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        characters = self._characters
        return "".join(characters[i] for i in self._indices[index] if i < len(characters))

    def __len__(self) -> int:
        return len(self._indices)

    def __deepcopy__(self, memo: dict[int, object]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Goals) else other)

    __hash__ = None  # type: ignore[assignment]  # it changes with the workers' writes

    def __repr__(self) -> str:
        return f"Goals({tuple(self)!r})"


@read_from_shared_memory.register(GoalText)
def _read_goals(space: GoalText, shared_memory: SynchronizedArray[Any], n: int = 1) -> Goals:
    buffer = cast(memoryview, shared_memory.get_obj())  # a ctypes array: numpy reads its buffer
    indices = np.frombuffer(buffer, dtype=np.int32).reshape(n, space.max_length)
    return Goals(space, indices)


def observation_space(width: int, height: int, goals: Iterable[str], limit: int) -> spaces.Dict:
    """The observation space of screens ``width`` × ``height``, the given goals and ``limit`` steps."""
    goals = list(goals)
    charset = "".join(sorted(_PRINTABLE.union(*goals)))  # one order in every process
    return spaces.Dict(
        {
            "screen": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "goal": GoalText(max(1, *map(len, goals)), charset=charset),
            "step": spaces.Discrete(limit + 1),
        }
    )


def action_space(mode: str) -> spaces.Space[Any]:
    """The action space of ``mode`` (``ACTION_MODES``)."""
    if mode == "text":
        return spaces.Text(MAX_ACTION_CHARS, charset=PRINTABLE)
    if mode == "structured":
        point = spaces.Box(0.0, 1.0, (2,), np.float32)
        return spaces.Dict(
            {
                "action_type": spaces.Discrete(len(ACTION_TYPES)),
                "touch_point": point,
                "lift_point": point,
                "typed_text": spaces.Text(MAX_TYPED_CHARS, min_length=0, charset=PRINTABLE),
            }
        )
    raise ValueError(f"action_mode {mode!r} is not one of {', '.join(ACTION_MODES)}")


def to_action(value: object, mode: str) -> Action | InvalidAction:
    """The ``Action`` an agent sent in ``mode``, or an ``InvalidAction`` with the reason (one sent is kept
    as it is). Never raises."""
    if isinstance(value, InvalidAction):
        return value
    if mode == "text":
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            return InvalidAction(text=repr(value)[:200], reason=f"a text action is a str, not {_kind(value)}")
        return parse_action(value)
    if not isinstance(value, Mapping):
        return InvalidAction(
            text=repr(value)[:200], reason=f"a structured action is a dict, not {_kind(value)}"
        )
    try:
        return _structured(value)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        return InvalidAction(text=repr(dict(value))[:200], reason=reason)


def _structured(value: Mapping[str, Any]) -> Action:
    kind = _action_type(value["action_type"])
    if kind is ActionType.DUAL_POINT:
        return Action(type=kind, touch=_point(value["touch_point"]), lift=_point(value["lift_point"]))
    if kind is ActionType.TYPE:
        text = value["typed_text"]
        if not isinstance(text, str):
            raise TypeError(f"typed_text is {_kind(text)}, not a str")
        if len(text) > MAX_TYPED_CHARS:
            raise ValueError(f"typed_text has {len(text)} characters, more than {MAX_TYPED_CHARS}")
        control = next((c for c in text if not c.isprintable()), None)
        if control is not None:
            raise ValueError(f"typed_text holds the control character {control!r}")
        return Action(type=kind, text=text)  # ValueError for empty text
    return Action(type=kind)


def _action_type(value: object) -> ActionType:
    """An ``ActionType`` member as itself; an integer as an index into ``ACTION_TYPES`` (a 0-d integer array
    too, as ``argmax`` gives and ``Discrete.contains`` takes)."""
    if isinstance(value, ActionType):
        return value
    if isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.integer):
        value = value.item()
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not 0 <= value < len(ACTION_TYPES)
    ):
        raise ValueError(
            f"action_type {value!r} is neither an ActionType nor an index below {len(ACTION_TYPES)}"
        )
    return ACTION_TYPES[int(value)]


def _point(raw: object) -> tuple[float, float]:
    array = np.asarray(raw, dtype=np.float64)
    if array.shape != (2,):
        raise ValueError(f"a point is [y, x], not an array of shape {array.shape}")
    return float(array[0]), float(array[1])  # Action checks that both lie in [0, 1]


def _kind(value: object) -> str:
    return type(value).__name__


def screen_array(observation: Observation, width: int, height: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The screenshot of ``observation`` as an RGB array of ``height`` × ``width`` × 3. A JPEG is decoded
    at the smallest scale at least that size (``Image.draft``), so small screens cost little."""
    with Image.open(io.BytesIO(observation.screenshot)) as image:
        image.draft("RGB", (width, height))
        rgb = image.convert("RGB")
    if rgb.size != (width, height):
        rgb = rgb.resize((width, height), Image.Resampling.BILINEAR)
    return np.asarray(rgb, dtype=np.uint8)
