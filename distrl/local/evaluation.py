"""What an ``evaluate`` run found (``Evaluation``: each episode's ``Outcome``) and its statistics, as pure
functions: ``standard_error`` of a success rate over episodes (binomial), ``mean_and_error`` of differences
paired by task or by seed, and ``pass_at_k``, the unbiased estimator of Chen et al. (2021) that a task is
solved at least once in k of its n plays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from distrl.records import Task

__all__ = ["Evaluation", "Outcome", "mean_and_error", "pass_at_k", "standard_error"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """How one evaluation episode went."""

    task: Task
    success: bool
    steps: int
    """Actions taken (the final STATUS action included)."""
    actions: tuple[str, ...]
    """The policy's answers, as text."""
    ended: bool
    """The policy ended the episode itself (a STATUS action) before ``max_steps``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    """The outcomes of an ``evaluate`` run."""

    suite: str
    split: str
    outcomes: tuple[Outcome, ...]
    """Each chosen task's ``samples`` plays, task by task: the first task's plays, then the second's, ..."""
    wall_s: float
    samples: int = 1
    """Plays of each chosen task."""

    @classmethod
    def pooled(cls, evaluations: Sequence[Evaluation]) -> Evaluation:
        """``evaluations`` of the same tasks in the same order (a run's last checkpoints, each played at one
        seed) as one: each task's plays are all of theirs, the first evaluation's first. A task's success
        is then its mean over them, which ``minus`` pairs with another evaluation's and ``pass_at_k(1)``
        averages over tasks (with its error over tasks: the plays of one task are not independent).
        ``ValueError`` when there are none or their suites, splits or tasks differ."""
        if not evaluations:
            raise ValueError("no evaluations to pool")
        first = evaluations[0]
        for other in evaluations[1:]:
            if (other.suite, other.split) != (first.suite, first.split):
                raise ValueError("pooled evaluations need the same suite and split")
            first._paired(other)  # the same tasks in the same order, or ValueError
        outcomes: list[Outcome] = []
        for index in range(len(first.per_task())):
            for evaluation in evaluations:
                outcomes += evaluation.outcomes[index * evaluation.samples : (index + 1) * evaluation.samples]
        return cls(
            suite=first.suite,
            split=first.split,
            outcomes=tuple(outcomes),
            wall_s=sum(evaluation.wall_s for evaluation in evaluations),
            samples=sum(evaluation.samples for evaluation in evaluations),
        )

    @property
    def success_rate(self) -> float:
        """Share of episodes whose task check passed (0 when there were none)."""
        return sum(o.success for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    @property
    def standard_error(self) -> float:
        """The binomial standard error of ``success_rate`` over the episodes (``standard_error``)."""
        return standard_error(self.success_rate, len(self.outcomes))

    def by_template(self) -> dict[str, tuple[int, int]]:
        """Successes and episodes per task template."""
        out: dict[str, tuple[int, int]] = {}
        for outcome in self.outcomes:
            name = _template(outcome.task)
            won, total = out.get(name, (0, 0))
            out[name] = (won + outcome.success, total + 1)
        return out

    def per_task(self) -> list[tuple[Task, int, int]]:
        """Each chosen task (in order; a task chosen twice counts twice) with its successes and plays."""
        if self.samples < 1:
            raise ValueError(f"samples must be ≥ 1, got {self.samples}")
        out = []
        for start in range(0, len(self.outcomes), self.samples):
            plays = self.outcomes[start : start + self.samples]
            out.append((plays[0].task, sum(o.success for o in plays), len(plays)))
        return out

    def pass_at_k(self, k: int) -> tuple[float, float]:
        """pass@k and its standard error: ``pass_at_k`` of each chosen task's plays, averaged over the
        tasks; the error is that of a mean over tasks, sqrt(Σ (x - x̄)² / m) / √m for m tasks (for
        k = 1 plays each it is ``standard_error`` over the tasks). (0, 0) when there were no tasks."""
        values = [pass_at_k(plays, won, k) for _, won, plays in self.per_task()]
        if not values:
            return 0.0, 0.0
        mean = sum(values) / len(values)
        spread = sum((value - mean) ** 2 for value in values) / len(values)
        return mean, math.sqrt(spread / len(values))

    def minus(self, before: Evaluation) -> tuple[float, float]:
        """This evaluation's success minus ``before``'s, paired by task, with its standard error: the
        ``mean_and_error`` of the differences of each task's success rates (over its plays). Pairing
        removes the tasks' own difficulty from the error, so it needs the same tasks in the same order
        (the same suite, split, ``episodes`` and seed); raises ``ValueError`` when they differ."""
        return mean_and_error([won / plays - was / had for (won, plays), (was, had) in self._paired(before)])

    def changes_from(self, before: Evaluation) -> tuple[int, int]:
        """The tasks this evaluation solves (at least once) that ``before`` never does, and those
        ``before`` solves that this never does: what a policy gained and lost against its start, which the
        mean difference nets out. ``ValueError`` when the tasks differ."""
        pairs = self._paired(before)
        gained = sum(won > 0 and was == 0 for (won, _), (was, _) in pairs)
        lost = sum(was > 0 and won == 0 for (won, _), (was, _) in pairs)
        return gained, lost

    def failures_solved_by(self, other: Evaluation) -> tuple[int, int]:
        """The chosen tasks this evaluation never solves, and how many of them ``other`` (the same tasks
        in the same order, e.g. sampled where this is greedy) solves at least once: the failures that
        RL collecting as ``other`` played can learn from; the rest it must first stumble on. Raises
        ``ValueError`` when the tasks differ."""
        failed = [was for (won, _), (was, _) in self._paired(other) if won == 0]
        return len(failed), sum(was > 0 for was in failed)

    def _paired(self, other: Evaluation) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Each chosen task's (successes, plays) here and in ``other``; ``ValueError`` unless both chose
        the same tasks in the same order."""
        mine, theirs = self.per_task(), other.per_task()
        if [task.id for task, _, _ in mine] != [task.id for task, _, _ in theirs]:
            raise ValueError("paired evaluations need the same tasks in the same order")
        return [
            ((won, plays), (was, had)) for (_, won, plays), (_, was, had) in zip(mine, theirs, strict=True)
        ]

    def solved_by_template(self) -> dict[str, tuple[int, int]]:
        """Chosen tasks solved at least once in their plays, and chosen tasks, per task template."""
        out: dict[str, tuple[int, int]] = {}
        for task, won, _ in self.per_task():
            name = _template(task)
            solved, total = out.get(name, (0, 0))
            out[name] = (solved + (won > 0), total + 1)
        return out


def mean_and_error(values: Sequence[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error, sqrt(Σ (x - x̄)² / (n - 1)) / √n (0 for one value;
    (0, 0) for none): for differences paired by task or by seed."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    spread = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(spread / len(values))


def standard_error(rate: float, n: int) -> float:
    """The binomial standard error of a success rate measured over ``n`` independent episodes,
    sqrt(p (1 - p) / n); 0 when there were none."""
    if n < 0 or not 0.0 <= rate <= 1.0:
        raise ValueError(f"need 0 ≤ rate ≤ 1 and n ≥ 0, got rate {rate} and n {n}")
    return math.sqrt(rate * (1.0 - rate) / n) if n else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` plays of a task succeeds, estimated without bias from ``n``
    plays of which ``c`` succeeded (Chen et al. 2021): 1 - C(n - c, k) / C(n, k); needs 1 ≤ k ≤ n."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n {n}, c {c}, k {k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _template(task: Task) -> str:
    return str(task.params.get("template", "?"))
