"""Playing a policy on simulated phones in this process: ``evaluate`` for success rates, ``rollouts`` for
trajectories a learner can train on.

Both run several phones at once, so that each ``policy.sample`` call answers a batch of screens. An
episode starts on ``episode_phone(task, ...)`` (a freshly booted phone, set up by the task's shell
commands), shows the policy the screen (JPEG) and its previous actions, does the action, and ends at a
STATUS action or after ``max_steps`` (default the task's). An invalid answer is a step that does
nothing. Success is the task's own check on the phone's final state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from distrl.policy import Policy, PolicyInput, Sample
from distrl.records import Action, EndReason, InvalidAction, Observation, Step, Task, Trajectory
from distrl.sim.phone import Phone, PhoneConfig
from distrl.sim.shell import run_shell
from distrl.sim.suites import is_successful, setup_commands, tasks
from distrl.sim.suites.expert import perform

__all__ = ["Actor", "Evaluation", "Outcome", "episode_phone", "evaluate", "rollouts"]


class Actor(Protocol):
    """What ``evaluate`` runs: ``Policy``, or a stand-in with the same ``sample``."""

    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> Sequence[Sample]: ...


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
    wall_s: float

    @property
    def success_rate(self) -> float:
        """Share of episodes whose task check passed (0 when there were none)."""
        return sum(o.success for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    def by_template(self) -> dict[str, tuple[int, int]]:
        """Successes and episodes per task template."""
        out: dict[str, tuple[int, int]] = {}
        for outcome in self.outcomes:
            name = str(outcome.task.params.get("template", "?"))
            won, total = out.get(name, (0, 0))
            out[name] = (won + outcome.success, total + 1)
        return out


def episode_phone(task: Task, *, seed: int, width: int, height: int) -> Phone:
    """The phone an episode of ``task`` runs on, already set up for it (same arguments, same phone)."""
    phone = Phone(PhoneConfig(width=width, height=height, seed=zlib.crc32(f"{seed}/{task.id}".encode())))
    phone.reboot()
    for command in setup_commands(task):
        result = run_shell(phone, command)
        if result.exit_code != 0:
            raise RuntimeError(f"setup of {task.id} failed: {command!r}: {result.output!r}")
    return phone


def evaluate(
    policy: Actor,
    suite: str,
    split: str = "test",
    *,
    episodes: int | None = None,
    task_ids: Sequence[str] | None = None,
    seed: int = 0,
    temperature: float | None = 0.0,
    parallel: int = 16,
    max_steps: int | None = None,
    width: int = 540,
    height: int = 1200,
) -> Evaluation:
    """Run ``policy`` on tasks of ``suite``'s ``split`` and report how each episode went.

    Which tasks: ``task_ids`` if given, else ``episodes`` tasks in a seeded shuffled order (cycling when
    there are more episodes than tasks), else every task of the split once. ``parallel`` phones play at a
    time. ``temperature`` (for a ``Policy``; 0 is greedy, None keeps its setting) applies during the call;
    sampling is seeded from ``seed``.
    """
    started = time.monotonic()
    chosen = _chosen_tasks(suite, split, episodes, task_ids, seed)
    played = _play(policy, chosen, seed, temperature, parallel, max_steps, width, height, record=None)
    return Evaluation(
        suite=suite, split=split, outcomes=tuple(o for o, _ in played), wall_s=time.monotonic() - started
    )


def rollouts(
    policy: Actor,
    chosen: Sequence[Task],
    *,
    version: int,
    seed: int,
    temperature: float | None = None,
    parallel: int = 16,
    width: int = 540,
    height: int = 1200,
    id_prefix: str = "local",
) -> list[Trajectory]:
    """One episode of each task in ``chosen``, as ``Trajectory`` records a learner trains on.

    Every step holds the screen seen, the answer's text and parsed action, ``version`` and the
    behaviour log-prob ``Sample.logprob``. The reward is 1 on the last step of a successful episode and
    0 elsewhere. Trajectory ids are ``{id_prefix}/{seed}/{i}`` for the i-th task. ``temperature`` None
    keeps the policy's own (sampling, as the learner expects of its behaviour policy).
    """
    played = _play(policy, chosen, seed, temperature, parallel, None, width, height, record=version)
    trajectories = []
    for index, (outcome, recorded) in enumerate(played):
        assert recorded is not None  # record= was given
        steps, final, started_at, duration = recorded
        if outcome.success and steps:
            steps[-1] = dataclasses.replace(steps[-1], reward=1.0)
        last = steps[-1].action
        if outcome.ended and isinstance(last, Action):
            reason = EndReason.chosen(last)
        else:
            reason = EndReason.STEP_LIMIT
        trajectories.append(
            Trajectory(
                id=f"{id_prefix}/{seed}/{index}",
                task=outcome.task,
                host="local",
                device=f"phone-{index % parallel}",
                steps=tuple(steps),
                final_observation=final,
                end_reason=reason,
                success=outcome.success,
                started_at_s=started_at,
                duration_s=duration,
            )
        )
    return trajectories


_Recorded = tuple[list[Step], Observation, float, float]


@dataclass
class _Running:
    index: int
    task: Task
    phone: Phone
    history: list[Action | InvalidAction]
    texts: list[str]
    steps: list[Step]
    started_at: float
    started: float


def _play(
    policy: Actor,
    chosen: Sequence[Task],
    seed: int,
    temperature: float | None,
    parallel: int,
    max_steps: int | None,
    width: int,
    height: int,
    *,
    record: int | None,
) -> list[tuple[Outcome, _Recorded | None]]:
    """Each task of ``chosen`` played once; with ``record`` (a policy version) its steps are kept too."""
    if parallel < 1:
        raise ValueError(f"parallel must be ≥ 1, got {parallel}")
    queue = list(reversed(list(enumerate(chosen))))
    running: list[_Running] = []
    finished: dict[int, tuple[Outcome, _Recorded | None]] = {}
    calls = 0
    with _temperature(policy, temperature):
        while queue or running:
            while queue and len(running) < parallel:
                index, task = queue.pop()
                phone = episode_phone(task, seed=seed, width=width, height=height)
                running.append(_Running(index, task, phone, [], [], [], time.time(), time.monotonic()))
            observations = [_observe(r.phone) for r in running]
            inputs = [
                PolicyInput(goal=r.task.goal, observation=seen, history=tuple(r.history))
                for r, seen in zip(running, observations, strict=True)
            ]
            asked = time.monotonic()
            samples = policy.sample(inputs, seed=seed * 1_000_003 + calls)
            calls += 1
            still: list[_Running] = []
            for r, seen, sample in zip(running, observations, samples, strict=True):
                r.history.append(sample.action)
                r.texts.append(sample.text)
                ended = isinstance(sample.action, Action) and sample.action.type.ends_episode
                if isinstance(sample.action, Action) and not ended:
                    perform(r.phone, sample.action)
                if record is not None:
                    r.steps.append(sample.step(len(r.steps), seen, record, time.monotonic() - asked))
                limit = r.task.max_steps if max_steps is None else max_steps
                if not ended and len(r.history) < limit:
                    still.append(r)
                    continue
                outcome = Outcome(
                    task=r.task,
                    success=is_successful(r.task, r.phone.state()),
                    steps=len(r.history),
                    actions=tuple(r.texts),
                    ended=ended,
                )
                recorded = (
                    None
                    if record is None
                    else (r.steps, _observe(r.phone), r.started_at, time.monotonic() - r.started)
                )
                finished[r.index] = (outcome, recorded)
            running = still
    return [finished[index] for index in range(len(chosen))]


def _observe(phone: Phone) -> Observation:
    return Observation(
        screenshot=phone.screenshot("jpeg"),
        width=phone.width,
        height=phone.height,
        image_format="jpeg",
        timestamp_s=time.time(),
    )


def _chosen_tasks(
    suite: str, split: str, episodes: int | None, task_ids: Sequence[str] | None, seed: int
) -> list[Task]:
    pool = tasks(suite, split)
    if not pool:
        raise ValueError(f"suite {suite!r} has no {split!r} tasks")
    if task_ids is not None:
        known = {task.id: task for task in pool}
        unknown = [task_id for task_id in task_ids if task_id not in known]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a task of {suite!r}'s {split!r} split")
        return [known[task_id] for task_id in task_ids]
    if episodes is None:
        return pool
    if episodes < 0:
        raise ValueError(f"episodes must be ≥ 0, got {episodes}")
    rng = random.Random(f"evaluate/{suite}/{split}/{seed}")
    chosen: list[Task] = []
    while len(chosen) < episodes:
        chosen.extend(rng.sample(pool, len(pool)))
    return chosen[:episodes]


@contextlib.contextmanager
def _temperature(policy: Actor, temperature: float | None) -> Iterator[None]:
    if temperature is None or not isinstance(policy, Policy):
        yield
        return
    settings = policy.settings
    policy.settings = dataclasses.replace(settings, temperature=temperature)
    try:
        yield
    finally:
        policy.settings = settings
