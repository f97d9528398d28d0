"""``distrl/PhoneFlat-v0``: the phone with spaces every RL library takes, made of two wrappers.

Libraries such as Stable-Baselines3 take neither a ``Text`` observation nor a ``Dict`` action with text
in it. ``PhoneFlat-v0`` is ``PhoneEnv`` in its structured mode behind:

- ``GoalTokens``: the goal as ``goal_tokens`` token ids (``Box`` of int64, 0 pads, 1 is a word outside
  the vocabulary), words of a vocabulary made from the env's own goals, in sorted order so that every
  process makes the same; the screen and the step count as they are.
- ``GridActions``: the action a ``MultiDiscrete([7, rows, cols, 5, typing_choices])``: the action type
  (an index into ``ACTION_TYPES``), the cell of a ``rows`` × ``cols`` grid the finger goes down on (its
  centre), the gesture there (a tap, or a swipe up, down, left or right over ``SWIPE_SPAN`` of the
  screen), and what a TYPE types: one of the goal's own words, its quoted phrases first
  (``typing_words``), the choice taken modulo their number. An action outside that space (a number past
  its part's count or negative, not an integer, not five of them) is an invalid step, as Phone-v0's
  structured mode has it: ``info["invalid"]``, ``info["reason"]`` saying why (naming the part where one
  is out of its range), ``-invalid_penalty``.

::

    env = gymnasium.make("distrl/PhoneFlat-v0", grid=(8, 4), screen_width=72, screen_height=160)
    model = stable_baselines3.PPO("MultiInputPolicy", env)

Keywords other than ``grid``, ``goal_tokens`` and ``typing_choices`` go to ``PhoneEnv``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from distrl.env.arguments import check_count, wrong_type
from distrl.env.phone import PhoneEnv
from distrl.env.spaces import ACTION_TYPES
from distrl.records import InvalidAction, Task

__all__ = [
    "GESTURES",
    "PARTS",
    "SWIPE_SPAN",
    "GoalTokens",
    "GridActions",
    "phone_flat",
    "tokens",
    "typing_words",
]

GESTURES = ("tap", "up", "down", "left", "right")
"""The gestures of ``GridActions``, in the order of their index."""
PARTS = ("action_type", "row", "column", "gesture", "typing_choice")
"""The parts of a ``GridActions`` action, in their order."""
SWIPE_SPAN = 0.4
"""How far a swipe goes, as a fraction of the screen's height (up, down) or width (left, right)."""
PAD, UNKNOWN = 0, 1
"""Token ids of padding and of a word outside the vocabulary."""

_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")
_MOVES = {"tap": (0.0, 0.0), "up": (-1.0, 0.0), "down": (1.0, 0.0), "left": (0.0, -1.0), "right": (0.0, 1.0)}


def tokens(text: str) -> list[str]:
    """``text``'s words and punctuation marks, lower case."""
    return _WORD.findall(text.lower())


def typing_words(goal: str) -> list[str]:
    """What a TYPE may type for ``goal``: its quoted phrases, then its words (each once, in order)."""
    quoted = [a or b for a, b in _QUOTED.findall(goal)]
    words = [word.strip("\"'.,;:!?") for word in goal.split()]
    return list(dict.fromkeys(w for w in [*quoted, *words] if w))


class GoalTokens(gymnasium.ObservationWrapper[dict[str, Any], Any, dict[str, Any]]):
    """The observation's goal as ``length`` token ids of a vocabulary made from ``goals``."""

    def __init__(self, env: gymnasium.Env[dict[str, Any], Any], goals: Iterable[str], length: int) -> None:
        super().__init__(env)
        words = sorted({word for goal in goals for word in tokens(goal)})
        self.vocabulary = {word: i for i, word in enumerate(words, start=UNKNOWN + 1)}
        """Word -> token id."""
        self.length = length
        assert isinstance(env.observation_space, spaces.Dict)
        self.observation_space = spaces.Dict(
            {
                **env.observation_space.spaces,
                "goal": spaces.Box(PAD, UNKNOWN + len(words), (length,), np.int64),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {**observation, "goal": self.encode(observation["goal"])}

    def encode(self, goal: str) -> np.ndarray[Any, np.dtype[np.int64]]:
        """``goal``'s token ids, cut or padded to ``length``."""
        ids = [self.vocabulary.get(word, UNKNOWN) for word in tokens(goal)][: self.length]
        return np.array(ids + [PAD] * (self.length - len(ids)), np.int64)


class GridActions(gymnasium.ActionWrapper[dict[str, Any], np.ndarray[Any, Any], Any]):
    """A ``MultiDiscrete`` action (module docstring) as the structured action it stands for; one outside
    the space as an ``InvalidAction`` saying why, which the env takes as an invalid step."""

    def __init__(
        self, env: gymnasium.Env[dict[str, Any], Any], grid: tuple[int, int], typing_choices: int
    ) -> None:
        super().__init__(env)
        self.grid = grid
        self.counts = (len(ACTION_TYPES), *grid, len(GESTURES), typing_choices)
        """How many values each of the action's ``PARTS`` takes."""
        self.action_space = spaces.MultiDiscrete(list(self.counts))

    def action(self, action: np.ndarray[Any, Any]) -> dict[str, Any] | InvalidAction:
        reason = self.refusal(action)
        if reason:
            return InvalidAction(text=_shown(action), reason=reason)
        kind, row, col, gesture, choice = (int(a) for a in np.asarray(action))
        rows, cols = self.grid
        touch = ((row + 0.5) / rows, (col + 0.5) / cols)
        dy, dx = _MOVES[GESTURES[gesture]]
        lift = (_clip(touch[0] + dy * SWIPE_SPAN), _clip(touch[1] + dx * SWIPE_SPAN))
        task: Task | None = self.env.get_wrapper_attr("task")
        choices = typing_words(task.goal) if task is not None else []
        typed = choices[choice % len(choices)] if choices else ""
        return {
            "action_type": kind,
            "touch_point": np.array(touch, np.float32),
            "lift_point": np.array(lift, np.float32),
            "typed_text": typed,
        }

    def refusal(self, action: object) -> str:
        """Why ``action`` is not in the action space, in one sentence (naming the part out of its range, or
        the shape or type it should have); "" when it is."""
        wanted = f"a flat action is {len(PARTS)} integers ({', '.join(PARTS)})"
        try:
            array = np.asarray(action)
        except (TypeError, ValueError):  # a ragged list
            return f"{wanted}, not {_shown(action)}"
        if array.ndim == 0:
            return f"{wanted}, not {_shown(action)}"
        if array.shape != (len(PARTS),):
            return f"{wanted}, not an array of shape {array.shape}"
        if not np.issubdtype(array.dtype, np.integer):
            return f"{wanted}, not {array.dtype} numbers ({_shown(action)})"
        for part, value, count in zip(PARTS, array.tolist(), self.counts, strict=True):
            if not 0 <= value < count:
                return f"{part} is {value}, not from 0 to {count - 1}"
        return ""


def phone_flat(
    *, grid: int | Sequence[int] = (8, 4), goal_tokens: int = 32, typing_choices: int = 8, **phone: Any
) -> gymnasium.Env[dict[str, Any], np.ndarray[Any, Any]]:
    """``PhoneEnv(action_mode="structured", **phone)`` behind ``GoalTokens`` and ``GridActions``:
    ``grid`` rows × columns (one number: a square), ``goal_tokens`` ids of the goal, ``typing_choices``
    words a TYPE chooses from."""
    shape: object = grid
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        shape = (shape, shape)
    if isinstance(shape, str) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise wrong_type("grid", "rows and columns, or one number", grid)
    cells = (check_count("grid[0]", shape[0], high=256), check_count("grid[1]", shape[1], high=256))
    length = check_count("goal_tokens", goal_tokens, high=4096)
    choices = check_count("typing_choices", typing_choices, high=256)
    if "action_mode" in phone:
        raise TypeError("PhoneEnv action_mode: PhoneFlat-v0 sets it (structured, behind GridActions)")
    env = PhoneEnv(action_mode="structured", **phone)
    tokened = GoalTokens(env, (task.goal for task in env.tasks), length)
    return GridActions(tokened, cells, choices)


def _shown(action: object) -> str:
    """``action`` as an invalid step's text shows it."""
    shown = action.tolist() if isinstance(action, np.ndarray) else action
    return repr(shown)[:200]


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))
