"""Playing a policy on simulated phones in this process: ``evaluate`` for success rates, ``rollouts`` for
trajectories a learner can train on.

Both run several phones at once, so that each ``policy.sample`` call answers a batch of screens: the
episodes step in lockstep, and a run repeats exactly for a seed. Each episode is the one episode loop
(``distrl.device.episode.play_episode``) on ``episode_device(task, ...)``, a freshly booted
``SimDevice`` that its reset sets up with the task's shell commands: the policy sees the screen (JPEG)
and its previous actions, the action is done, and the episode ends at a STATUS action or after
``max_steps`` (default the task's). An invalid answer is a step that does nothing. Success is the
task's own check on the phone's final state.

What an evaluation found, and its statistics, are ``distrl.local.evaluation``.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol

import anyio

from distrl.config import Timeouts
from distrl.device.episode import Chooser, play_episode
from distrl.learner.rewards import rewarded
from distrl.local.evaluation import Evaluation, Outcome
from distrl.policy import Policy, PolicyInput, Sample
from distrl.records import Action, EndReason, InvalidAction, Observation, Step, Task, Trajectory
from distrl.sim.device import SimDevice
from distrl.sim.phone import Phone, PhoneConfig
from distrl.sim.suites import score
from distrl.tasks.draw import TaskDraw, split_tasks

__all__ = ["Actor", "episode_device", "episode_phone", "evaluate", "rollouts"]


class Actor(Protocol):
    """What ``evaluate`` runs: ``Policy``, or a stand-in with the same ``sample``."""

    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> Sequence[Sample]: ...


def episode_device(task: Task, *, seed: int, width: int, height: int, name: str = "phone") -> SimDevice:
    """The simulated phone an episode of ``task`` runs on: freshly booted, seeded by ``seed`` and the
    task (same arguments, same phone), no latency, no faults. Its ``reset`` sets the task up."""
    config = PhoneConfig(width=width, height=height, seed=zlib.crc32(f"{seed}/{task.id}".encode()))
    return SimDevice(name, phone_config=config, timeouts=Timeouts(), image_format="jpeg")


def episode_phone(task: Task, *, seed: int, width: int, height: int) -> Phone:
    """The phone of ``episode_device``, already set up for ``task``, for code that drives it itself."""
    return episode_device(task, seed=seed, width=width, height=height).prepare(task)


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
    on_episode: Callable[[int, int, int], None] | None = None,
    samples: int = 1,
) -> Evaluation:
    """Run ``policy`` on tasks of ``suite``'s ``split`` and report how each episode went.

    Which tasks: ``task_ids`` if given, else ``episodes`` tasks in a seeded shuffled order (cycling when
    there are more episodes than tasks), else every task of the split once. ``parallel`` phones play at a
    time. ``temperature`` (for a ``Policy``; 0 is greedy, None keeps its setting) applies during the call;
    sampling is seeded from ``seed``. ``samples`` plays each chosen task that many times (for
    ``Evaluation.pass_at_k``), the j-th play of every task with phones and sampling seeded from
    ``seed + j`` (the first play is the one a single-play run with ``seed`` makes). ``on_episode(done,
    total, successes)`` hears of each episode that ends, counted over all the plays (progress for long
    evaluations).
    """
    if samples < 1:
        raise ValueError(f"samples must be ≥ 1, got {samples}")
    started = time.monotonic()
    chosen = _chosen_tasks(suite, split, episodes, task_ids, seed)
    total = len(chosen) * samples
    plays: list[list[Trajectory]] = []
    for play in range(samples):
        won = sum(bool(t.success) for played in plays for t in played)
        heard = _counted_from(on_episode, len(chosen) * play, won, total)
        plays.append(
            _play(
                policy,
                chosen,
                seed + play,
                [temperature] * len(chosen),
                parallel,
                max_steps,
                width,
                height,
                on_episode=heard,
            )
        )
    outcomes = tuple(
        Outcome(
            task=trajectory.task,
            success=bool(trajectory.success),
            steps=len(trajectory.steps),
            actions=tuple(step.output for step in trajectory.steps),
            ended=trajectory.end_reason in (EndReason.COMPLETE, EndReason.IMPOSSIBLE),
        )
        for index in range(len(chosen))
        for trajectory in (played[index] for played in plays)
    )
    return Evaluation(
        suite=suite, split=split, outcomes=outcomes, wall_s=time.monotonic() - started, samples=samples
    )


def _counted_from(
    on_episode: Callable[[int, int, int], None] | None, done: int, won: int, total: int
) -> Callable[[int, int, int], None] | None:
    """``on_episode`` for one play of the tasks, after ``done`` episodes (``won`` successes) of ``total``."""
    if on_episode is None:
        return None
    tell = on_episode
    return lambda now_done, _, now_won: tell(done + now_done, total, won + now_won)


def rollouts(
    policy: Actor,
    chosen: Sequence[Task],
    *,
    version: int,
    seed: int,
    temperature: float | Sequence[float | None] | None = None,
    parallel: int = 16,
    width: int = 540,
    height: int = 1200,
    id_prefix: str = "local",
) -> list[Trajectory]:
    """One episode of each task in ``chosen``, as ``Trajectory`` records a learner trains on.

    Every step holds the screen seen, the answer's text and parsed action, ``version`` and the
    behaviour log-prob ``Sample.logprob``, and the reward ``distrl.learner.rewards.rewarded`` records.
    Trajectory ids are ``{id_prefix}/{seed}/{i}`` for the i-th task. ``temperature`` None keeps the
    policy's own (sampling, as the learner expects of its behaviour policy); one per task of ``chosen``
    plays each at its own (greedy episodes beside sampled ones, ``[policy] greedy_share``).
    """
    temperatures = list(temperature) if isinstance(temperature, Sequence) else [temperature] * len(chosen)
    if len(temperatures) != len(chosen):
        raise ValueError(f"{len(temperatures)} temperatures for {len(chosen)} tasks")
    played = _play(policy, chosen, seed, temperatures, parallel, None, width, height, version=version)
    trajectories = []
    for index, trajectory in enumerate(played):
        trajectories.append(dataclasses.replace(rewarded(trajectory), id=f"{id_prefix}/{seed}/{index}"))
    return trajectories


def _play(
    policy: Actor,
    chosen: Sequence[Task],
    seed: int,
    temperatures: Sequence[float | None],
    parallel: int,
    max_steps: int | None,
    width: int,
    height: int,
    *,
    version: int = 0,
    on_episode: Callable[[int, int, int], None] | None = None,
) -> list[Trajectory]:
    """Each task of ``chosen`` played once (``distrl.device.episode``), at its temperature of
    ``temperatures`` (None: the policy's own), ``parallel`` phones at a time; ``on_episode(done, total,
    successes)`` after each."""
    if parallel < 1:
        raise ValueError(f"parallel must be ≥ 1, got {parallel}")
    lockstep = _Lockstep(policy, seed, version)
    queue = iter(enumerate(chosen))
    played: dict[int, Trajectory] = {}

    failed: list[Exception] = []

    async def phone(slot: int, scope: anyio.CancelScope) -> None:
        try:
            for index, task in queue:  # shared: each slot takes the next task when it is free
                name = f"phone-{index % parallel}"
                device = episode_device(task, seed=seed, width=width, height=height, name=name)
                lockstep.join()
                try:
                    trajectory = await play_episode(
                        device,
                        task,
                        lockstep.chooser(slot, index, task, temperatures[index]),
                        episode_id=str(index),
                        host="local",
                        step_timeout_s=math.inf,
                        max_steps=max_steps,
                        score=score,
                        keep_final=True,
                    )
                finally:
                    lockstep.leave()
                if trajectory.cut_short:
                    failed.append(RuntimeError(f"{task.id}: the episode ended by a {trajectory.end_reason}"))
                    scope.cancel()
                    return
                if isinstance(policy, Policy):
                    temperature = policy.temperature_for(temperatures[index])
                    trajectory = dataclasses.replace(trajectory, temperature=temperature)
                played[index] = trajectory
                if on_episode is not None:
                    won = sum(bool(t.success) for t in played.values())
                    on_episode(len(played), len(chosen), won)
        except Exception as exc:  # the caller gets it as it is, not in an exception group
            failed.append(exc)
            scope.cancel()

    async def every_phone() -> None:
        async with anyio.create_task_group() as tg:
            for slot in range(min(parallel, len(chosen))):
                tg.start_soon(phone, slot, tg.cancel_scope)

    anyio.run(every_phone)
    if failed:
        raise failed[0]
    return [played[index] for index in range(len(chosen))]


class _Lockstep:
    """The running episodes' steps answered together, as one ``policy.sample`` call once every running
    episode has asked; each batch in slot order and seeded by the call's number, and each step keyed by
    its episode (which episodes share a batch depends on timing: the phones' screenshots run in
    threads), so that a run repeats."""

    def __init__(self, policy: Actor, seed: int, version: int) -> None:
        self._policy = policy
        self._seed = seed
        self._version = version
        self._calls = 0
        self._running = 0
        self._asked: dict[int, tuple[PolicyInput, Observation, int, anyio.Event]] = {}
        self._answers: dict[int, Step] = {}

    def join(self) -> None:
        self._running += 1

    def leave(self) -> None:
        self._running -= 1
        self._answer()

    def chooser(self, slot: int, episode: int, task: Task, temperature: float | None) -> Chooser:
        """The policy's answers for the ``episode``-th episode (of ``task``), played on ``slot``: each step
        keyed by the seed, the episode and the step (``PolicyInput.sampling_key``), so that its draws do
        not depend on which other episodes share its batch, nor on the policy."""

        async def choose(
            observation: Observation, history: Sequence[Action | InvalidAction], index: int
        ) -> Step:
            asked = anyio.Event()
            key = zlib.crc32(f"{self._seed}/{episode}/{task.id}/{index}".encode())
            question = PolicyInput(
                goal=task.goal,
                observation=observation,
                history=tuple(history),
                temperature=temperature,
                sampling_key=key,
            )
            self._asked[slot] = (question, observation, index, asked)
            self._answer()
            await asked.wait()
            return self._answers.pop(slot)

        return choose

    def _answer(self) -> None:
        """Sample for every question, once each running episode has asked one."""
        if not self._asked or len(self._asked) < self._running:
            return
        slots = sorted(self._asked)
        started = time.monotonic()
        samples = self._policy.sample(
            [self._asked[slot][0] for slot in slots], seed=self._seed * 1_000_003 + self._calls
        )
        self._calls += 1
        for slot, sample in zip(slots, samples, strict=True):
            _, observation, index, asked = self._asked.pop(slot)
            self._answers[slot] = sample.step(index, observation, self._version, time.monotonic() - started)
            asked.set()


def _chosen_tasks(
    suite: str, split: str, episodes: int | None, task_ids: Sequence[str] | None, seed: int
) -> list[Task]:
    pool = split_tasks(suite, split)
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
    return TaskDraw(pool, random.Random(f"evaluate/{suite}/{split}/{seed}")).take(episodes)
