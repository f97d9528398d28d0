"""The vocabulary every part of distrl speaks: tasks, observations, actions, steps, trajectories, stats.

All records are frozen, keyword-only dataclasses of plain Python values (no torch, no numpy), so they
can be put on the wire, stored in the replay buffer and compared in tests. Coordinates at the policy
boundary are normalised and ordered ``(y, x)`` as in Android in the Wild (AitW); ``actions`` converts
them to pixels for a given screen.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

ParamValue = str | int | float | bool


class ActionType(enum.IntEnum):
    """AitW action type ids (0, 1, 2, 8 and 9 are unused by AitW)."""

    TYPE = 3
    DUAL_POINT = 4
    PRESS_BACK = 5
    PRESS_HOME = 6
    PRESS_ENTER = 7
    STATUS_TASK_COMPLETE = 10
    STATUS_TASK_IMPOSSIBLE = 11

    @property
    def ends_episode(self) -> bool:
        return self in (ActionType.STATUS_TASK_COMPLETE, ActionType.STATUS_TASK_IMPOSSIBLE)


Point = tuple[float, float]
"""A normalised screen point ``(y, x)``, each in [0, 1]."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Action:
    """One valid action. ``touch``/``lift`` are set for DUAL_POINT only, ``text`` for TYPE only."""

    type: ActionType
    touch: Point | None = None
    """Where the finger goes down, normalised ``(y, x)``."""
    lift: Point | None = None
    """Where the finger comes up, normalised ``(y, x)``; equal to ``touch`` for a tap."""
    text: str = ""
    """Text typed by a TYPE action."""

    def __post_init__(self) -> None:
        kind: object = self.type  # as given, which may be no ActionType
        if not isinstance(kind, ActionType):
            kinds = ", ".join(f"{known.name} = {known.value}" for known in ActionType)
            raise TypeError(f"type must be an ActionType ({kinds}), not {kind!r}")
        if self.type is ActionType.DUAL_POINT:
            if self.touch is None or self.lift is None:
                raise ValueError("DUAL_POINT needs both touch and lift points")
            for name, point in (("touch", self.touch), ("lift", self.lift)):
                if len(point) != 2 or not all(_unit(v) for v in point):
                    raise ValueError(f"{name} point {point!r} is not a (y, x) pair in [0, 1]")
        elif self.touch is not None or self.lift is not None:
            raise ValueError(f"{self.type.name} takes no points")
        if self.type is ActionType.TYPE:
            if not self.text:
                raise ValueError("TYPE needs non-empty text")
            self.text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for lone surrogates
        elif self.text:
            raise ValueError(f"{self.type.name} takes no text")


def _unit(value: float) -> bool:
    return isinstance(value, float | int) and math.isfinite(value) and 0.0 <= value <= 1.0


@dataclass(frozen=True, kw_only=True, slots=True)
class InvalidAction:
    """Model output that is not an action. Kept (and penalised), never raised."""

    text: str
    """The raw text the model produced."""
    reason: str
    """Why it is not an action, in one sentence."""


EVALUATORS = ("sim", "adb", "judge")
"""How an episode is scored: ``sim`` (the simulated phone's state), ``adb`` (the task's shell checks, on
any Android device), ``judge`` (a VLM judges the final screens against the goal, on the learner)."""

CHECK_OPS = ("equals", "contains", "regex", "lt", "le", "gt", "ge")
"""How a ``Check`` compares a command's output (stripped) with its value: text equality, substring,
``re.search``, or a numeric comparison of the output read as a number."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """One AndroidWorld-style success check: an ``adb shell`` command and the output it must give."""

    command: str
    """The shell command (``settings get global airplane_mode_on``)."""
    op: str
    """One of ``CHECK_OPS``."""
    value: str
    """What the output is compared with (a number, for the numeric comparisons)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    """One task instance: a goal in words, where it comes from, and its step limit."""

    id: str
    """Unique within its suite, stable across runs (``general/alarm/0412``)."""
    suite: str
    """Task suite name (``general``, ``web_shopping``)."""
    goal: str
    """The instruction the policy sees (``Set an alarm for 6pm``)."""
    split: str = "train"
    """Which split it belongs to: ``train``, ``test``, or any name a task file gives."""
    max_steps: int = 10
    """Step limit; the episode ends unsuccessfully when it is reached."""
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    """Template parameters, for success checks and analysis."""
    setup: tuple[str, ...] = ()
    """Shell commands (as ``adb shell`` runs them) that take a device from its clean state (the emulator
    snapshot, the sim's boot) to the task's start state."""
    apps: tuple[str, ...] = ()
    """Packages the task uses: force-stopped and cleared when a phone without a console is reset."""
    evaluator: str = ""
    """One of ``EVALUATORS``; empty until the run resolves it
    (``distrl.tasks.evaluators.resolve_evaluators``)."""
    checks: tuple[Check, ...] = ()
    """The ``adb`` evaluator's checks: the episode succeeded when every one passes."""

    def __post_init__(self) -> None:
        steps = self.max_steps
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise ValueError(
                f"task {self.id!r}: max_steps must be a whole number of steps, 0 or more, not {steps!r}"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class Observation:
    """What a device shows: an encoded screenshot and the screen size in pixels."""

    screenshot: bytes
    """The screen as an encoded image (PNG or JPEG bytes)."""
    width: int
    """Screen width in pixels."""
    height: int
    """Screen height in pixels."""
    image_format: str = "png"
    """``png`` or ``jpeg``."""
    timestamp_s: float = 0.0
    """Wall-clock time of capture, seconds since the epoch."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicyVersion:
    """Which weights chose an action: a counter the learner bumps on every publish."""

    number: int
    """0 for the initial policy, +1 per published update."""
    checksum: str = ""
    """Checksum of the adapter weights at this version (hex), empty when not known."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    """One decision: the screen seen, what the model said, what it meant, and what it cost."""

    index: int
    """0-based position in the trajectory."""
    observation: Observation
    """The screen the policy saw before acting."""
    output: str
    """The raw text the model produced."""
    action: Action | InvalidAction
    """The parsed action, or why the text was not one."""
    policy_version: int
    """Version of the weights that produced ``output``."""
    behaviour_logprob: float
    """log μ(a|s): sum of the log-probs of the sampled tokens under the behaviour policy."""
    reward: float = 0.0
    """Reward received for this step (set by scoring)."""
    duration_s: float = 0.0
    """Wall time from observation to action applied, seconds."""


class EndReason(enum.StrEnum):
    """Why an episode stopped."""

    COMPLETE = "complete"
    """The policy said STATUS_TASK_COMPLETE."""
    IMPOSSIBLE = "impossible"
    """The policy said STATUS_TASK_IMPOSSIBLE."""
    STEP_LIMIT = "step_limit"
    """The task's step limit was reached."""
    DEVICE_ERROR = "device_error"
    """The device failed; the trajectory is kept up to the failure."""
    POLICY_ERROR = "policy_error"
    """The policy failed or did not answer in time (``timeouts.policy_step_s``); kept up to there."""
    CANCELLED = "cancelled"
    """The run stopped while the episode was in flight."""

    @classmethod
    def chosen(cls, action: Action) -> EndReason:
        """Why an episode ends when the policy ends it with ``action`` (a STATUS action)."""
        return cls.IMPOSSIBLE if action.type is ActionType.STATUS_TASK_IMPOSSIBLE else cls.COMPLETE


@dataclass(frozen=True, kw_only=True, slots=True)
class Trajectory:
    """One episode on one device, whole. A trajectory counts once, when the learner has it."""

    id: str
    """Unique id (assigned by the learner when the episode is requested)."""
    task: Task
    host: str
    """Inventory name of the host that ran it."""
    device: str
    """Device serial or sim name on that host."""
    steps: tuple[Step, ...]
    final_observation: Observation | None
    """The screen after the last action, for the critic's V(s_H+1); None if the device failed."""
    end_reason: EndReason
    success: bool | None = None
    """Programmatic or judged success; None until scored."""
    verdict: str = ""
    """The judge's reason for ``success``, where a judge scored it."""
    started_at_s: float = 0.0
    """Wall-clock start, seconds since the epoch."""
    duration_s: float = 0.0
    temperature: float | None = None
    """The temperature the model answered at (0: greedy); None where no model played (the expert) or
    the record does not say."""
    group: str = ""
    """The task group it was played in (``[tasks] group_size``: one task played on K devices at once, for
    the group-relative algorithms); empty outside one."""

    @property
    def cut_short(self) -> bool:
        """It ended by a failure of the device or the policy, not by the policy's choice or the step limit:
        what its outcome says about the policy is unknown, so a learner does not train on it."""
        return self.end_reason in (EndReason.DEVICE_ERROR, EndReason.POLICY_ERROR, EndReason.CANCELLED)

    @property
    def total_reward(self) -> float:
        return sum(step.reward for step in self.steps)

    @property
    def policy_versions(self) -> tuple[int, ...]:
        """The distinct policy versions that acted in this episode, in order of first use."""
        return tuple(dict.fromkeys(step.policy_version for step in self.steps))


@dataclass(frozen=True, kw_only=True, slots=True)
class CollectionStats:
    """Counters for a collection run (one worker, one host or the whole fleet)."""

    trajectories: int = 0
    steps: int = 0
    successes: int = 0
    invalid_actions: int = 0
    device_errors: int = 0
    restarts: int = 0
    elapsed_s: float = 0.0

    @property
    def success_rate(self) -> float:
        return self.successes / self.trajectories if self.trajectories else 0.0

    @property
    def trajectories_per_hour(self) -> float:
        return 3600.0 * self.trajectories / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def __add__(self, other: CollectionStats) -> CollectionStats:
        return CollectionStats(
            trajectories=self.trajectories + other.trajectories,
            steps=self.steps + other.steps,
            successes=self.successes + other.successes,
            invalid_actions=self.invalid_actions + other.invalid_actions,
            device_errors=self.device_errors + other.device_errors,
            restarts=self.restarts + other.restarts,
            elapsed_s=max(self.elapsed_s, other.elapsed_s),
        )
