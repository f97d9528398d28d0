"""The task sampler: which task each free device plays next, and the account of every task handed out.

Tasks come in the one task draw's order (``distrl.tasks.draw``: seeded, shuffled, cycling, or by a
curriculum that reads each scored episode's outcome, ``record``); the task of an episode that failed goes
back to the front. With an episode budget (``collect``'s episodes,
``run.max_trajectories``) a free session waits while every episode still needed is out: one that fails
puts its task back, for any host still up. With ``randomise`` (``[tasks] randomise``), that share of the
train tasks drawn is swapped for a task the source draws like it (``Drawing``: the sim's suites draw
fresh values and wordings of the same template).

With ``group_size`` K above 1 (``[tasks] group_size``) each task drawn is handed out K times, as one
group: each member to a device that holds none of the group yet, on a host that holds none unless every
host seen so far already does (a group is open until its K are out; a device that no open group can
take starts a new one). A member that fails goes back to its group, so that the group reaches the
learner whole.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import uuid
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import anyio

from distrl.errors import DistrlError
from distrl.records import Task, Trajectory
from distrl.tasks.draw import Curriculum, task_draw

__all__ = ["Drawing", "Job", "TaskSampler"]


class Job(NamedTuple):
    """An episode to play: its id, its task and its group (empty outside one)."""

    episode_id: str
    task: Task
    group: str = ""


@dataclasses.dataclass
class _Group:
    """A task group with members still to hand out."""

    key: str
    task: Task
    left: int
    devices: set[str] = dataclasses.field(default_factory=set)
    hosts: set[str] = dataclasses.field(default_factory=set)


class Drawing(Protocol):
    """A task source that can also draw new tasks like its own (the sim's suites; ``[tasks] randomise``)."""

    def drawn(self, task: Task, rng: random.Random) -> Task:
        """A task of the same kind as ``task`` (its template) with freshly drawn values and wordings, never
        a held-out one; ``task`` itself where its kind draws nothing."""
        ...


class _Stop(Protocol):
    """The run's stop (``distrl.fleet.stop.Stop``), as far as the sampler needs it."""

    def is_set(self) -> bool: ...


class TaskSampler:
    """Hands out ``(episode id, task)``; counts what it handed out and what came back failed."""

    def __init__(
        self,
        pool: Sequence[Task],
        rng: random.Random,
        *,
        run_name: str,
        limit: int | None,
        stop: _Stop,
        curriculum: Curriculum = "uniform",
        randomise: float = 0.0,
        drawing: Drawing | None = None,
        group_size: int = 1,
    ) -> None:
        if not pool:
            raise DistrlError("there are no tasks to run")
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        self.group_size = group_size
        self._open: list[_Group] = []
        """Groups with members still to hand out, oldest first."""
        self.groups = 0
        """Groups started."""
        self._hosts: set[str] = set()
        """The hosts that have taken a member."""
        if not 0.0 <= randomise <= 1.0:
            raise ValueError(f"randomise must be between 0 and 1, got {randomise}")
        if randomise and drawing is None:
            raise ValueError("randomise needs a drawing source")
        self._draw = task_draw(pool, rng, curriculum)
        self._randomise = randomise
        self._drawing = drawing if randomise else None
        # a stream of its own, seeded from rng's state without drawing from it: the draw's order is the
        # same with and without randomise
        self._fresh = random.Random(f"randomise/{rng.getstate()}")
        self._drawn_from: dict[str, collections.deque[Task]] = {}
        """The pool's tasks that drawn tasks out now stand for, by the drawn task's id, oldest first (a
        template with few values draws the same task again: each stands for its own)."""
        self._returned: collections.deque[tuple[Task, str]] = collections.deque()
        """Tasks of failed episodes, each with its group, to hand out again first."""
        self._limit = limit
        self._stop = stop
        self._prefix = f"{run_name}/{uuid.uuid4().hex[:8]}"
        """Part of every episode id, so that ids stay unique across resumed runs."""
        self._requeued = anyio.Event()
        """Set (and replaced) each time a failed episode's task goes back."""
        self.handed_out = 0
        self.failed: collections.Counter[str] = collections.Counter()
        """Episodes that did not come back, by reason (``link_lost``, ``timeout``, ``worker_error``,
        ``stopped``: the run ended while they were in flight). Each one's task was re-queued."""

    @property
    def requeued(self) -> int:
        return sum(self.failed.values())

    async def take(self, device: str = "", host: str = "") -> Job | None:
        """The next episode to hand out, to ``device`` on ``host`` (what a group spreads its members
        over), or None once the run has stopped."""
        while self._limit is not None and self.handed_out - self.requeued >= self._limit:
            if self._stop.is_set():
                return None
            await self._requeued.wait()
        if self._stop.is_set():
            return None
        if self._returned:
            task, group = self._returned.popleft()
        elif self.group_size == 1:
            task, group = self._fresh_or(self._draw.next()), ""
        else:
            task, group = self._member(f"{host}/{device}", host)
        self.handed_out += 1
        return Job(f"{self._prefix}/{self.handed_out:07d}", task, group)

    def _member(self, device: str, host: str) -> tuple[Task, str]:
        """A member of the first open group that ``host`` (else ``device``) holds none of; of a new
        group where there is none."""
        self._hosts.add(host)
        fits = [g for g in self._open if device not in g.devices]
        # another host's, or this host's where no other host it has seen could play the member
        chosen = next((g for g in fits if host not in g.hosts), None) or next(
            (g for g in fits if self._hosts <= g.hosts), None
        )
        if chosen is None:
            self.groups += 1
            chosen = _Group(
                f"{self._prefix}/g{self.groups:07d}",
                self._fresh_or(self._draw.next(), plays=self.group_size),
                self.group_size,
            )
            self._open.append(chosen)
        chosen.left -= 1
        chosen.devices.add(device)
        chosen.hosts.add(host)
        if not chosen.left:
            self._open.remove(chosen)
        return chosen.task, chosen.key

    def _fresh_or(self, task: Task, plays: int = 1) -> Task:
        """``task``, or with chance ``randomise`` where it is a train task, a drawn one in its place."""
        if self._drawing is None or task.split != "train" or self._fresh.random() >= self._randomise:
            return task
        drawn = self._drawing.drawn(task, self._fresh)
        if drawn.id != task.id:
            drawn = dataclasses.replace(drawn, evaluator=task.evaluator)  # what the run chose for its kind
            self._drawn_from.setdefault(drawn.id, collections.deque()).extend([task] * plays)
        return drawn

    def record(self, trajectory: Trajectory) -> None:
        """A trajectory came back: its outcome goes to the curriculum (``TaskDraw.record``), a drawn task's
        as the outcome of the pool's task it stood for."""
        drawn_id = trajectory.task.id
        stood_for = self._drawn_from.get(drawn_id)
        if stood_for:
            trajectory = dataclasses.replace(trajectory, task=stood_for.popleft())
            if not stood_for:
                del self._drawn_from[drawn_id]
        self._draw.record(trajectory)

    def curriculum_file(self) -> bytes:
        """What the curriculum has learnt (``TaskDraw.memory``), as the JSON file a checkpoint keeps."""
        return json.dumps(self._draw.memory(), sort_keys=True).encode()

    def resume_curriculum(self, data: bytes) -> None:
        """Take up what the curriculum of the run this one resumes had learnt (``curriculum_file``);
        ``DistrlError`` if ``data`` is not such a file."""
        try:
            memory = json.loads(data)
        except ValueError as exc:
            raise DistrlError(f"the curriculum's file is not JSON: {exc}") from exc
        if not isinstance(memory, dict):
            raise DistrlError("the curriculum's file is not a JSON object")
        self._draw.recall(memory)

    def failed_episode(self, task: Task, reason: str, group: str = "") -> None:
        """An episode of ``task`` (in ``group``) did not come back: count it, and hand its task out again
        (in the same group)."""
        self.failed[reason] += 1
        self._returned.append((task, group))
        self._requeued.set()
        self._requeued = anyio.Event()
