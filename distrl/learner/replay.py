"""The prioritised replay buffer: whole trajectories, drawn in proportion to their priority.

DistRL's learner trains off-policy on trajectories the workers sent earlier, and replays the ones it
can learn most from more often (distributed prioritised experience replay: Horgan et al. 2018, with
the sampling of Schaul et al. 2016). The unit is the trajectory, not the step: the learner's losses
need whole episodes (returns, the critic's V(s_H+1)), so each trajectory has one priority.

- **Sampling.** Trajectory i is drawn with probability P(i) = p_i^α / Σ_j p_j^α, with replacement.
  α = 0 is uniform, α = 1 proportional. The learner says what a priority means (e.g. a trajectory's
  mean |TD error|) through ``update_priorities``; a new trajectory gets the largest priority ever set
  (1.0 before any), so it is replayed soon after it arrives and gets a priority of its own.
- **Importance sampling.** Prioritised draws bias the gradient; each draw carries the weight
  w_i = (N·P(i))^(−β) / max_j (N·P(j))^(−β) = (P_min / P(i))^β, over all N held trajectories, so
  every weight lies in (0, 1] and never scales a step up. β grows linearly from its initial value to
  1 over ``beta_updates`` calls to ``advance``: the bias matters most late in training, when the
  policy converges.
- **Capacity** counts steps, not trajectories, since memory (screenshots) grows with steps and
  episodes run from 1 to ``max_steps`` steps. Past it, the oldest trajectories go first, but never the
  one just added: a trajectory longer than the whole capacity is kept, alone.
- **Staleness.** A trajectory whose oldest step came from a policy more than ``max_policy_lag``
  versions behind the learner is refused by ``add`` and dropped by ``prune``: importance ratios
  against a policy that far away are too noisy to learn from.
- **Shared screenshots.** Consecutive steps and episodes of one task often show byte-identical
  screens (the home screen, an unchanged page). Held observations with equal screenshot bytes point
  at one ``bytes`` object, counted by reference and released when the last holder leaves.

``save`` writes the whole buffer to one file, atomically, and ``load`` gives it back exactly, down to
the random generator, so that a resumed run draws what the interrupted one would have drawn. The file's
layout (framing, checksums, limits) is ``distrl.learner.replay_file``'s; which state its header holds,
field by field, is this module's, beside the state itself.
"""

from __future__ import annotations

import collections
import math
import random
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

from distrl.learner import replay_file
from distrl.learner.replay_file import Corrupt
from distrl.records import Document, Observation, Trajectory

PRIORITY_EPSILON = 1e-6
"""Added to every priority set by ``update_priorities``, so that no trajectory has zero chance."""
_COUNTERS = ("added", "evicted", "dropped_stale", "refused_empty", "sampled")


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplayStats:
    """What the buffer holds and has done, for logs and TensorBoard."""

    trajectories: int
    """Trajectories held now."""
    steps: int
    """Steps held now, summed over the trajectories."""
    screenshot_bytes: int
    """Bytes of the distinct screenshots held (each shared one counted once)."""
    raw_screenshot_bytes: int
    """Bytes the held screenshots would take without sharing."""
    added: int
    """Trajectories accepted since creation."""
    evicted: int
    """Trajectories removed to stay within capacity, oldest first."""
    dropped_stale: int
    """Trajectories refused by ``add`` or removed by ``prune`` for exceeding ``max_policy_lag``."""
    refused_empty: int
    """Trajectories with no steps, refused."""
    sampled: int
    """Trajectories handed out by ``sample``, counting repeats."""
    mean_priority: float
    """Mean priority of the held trajectories (0.0 when empty)."""
    max_priority: float
    """Largest priority of the held trajectories (0.0 when empty)."""
    oldest_version: int | None
    """Smallest ``policy_version`` of any held step; None when empty."""
    beta: float
    """The importance-sampling exponent β now."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplaySample:
    """``n`` draws, in order; the i-th entry of every tuple belongs to the i-th draw."""

    keys: tuple[int, ...]
    """Each draw's key, stable while it is held: pass it back to ``update_priorities``."""
    trajectories: tuple[Trajectory, ...]
    probabilities: tuple[float, ...]
    """P(i) = p_i^α / Σ_j p_j^α when drawn."""
    weights: tuple[float, ...]
    """Importance-sampling weights (P_min / P(i))^β, in (0, 1]; multiply each trajectory's loss by it."""


@dataclass(slots=True)
class _Entry:
    trajectory: Trajectory
    priority: float
    steps: int
    oldest_version: int


@dataclass(slots=True)
class _Screen:
    data: bytes
    refs: int


class ReplayBuffer:
    """A bounded buffer of whole trajectories, sampled in proportion to priority^α (see the module notes)."""

    def __init__(
        self,
        capacity: int,
        *,
        alpha: float = 0.5,
        beta: float = 0.4,
        beta_updates: int = 1000,
        max_policy_lag: int | None = None,
        seed: int = 0,
    ) -> None:
        """Raises ``ValueError`` for ``capacity`` < 1, ``alpha`` < 0 (or not finite), ``beta`` outside
        [0, 1], ``beta_updates`` < 1 or ``max_policy_lag`` < 0."""
        if capacity < 1:
            raise ValueError(f"replay capacity must be at least 1 step, not {capacity}")
        if not (math.isfinite(alpha) and alpha >= 0):
            raise ValueError(f"replay alpha must be a finite number >= 0, not {alpha}")
        if not 0 <= beta <= 1:
            raise ValueError(f"replay beta must be in [0, 1], not {beta}")
        if beta_updates < 1:
            raise ValueError(f"replay beta_updates must be at least 1, not {beta_updates}")
        if max_policy_lag is not None and max_policy_lag < 0:
            raise ValueError(f"replay max_policy_lag must be >= 0 or None, not {max_policy_lag}")
        self.capacity = capacity
        """The most steps held."""
        self.alpha = alpha
        """Priority exponent α: 0 samples uniformly, 1 in proportion to priority."""
        self.initial_beta = beta
        """β before the first ``advance``."""
        self.beta_updates = beta_updates
        """Calls to ``advance`` after which β is 1."""
        self.max_policy_lag = max_policy_lag
        """Most policy versions a held step may be behind the learner; None: no limit."""
        self.seed = seed
        """Seed of the buffer's own random generator."""
        self._random = random.Random(seed)
        self._entries: OrderedDict[int, _Entry] = OrderedDict()  # by key, oldest first
        self._screens: dict[bytes, _Screen] = {}
        self._steps = 0
        self._screen_bytes = 0
        self._raw_screen_bytes = 0
        self._max_priority = 1.0
        self._next_key = 0
        self._updates = 0
        self._counts = dict.fromkeys(_COUNTERS, 0)

    # -- contents -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Trajectories held."""
        return len(self._entries)

    @property
    def steps(self) -> int:
        """Steps held, summed over the trajectories."""
        return self._steps

    @property
    def beta(self) -> float:
        """β now: β₀ + (1 − β₀)·min(updates, beta_updates) / beta_updates."""
        if self._updates >= self.beta_updates:
            return 1.0
        return self.initial_beta + (1.0 - self.initial_beta) * self._updates / self.beta_updates

    def trajectories(self) -> tuple[Trajectory, ...]:
        """The held trajectories, oldest first (their screenshots shared)."""
        return tuple(entry.trajectory for entry in self._entries.values())

    def priorities(self) -> dict[int, float]:
        """Each held trajectory's priority by key, oldest first; keys grow with every trajectory accepted."""
        return {key: entry.priority for key, entry in self._entries.items()}

    def stats(self) -> ReplayStats:
        """Counters and sizes now (O(N) in the trajectories held)."""
        priorities = [entry.priority for entry in self._entries.values()]
        return ReplayStats(
            trajectories=len(self._entries),
            steps=self._steps,
            screenshot_bytes=self._screen_bytes,
            raw_screenshot_bytes=self._raw_screen_bytes,
            added=self._counts["added"],
            evicted=self._counts["evicted"],
            dropped_stale=self._counts["dropped_stale"],
            refused_empty=self._counts["refused_empty"],
            sampled=self._counts["sampled"],
            mean_priority=math.fsum(priorities) / len(priorities) if priorities else 0.0,
            max_priority=max(priorities, default=0.0),
            oldest_version=min((e.oldest_version for e in self._entries.values()), default=None),
            beta=self.beta,
        )

    # -- adding and removing ------------------------------------------------------------------------

    def add(self, trajectory: Trajectory, *, learner_version: int) -> bool:
        """Hold ``trajectory`` at the largest priority ever set; False (and counted) if it is refused.

        Refused: a trajectory with no steps, and one whose oldest step is more than ``max_policy_lag``
        versions behind ``learner_version``. Past capacity, the oldest trajectories are evicted until
        the steps fit, except the one just added; a trajectory of a task group is evicted with the rest
        of its group, and the group of the one just added is kept whole, past capacity if it must be.
        What is held is ``trajectory`` with its screenshots replaced by the shared ones: equal to it, not
        the same object.
        """
        if not trajectory.steps:
            self._counts["refused_empty"] += 1
            return False
        oldest = min(step.policy_version for step in trajectory.steps)
        if self._stale(oldest, learner_version):
            self._counts["dropped_stale"] += 1
            return False
        self._insert(self._next_key, trajectory, self._max_priority)
        self._next_key += 1
        self._counts["added"] += 1
        while self._steps > self.capacity and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            group = self._entries[oldest].trajectory.group
            if group and group == trajectory.group:
                break  # only the new trajectory's own group is left: kept whole, over capacity for now
            members = [  # a task group leaves whole: part of one would be sampled as if it were all of it
                key for key, entry in self._entries.items() if group and entry.trajectory.group == group
            ]
            for key in members or [oldest]:
                self._remove(key)
                self._counts["evicted"] += 1
        return True

    def prune(self, learner_version: int) -> int:
        """Drop the trajectories now more than ``max_policy_lag`` versions behind; how many went."""
        stale = [key for key, e in self._entries.items() if self._stale(e.oldest_version, learner_version)]
        for key in stale:
            self._remove(key)
        self._counts["dropped_stale"] += len(stale)
        return len(stale)

    def _stale(self, oldest_version: int, learner_version: int) -> bool:
        return self.max_policy_lag is not None and learner_version - oldest_version > self.max_policy_lag

    def _insert(self, key: int, trajectory: Trajectory, priority: float) -> None:
        steps = tuple(replace(step, observation=self._share(step.observation)) for step in trajectory.steps)
        final = trajectory.final_observation
        shared_final = None if final is None else self._share(final)
        shared = replace(trajectory, steps=steps, final_observation=shared_final)
        oldest = min(step.policy_version for step in steps)
        self._entries[key] = _Entry(shared, priority, len(steps), oldest)
        self._steps += len(steps)

    def _remove(self, key: int) -> None:
        entry = self._entries.pop(key)
        self._steps -= entry.steps
        for observation in _observations(entry.trajectory):
            self._release(observation.screenshot)

    def _share(self, observation: Observation) -> Observation:
        """``observation`` pointing at the held copy of its screenshot, which gains a reference."""
        data = observation.screenshot
        if type(data) is not bytes:  # a bytearray or memoryview cannot be a dict key
            data = bytes(data)
        screen = self._screens.get(data)
        if screen is None:
            screen = self._screens[data] = _Screen(data, 0)
            self._screen_bytes += len(data)
        screen.refs += 1
        self._raw_screen_bytes += len(data)
        return replace(observation, screenshot=screen.data)

    def _release(self, data: bytes) -> None:
        screen = self._screens[data]
        screen.refs -= 1
        self._raw_screen_bytes -= len(data)
        if screen.refs == 0:
            del self._screens[data]
            self._screen_bytes -= len(data)

    # -- sampling -----------------------------------------------------------------------------------

    def sample(self, n: int, *, whole_groups: bool = False) -> ReplaySample:
        """``n`` draws with replacement, P(i) = p_i^α / Σ_j p_j^α, each with its IS weight.

        With ``whole_groups``, a drawn trajectory of a task group (``Trajectory.group``) brings every
        member of its group the buffer holds, each group once, until there are ``n`` or more: what the
        group-relative algorithms read.

        O(N + n log N). Priorities are divided by the largest before the power so that p^α cannot
        overflow; the weights are computed as (p_min / p_i)^(αβ), which equals (P_min / P(i))^β.
        ``ValueError`` if the buffer is empty or ``n`` < 1.
        """
        if n < 1:
            raise ValueError(f"cannot sample {n} trajectories: n must be at least 1")
        if not self._entries:
            raise ValueError("cannot sample from an empty replay buffer")
        keys = list(self._entries)
        entries = list(self._entries.values())
        top = max(entry.priority for entry in entries)
        lowest = min(entry.priority for entry in entries)
        scaled = [(entry.priority / top) ** self.alpha for entry in entries]
        cumulative = list(accumulate(scaled))
        total = cumulative[-1]
        if whole_groups:
            drawn = self._whole_groups(entries, cumulative, n)
        else:
            drawn = self._random.choices(range(len(entries)), cum_weights=cumulative, k=n)
        exponent = self.alpha * self.beta
        self._counts["sampled"] += len(drawn)
        return ReplaySample(
            keys=tuple(keys[i] for i in drawn),
            trajectories=tuple(entries[i].trajectory for i in drawn),
            probabilities=tuple(scaled[i] / total for i in drawn),
            weights=tuple((lowest / entries[i].priority) ** exponent for i in drawn),
        )

    def _whole_groups(self, entries: Sequence[_Entry], cumulative: Sequence[float], n: int) -> list[int]:
        """Draws by ``cumulative`` weight, each bringing its whole group (once), until ``n`` or more, or
        every group is drawn. A trajectory of no group is its own, drawn once too: twice in one batch, its
        one play would count as two of its task's."""
        members: dict[str, list[int]] = collections.defaultdict(list)
        for index, entry in enumerate(entries):
            members[entry.trajectory.group or f"\0{index}"].append(index)  # no group's name holds a NUL
        drawn: list[int] = []
        seen: set[str] = set()
        idle = 0
        while len(drawn) < n and len(seen) < len(members) and idle <= 100 * len(entries):
            (index,) = self._random.choices(range(len(entries)), cum_weights=cumulative, k=1)
            unit = entries[index].trajectory.group or f"\0{index}"
            if unit in seen:
                idle += 1  # (a bound on draws that find nothing new: every weight is above 0)
                continue
            seen.add(unit)
            drawn.extend(members[unit])
            idle = 0
        return drawn

    def update_priorities(self, keys: Sequence[int], priorities: Sequence[float]) -> None:
        """Set the priority of each held key to ``priority + PRIORITY_EPSILON``; the last one wins.

        Keys no longer held (evicted or pruned since they were sampled) are skipped silently.
        ``ValueError``, before anything changes, for lengths that differ, a priority that is negative
        or not finite, or a key this buffer never gave out.
        """
        if len(keys) != len(priorities):
            raise ValueError(f"{len(keys)} keys but {len(priorities)} priorities")
        for key, priority in zip(keys, priorities, strict=True):
            if not (math.isfinite(priority) and priority >= 0):
                raise ValueError(f"priority {priority} for key {key} is not a finite number >= 0")
            if not isinstance(key, int) or isinstance(key, bool) or not 0 <= key < self._next_key:
                raise ValueError(f"key {key!r} was never given out by this replay buffer")
        for key, priority in zip(keys, priorities, strict=True):
            entry = self._entries.get(key)
            if entry is not None:
                entry.priority = float(priority) + PRIORITY_EPSILON
                self._max_priority = max(self._max_priority, entry.priority)

    def advance(self) -> None:
        """One learner update happened: move β one step of its linear schedule towards 1."""
        self._updates += 1

    # -- checkpoints --------------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the whole buffer to ``path`` atomically: a crash leaves the previous file or the new one.

        ``CheckpointError`` (``reason`` ``io``) if it cannot be written, ``corrupt`` if a held
        trajectory has no JSON form (a non-finite float); either way ``path`` is untouched.
        """
        header = {
            "capacity": self.capacity,
            "alpha": self.alpha,
            "beta": self.initial_beta,
            "beta_updates": self.beta_updates,
            "max_policy_lag": self.max_policy_lag,
            "seed": self.seed,
            "updates": self._updates,
            "counters": self._counts,
            "max_priority": self._max_priority,
            "next_key": self._next_key,
            "rng": replay_file.random_state_to_json(self._random.getstate()),
            "trajectories": len(self._entries),
        }
        entries = ((key, entry.priority, entry.trajectory) for key, entry in self._entries.items())
        replay_file.write(Path(path), header, entries)

    @classmethod
    def load(cls, path: str | Path) -> ReplayBuffer:
        """The buffer ``save`` wrote to ``path``, exactly: contents, keys, priorities, counters, β, RNG.

        ``CheckpointError`` with ``reason`` ``missing`` if there is no such file, ``io`` if it cannot be
        read, and ``corrupt`` if it is not a whole, intact replay checkpoint.
        """
        with replay_file.read(Path(path)) as file:
            buffer, count = cls._from_header(file.header)
            for i, (key, priority, trajectory) in enumerate(file.trajectories(count)):
                if key >= buffer._next_key:
                    raise Corrupt(f"trajectory {i} has key {key}, out of order")
                if not trajectory.steps or not (math.isfinite(priority) and priority > 0):
                    raise Corrupt(f"trajectory {i} has no steps or a priority of {priority}")
                buffer._insert(key, trajectory, priority)
            if buffer._steps > buffer.capacity and len(buffer) > 1:
                raise Corrupt(f"it holds {buffer._steps} steps, over its capacity of {buffer.capacity}")
            return buffer

    @classmethod
    def _from_header(cls, head: Document) -> tuple[ReplayBuffer, int]:
        """An empty buffer with the header's settings and state, and how many trajectories follow."""
        try:
            buffer = cls(
                head.integer("capacity"),
                alpha=head.number("alpha"),
                beta=head.number("beta"),
                beta_updates=head.integer("beta_updates"),
                max_policy_lag=None if head.is_null("max_policy_lag") else head.integer("max_policy_lag"),
                seed=head.integer("seed"),
            )
        except ValueError as exc:
            raise Corrupt(f"its header holds settings no buffer can have ({exc})") from exc
        buffer._updates = head.integer("updates", minimum=0)
        counters = head.document("counters")
        buffer._counts = {name: counters.integer(name, minimum=0) for name in _COUNTERS}
        counters.close()
        buffer._max_priority = head.number("max_priority")
        if buffer._max_priority <= 0:
            raise Corrupt(f"its header's max_priority is {buffer._max_priority}, not a number > 0")
        buffer._next_key = head.integer("next_key", minimum=0)
        try:
            buffer._random.setstate(replay_file.random_state_from_json(head.take("rng")))
        except (TypeError, ValueError, OverflowError) as exc:
            raise Corrupt(f"its header's random generator state is not valid ({exc})") from exc
        count = head.integer("trajectories", minimum=0)
        head.close()
        return buffer, count


def _observations(trajectory: Trajectory) -> Iterator[Observation]:
    for step in trajectory.steps:
        yield step.observation
    if trajectory.final_observation is not None:
        yield trajectory.final_observation
