"""Training in one process: the policy plays simulated phones here, and the learner trains on the result.

No SSH and no workers: rounds of ``episodes`` episodes, played on that many in-process phones in
parallel by the current weights (``distrl.local.play.rollouts``), go into the learner's replay buffer,
then the learner makes ``updates`` updates. It shows the algorithm learning before the fleet is
involved, and the fleet drives the same ``Learner``.

Each round's tasks are the one task draw's (``distrl.tasks.draw``) over the suite's train split, shuffled
afresh each round with the learner's own random stream (no task twice in a round), so a checkpoint
taken between rounds resumes the same run.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

from distrl.learner.checkpoint import Checkpoints
from distrl.learner.core import Learner, UpdateReport
from distrl.local.play import rollouts
from distrl.tasks.draw import Curriculum, greedy_turn, split_tasks, task_draw

__all__ = ["Round", "train_local"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Round:
    """One round of ``train_local``: what was played and what the learner did with it."""

    round: int
    version: int
    """The policy version that played this round."""
    episodes: int
    successes: int
    steps: int
    updates: tuple[UpdateReport, ...]
    elapsed_s: float
    """Since ``train_local`` began."""

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0


def train_local(
    learner: Learner,
    *,
    suite: str = "general",
    rounds: int | None = None,
    minutes: float | None = None,
    episodes: int = 16,
    updates: int = 4,
    width: int = 540,
    height: int = 1200,
    checkpoints: Checkpoints | None = None,
    checkpoint_every: int = 0,
    on_round: Callable[[Round], None] | None = None,
    curriculum: Curriculum = "uniform",
    greedy_share: float = 0.0,
) -> list[Round]:
    """Play and train for ``rounds`` rounds or ``minutes`` of wall time, whichever ends first.

    With ``checkpoints``, the learner is saved every ``checkpoint_every`` rounds (0: never) and after the
    last round. ``curriculum`` draws the tasks as ``[tasks] curriculum`` does in the fleet
    (``distrl.tasks.draw``), from the outcomes of every round so far; ``greedy_share`` of the episodes
    are played greedily, the rest at the policy's temperature, as ``[policy] greedy_share`` does
    (``greedy_turn``). Returns the rounds, each also passed to ``on_round`` as it ends.
    """
    if rounds is None and minutes is None:
        raise ValueError("give rounds or minutes (or both): training needs a budget")
    if episodes < 1 or updates < 0:
        raise ValueError(f"episodes must be ≥ 1 and updates ≥ 0, got {episodes} and {updates}")
    draw = task_draw(split_tasks(suite, "train"), learner.rng, curriculum)
    asked = 0
    budget_s = math.inf if minutes is None else minutes * 60.0
    started = time.monotonic()
    done: list[Round] = []
    while (rounds is None or len(done) < rounds) and time.monotonic() - started < budget_s:
        version = learner.version
        chosen = draw.take(episodes)
        greedy = [greedy_turn(asked + i, greedy_share) for i in range(1, episodes + 1)]
        asked += episodes
        played = rollouts(
            learner.policy,
            chosen,
            temperature=[0.0 if turn else None for turn in greedy],
            version=version,
            seed=learner.rng.randrange(2**31),
            parallel=episodes,
            width=width,
            height=height,
            id_prefix=f"local/{version}",
        )
        for trajectory in played:
            learner.add(trajectory)
            draw.record(trajectory)
        reports = []
        for _ in range(updates):
            report = learner.update()
            if report is not None:
                reports.append(report)
        finished = Round(
            round=len(done) + 1,
            version=version,
            episodes=len(played),
            successes=sum(bool(t.success) for t in played),
            steps=sum(len(t.steps) for t in played),
            updates=tuple(reports),
            elapsed_s=time.monotonic() - started,
        )
        done.append(finished)
        if on_round is not None:
            on_round(finished)
        if checkpoints is not None and checkpoint_every and finished.round % checkpoint_every == 0:
            _save(learner, checkpoints)
    if checkpoints is not None and done and not (checkpoint_every and done[-1].round % checkpoint_every == 0):
        _save(learner, checkpoints)
    return done


def _save(learner: Learner, checkpoints: Checkpoints) -> None:
    latest = checkpoints.latest()
    if latest is None or latest.name != f"step-{learner.updates:09d}":  # else: no update since
        checkpoints.write(learner.updates, learner.save)
