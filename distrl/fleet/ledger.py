"""The run's ledger: every trajectory that arrives is scored and counted here, once, and passed on.

``RunStats`` is what a run reports (``train`` and ``collect`` return it, progress callbacks get it): a
snapshot made from the parts that own each count (the sampler's tasks handed out and failed, the hosts'
restarts, the publisher's pushes, the trainer's updates, and this ledger's arrivals), read by the
board's ``Gauges``.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import logging
import time
from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from distrl.fleet.progress import progress_line
from distrl.fleet.stop import Stop
from distrl.learner.rewards import rewarded
from distrl.records import Trajectory

__all__ = ["Groups", "Ledger", "RunStats"]

log = logging.getLogger(__name__)


@dataclasses.dataclass
class RunStats:
    """Every task handed out, and what became of it; plus the run's other counters."""

    handed_out: int = 0
    completed: int = 0
    """Trajectories that reached the learner (each counted once)."""
    failed: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    """Episodes that did not come back, by reason (``link_lost``, ``timeout``, ``worker_error``,
    ``stopped``: the run ended while they were in flight)."""
    requeued: int = 0
    """Tasks of failed episodes that went back to the sampler."""
    successes: int = 0
    steps: int = 0
    """Steps of the trajectories in ``completed``."""
    steps_streamed: int = 0
    """Steps the devices reported as they took them (those of episodes that failed later too)."""
    device_errors: int = 0
    """Trajectories that came back cut short by a device failure (counted in ``completed`` too)."""
    cut_short: int = 0
    """Trajectories cut short by the device or the policy (``Trajectory.cut_short``): counted in
    ``completed``, but not trained on."""
    unscored: int = 0
    """Trajectories that arrived with no score (their device could not report what their evaluator
    reads, or the run stopped while they waited for the judge): counted in ``completed``, not in the
    success rate, and not trained on."""
    judging: int = 0
    """Trajectories waiting for the judge's verdict (not yet in ``completed``)."""
    judge: dict[str, float] = dataclasses.field(default_factory=dict)
    """The judge's counters (``verdicts``, ``requests``, ``cache_hits``, ``errors``, ``latency_p50_s``,
    ``prompt_tokens``, ``completion_tokens``); empty without a judge."""
    restarts: int = 0
    """Host links started again after a loss."""
    stale: int = 0
    """Trajectories the learner refused on arrival: begun by a policy more than ``run.max_policy_lag``
    versions old (counted in ``completed``, not trained on)."""
    training: bool = False
    """The run trains (``train``): its updates, loss, policy version and lag are on the progress line."""
    updates: int = 0
    weight_bytes: int = 0
    weight_pushes: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)
    taken: float = dataclasses.field(default_factory=time.monotonic)
    """When these numbers were read (``time.monotonic()``, as ``started``)."""
    steps_per_s: float = 0.0
    """Steps the devices took per second (counted as they are streamed): over the last progress period
    while the run goes, over the whole run in its final numbers (what ``train`` and ``collect`` return)."""
    policy_version: int = 0
    lag_p50: int = 0
    """Median staleness (versions) of recent steps when they reached the learner."""
    host_lag_p50: dict[str, int] = dataclasses.field(default_factory=dict)
    """``lag_p50`` per host: a host whose weights arrive late shows here."""
    hosts_up: int = 0
    """Hosts up; in a run's final numbers (after its hosts are shut down), those up when it stopped."""
    hosts: int = 0
    given_up: dict[str, str] = dataclasses.field(default_factory=dict)
    """Hosts the run went on without, each with its last error."""
    retired: int = 0
    """Devices retired after failing ``run.max_restarts`` + 1 episodes in a row."""
    actor_loss: float | None = None
    """The latest update's actor loss (None before the first update that trained the actor)."""
    entropy: float | None = None
    """The latest update's mean per-token entropy."""
    goal_episodes: int = 0
    """The run's episode budget (``run.max_trajectories``, ``collect``'s episodes); 0 for none."""
    deadline_s: float = 0.0
    """The run's time budget (``run.duration_s``); 0 for none."""
    ended: str = ""
    """Why the run stopped: ``goal`` (its episodes), ``deadline`` (``run.duration_s``), ``hosts`` (every
    host was done or given up first), ``judge`` (no verdict for ``judge.unreachable_s``). Empty while it
    runs, and when it was cancelled."""
    judge_unreachable: str = ""
    """Why the judge stopped the run (``ended`` is ``judge``): how long it gave no verdict, its last
    error."""
    recent: collections.deque[bool] = dataclasses.field(default_factory=lambda: collections.deque(maxlen=100))
    """Success of the last 100 trajectories, oldest first."""
    recent_greedy: collections.deque[bool] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=100)
    )
    """Success of the last 100 played greedily (``[policy] greedy_share``), oldest first."""

    @property
    def achieved_nothing(self) -> str:
        """Why this run did not do what it was asked (empty if it did): every host given up or every
        device retired before its goal, or no episode at all."""
        if self.ended == "hosts":
            if self.given_up and len(self.given_up) == self.hosts:
                why = "; ".join(f"{name}: {error}" for name, error in self.given_up.items())
                return f"every host was given up ({why})"
            if self.retired:
                return f"{self.retired} device(s) retired after failing episode after episode, none left"
            return "every host stopped before the run's goal"
        if self.ended == "judge":
            return self.judge_unreachable or "the judge gave no verdict"
        if self.ended and not self.completed:
            return "no episode came back"
        return ""

    @property
    def in_flight(self) -> int:
        """Episodes being played (those played and waiting for the judge are ``judging``)."""
        return self.handed_out - self.completed - sum(self.failed.values()) - self.judging

    @property
    def scored(self) -> int:
        """Trajectories that arrived with a score."""
        return self.completed - self.unscored

    @property
    def success_rate(self) -> float:
        return self.successes / self.scored if self.scored else 0.0

    @property
    def recent_success_rate(self) -> float:
        """Success over the last 100 trajectories: the one that shows learning."""
        return sum(self.recent) / len(self.recent) if self.recent else 0.0

    @property
    def recent_greedy_success_rate(self) -> float:
        """Success over the last 100 trajectories played greedily: what users would deploy, as it is now."""
        return sum(self.recent_greedy) / len(self.recent_greedy) if self.recent_greedy else 0.0

    @property
    def elapsed_s(self) -> float:
        """Seconds from the run's start to when these numbers were read."""
        return self.taken - self.started

    @property
    def time_left_s(self) -> float | None:
        """Seconds until the run's deadline or, at the recent pace, its episode budget (the sooner);
        None when it has neither, or no pace yet."""
        left = []
        if self.deadline_s:
            left.append(max(0.0, self.deadline_s - self.elapsed_s))
        if self.goal_episodes and self.completed and self.elapsed_s > 0:
            rate = self.completed / self.elapsed_s
            left.append(max(0, self.goal_episodes - self.completed) / rate)
        return min(left) if left else None

    @property
    def failures(self) -> int:
        """Episodes that failed, not counting those the run's stop cut short (``stopped``)."""
        return sum(n for why, n in self.failed.items() if why != "stopped")

    def line(self, width: int | None = None) -> str:
        """One line of progress, as ``python -m distrl run`` prints it, in at most ``width`` characters
        (None: every field in full); ``distrl.fleet.progress`` says which fields a width shows."""
        return progress_line(self, width)


class Ledger:
    """Scores each arriving trajectory, counts it once, keeps it (``collect``) or sends it on to the
    trainer; stops the run when ``limit`` trajectories have arrived."""

    def __init__(
        self,
        *,
        stop: Stop,
        limit: int | None,
        version: Callable[[], int],
        trainer: MemoryObjectSendStream[Trajectory] | None = None,
        keep: bool = False,
        record: Callable[[Trajectory], None] | None = None,
        group_size: int = 1,
    ) -> None:
        self._stop = stop
        self.groups = Groups(group_size)
        """The task groups on their way to the trainer (``[tasks] group_size``)."""
        self._limit = limit
        self._version = version
        """The policy version now published: a step's staleness is measured against it on arrival."""
        self._trainer = trainer
        self._record = record
        """Where each counted trajectory goes to be written to disk (``Recorder.offer``), if anywhere."""
        self.kept: list[Trajectory] | None = [] if keep else None
        self.started = time.monotonic()
        self.completed = 0
        self.successes = 0
        self.steps = 0
        self.steps_streamed = 0
        self.device_errors = 0
        self.cut_short = 0
        self.unscored = 0
        self._unscored_warned = False
        self.recent: collections.deque[bool] = collections.deque(maxlen=100)
        self.recent_greedy: collections.deque[bool] = collections.deque(maxlen=100)
        self._staleness: collections.defaultdict[str, collections.deque[int]] = collections.defaultdict(
            lambda: collections.deque(maxlen=500)
        )
        """The staleness of each host's last 500 steps that arrived."""

    def count_step(self) -> None:
        """A device took a step (streamed as it happened)."""
        self.steps_streamed += 1

    def lag_p50(self) -> tuple[int, dict[str, int]]:
        """Median staleness of the last steps that arrived, over all hosts and per host."""
        every = [lag for host in self._staleness.values() for lag in host]
        return _median(every), {name: _median(host) for name, host in self._staleness.items()}

    async def arrive(self, trajectory: Trajectory) -> None:
        """A trajectory reached the learner: record its reward (``distrl.learner.rewards``), count it, and
        pass it on. One with no score is counted and kept (``collect``), never trained on. Waits while
        the trainer's inbox is full (backpressure)."""
        trajectory = rewarded(trajectory)
        self.completed += 1
        self.successes += bool(trajectory.success)
        unscored = trajectory.success is None and not trajectory.cut_short
        if unscored:
            self.unscored += 1
            if not trajectory.verdict and not self._unscored_warned:  # the judge's queue says its own
                self._unscored_warned = True
                log.warning(
                    "episode %s (%s, evaluator %s) came back with no score: its device cannot report what"
                    " the evaluator reads; such episodes are counted as unscored and not trained on",
                    trajectory.id,
                    trajectory.task.id,
                    trajectory.task.evaluator or "none",
                )
        elif not trajectory.cut_short:
            self.recent.append(bool(trajectory.success))
            if trajectory.temperature == 0:
                self.recent_greedy.append(bool(trajectory.success))
        self.steps += len(trajectory.steps)
        self.device_errors += trajectory.end_reason == "device_error"
        self.cut_short += trajectory.cut_short
        version = self._version()
        self._staleness[trajectory.host].extend(version - step.policy_version for step in trajectory.steps)
        if self.kept is not None:
            self.kept.append(trajectory)
        if self._record is not None:
            self._record(trajectory)
        if self._trainer is not None:
            for ready in self.groups.arrived(trajectory, trainable=not unscored):
                try:  # no wait (and so no cancellation) between counting it and handing it on
                    self._trainer.send_nowait(ready)
                except anyio.WouldBlock:
                    await self._trainer.send(ready)
        if self._limit is not None and self.completed >= self._limit:
            self._stop.set("goal")


class Groups:
    """Holds each task group's members until all ``size`` have arrived, then hands on the group whole:
    the trainer sees a group at once or not at all. A member that arrives untrainable (unscored, or cut
    short by a failure of its device or policy) still counts as arrived; its group is then delivered
    short, and the log says which member and why. A trajectory outside a group passes at once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held: dict[str, list[Trajectory]] = {}
        self._arrived: collections.Counter[str] = collections.Counter()
        self.whole = 0
        """Groups handed on with every member."""
        self.short = 0
        """Groups handed on with fewer (a member arrived with no score)."""

    @property
    def waiting(self) -> int:
        """Groups with some members arrived and others still out."""
        return len(self._arrived)

    def arrived(self, trajectory: Trajectory, *, trainable: bool) -> list[Trajectory]:
        """What to hand on now that ``trajectory`` has arrived: nothing while its group waits for others,
        then the group's trainable members."""
        if self.size == 1 or not trajectory.group:
            return [trajectory] if trainable else []
        key = trajectory.group
        self._arrived[key] += 1
        if trainable and not trajectory.cut_short:
            self._held.setdefault(key, []).append(trajectory)
        else:  # a member cut short is not trained on either: its group is short, not whole
            why = (
                f"was cut short ({trajectory.end_reason})"
                if trajectory.cut_short
                else "arrived with no score"
            )
            log.info("group %s: member %s %s; the group goes on short", key, trajectory.id, why)
        if self._arrived[key] < self.size:
            return []
        del self._arrived[key]
        members = self._held.pop(key, [])
        if len(members) == self.size:
            self.whole += 1
        else:
            self.short += 1
            log.info("group %s delivered short: %d of %d members", key, len(members), self.size)
        return members


def _median(values: collections.abc.Iterable[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0
