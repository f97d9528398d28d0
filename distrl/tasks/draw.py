"""The one task draw: which tasks a run plays, in a seeded shuffled order that cycles, or by a curriculum.

Every task of the pool comes once before any comes twice, so a short run still covers the pool evenly.
The fleet's ``TaskSampler`` hands tasks out in this order; so do the in-process runs (``distrl.local``:
evaluation, ``train_local``, demonstrations, judge calibration).

A run that trains may draw by a curriculum instead (``[tasks] curriculum``, ``task_draw``):
``learnability`` plays every task once in the shuffled order, then draws each task in proportion to
p̂(1 − p̂), its estimated success p̂ over its last ``window`` scored episodes. A task the policy always
solves, or never, teaches little: every episode's advantage is about zero where every episode ends the
same. One it solves now and then is where its successes and failures differ, and what RL can learn
from (the "learnability" of Rutherford et al. 2024, "No Regrets"; DigiRL's instruction-level curriculum
favours such tasks too, ``docs/concepts/algorithms.md``). p̂ = (successes + ½)/(episodes + 1) keeps every task
in the draw: a task failed 8 times in a row is still drawn a fifth as often as one solved half the time.

A run may also play a share of its episodes greedily (``[policy] greedy_share``): ``greedy_turn`` says
which, evenly spread (a share of ¼: the 4th, 8th, 12th, ...), in the fleet and in ``train_local`` alike.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from distrl.records import Task, Trajectory
from distrl.tasks.registry import task_source

__all__ = [
    "CURRICULA",
    "Curriculum",
    "LearnabilityDraw",
    "TaskDraw",
    "greedy_turn",
    "split_tasks",
    "task_draw",
]

Curriculum = Literal["uniform", "learnability"]
CURRICULA: tuple[Curriculum, ...] = get_args(Curriculum)


class TaskDraw:
    """Tasks of ``pool`` in ``rng``'s shuffled order, cycling."""

    def __init__(self, pool: Sequence[Task], rng: random.Random) -> None:
        if not pool:
            raise ValueError("there are no tasks to draw")
        self._pool = list(pool)
        self._rng = rng
        self._order: list[Task] = []

    def next(self) -> Task:
        """The next task: the pool in a fresh shuffled order each time the last order runs out."""
        if not self._order:
            self._order = self._rng.sample(self._pool, len(self._pool))[::-1]  # popped from the end
        return self._order.pop()

    def take(self, count: int) -> list[Task]:
        """The next ``count`` tasks."""
        if count < 0:
            raise ValueError(f"the number of tasks must be ≥ 0, got {count}")
        return [self.next() for _ in range(count)]

    def record(self, trajectory: Trajectory) -> None:
        """An episode came back: the uniform draw does not look at outcomes."""

    def memory(self) -> dict[str, Any]:
        """What the draw has learnt from the outcomes, as JSON, for a checkpoint (``recall`` takes it up
        in a resumed run): nothing for the uniform draw."""
        return {}

    def recall(self, memory: Mapping[str, Any]) -> None:
        """Take up what an earlier run's draw learnt (``memory()``): the uniform draw learns nothing."""


class LearnabilityDraw(TaskDraw):
    """The ``learnability`` curriculum (module docstring): each task once, then by p̂(1 − p̂)."""

    def __init__(self, pool: Sequence[Task], rng: random.Random, *, window: int = 8) -> None:
        super().__init__(pool, rng)
        if window < 1:
            raise ValueError(f"the curriculum's window must be ≥ 1 episode, got {window}")
        self._swept = 0
        """Tasks drawn so far in the first sweep: every task once, in the uniform order, before any is
        drawn by its outcomes."""
        self._outcomes: dict[str, collections.deque[bool]] = collections.defaultdict(
            lambda: collections.deque(maxlen=window)
        )

    def next(self) -> Task:
        if self._swept < len(self._pool):
            self._swept += 1
            return super().next()
        return self._rng.choices(self._pool, weights=[self.learnability(task) for task in self._pool])[0]

    def record(self, trajectory: Trajectory) -> None:
        """``trajectory``'s outcome counts for its task if it was scored and played out (one cut short by
        its device, or with no score, says nothing of the task)."""
        if trajectory.success is not None and not trajectory.cut_short:
            self._outcomes[trajectory.task.id].append(trajectory.success)

    def memory(self) -> dict[str, Any]:
        """How far the first sweep went and each task's last outcomes."""
        return {
            "curriculum": "learnability",
            "swept": self._swept,
            "outcomes": {task_id: list(outcomes) for task_id, outcomes in self._outcomes.items()},
        }

    def recall(self, memory: Mapping[str, Any]) -> None:
        """The first sweep's progress and the outcomes of this pool's tasks from ``memory``; a memory of
        another curriculum (or none) leaves the draw as new, and outcomes that are not booleans are
        skipped."""
        if memory.get("curriculum") != "learnability":
            return
        swept, outcomes = memory.get("swept"), memory.get("outcomes")
        if isinstance(swept, int) and not isinstance(swept, bool) and swept >= 0:
            self._swept = min(swept, len(self._pool))
        if isinstance(outcomes, dict):
            known = {task.id for task in self._pool}
            for task_id, values in outcomes.items():
                if task_id in known and isinstance(values, list):
                    kept = [value for value in values if isinstance(value, bool)]
                    if kept:  # (the outcomes' defaultdict would keep an empty entry otherwise)
                        self._outcomes[task_id].extend(kept)

    def learnability(self, task: Task) -> float:
        """p̂(1 − p̂) for ``task``: ¼ before any outcome, less the surer its outcome."""
        outcomes = self._outcomes.get(task.id, ())
        estimate = (sum(outcomes) + 0.5) / (len(outcomes) + 1)
        return estimate * (1.0 - estimate)


def task_draw(pool: Sequence[Task], rng: random.Random, curriculum: Curriculum = "uniform") -> TaskDraw:
    """The draw of ``pool`` for ``curriculum``: ``uniform`` (``TaskDraw``) or ``learnability``."""
    if curriculum == "uniform":
        return TaskDraw(pool, rng)
    if curriculum == "learnability":
        return LearnabilityDraw(pool, rng)
    raise ValueError(f"unknown curriculum {curriculum!r}; choose one of {', '.join(CURRICULA)}")


def split_tasks(source: str, split: str) -> list[Task]:
    """Every task of the registered task source ``source``'s ``split`` (a sim suite: ``general``,
    ``web_shopping``), in its stable order; ValueError when it has none."""
    pool: list[Task] = task_source(source).tasks(split)
    if not pool:
        raise ValueError(f"suite {source!r} has no {split!r} tasks")
    return pool


def greedy_turn(episode: int, share: float) -> bool:
    """Whether the ``episode``-th episode a run asks for (from 1) is one of the ``share`` it plays
    greedily: where ⌊episode·share⌋ steps up, so that any stretch of episodes holds its share."""
    if episode < 1 or not 0.0 <= share <= 1.0:
        raise ValueError(f"episode must be ≥ 1 and share in [0, 1], got {episode} and {share}")
    return int(episode * share) > int((episode - 1) * share)
