"""The one task draw: which tasks a run plays, in a seeded shuffled order that cycles.

Every task of the pool comes once before any comes twice, so a short run still covers the pool evenly.
The fleet's ``TaskSampler`` hands tasks out in this order; so do the in-process runs (``distrl.local``:
evaluation, ``train_local``, demonstrations, judge calibration).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from distrl.records import Task
from distrl.tasks.registry import task_source

__all__ = ["TaskDraw", "split_tasks"]


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


def split_tasks(source: str, split: str) -> list[Task]:
    """Every task of the registered task source ``source``'s ``split`` (a sim suite: ``general``,
    ``web_shopping``), in its stable order; ValueError when it has none."""
    pool: list[Task] = task_source(source).tasks(split)
    if not pool:
        raise ValueError(f"suite {source!r} has no {split!r} tasks")
    return pool
