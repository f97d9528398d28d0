"""A run's tasks with their evaluators, and the judge between the sessions and the ledger.

``run_tasks`` reads the inventory's tasks (its task files, else the sim's suite) and gives each the
evaluator that will score it, or refuses the run (``distrl.tasks.evaluators``). The ``sim`` and ``adb``
evaluators score on the worker; ``Judging`` scores the ``judge`` tasks here, in the learner process (the
key lives in one place), off the sessions' path: a session hands its trajectory over and goes on.

A trajectory the judge cannot score yet (it is down, busy, or answers garbage) waits, unscored, and is
asked again with backoff; the queue is bounded, so a long outage holds the sessions back instead of
filling memory. Only scored trajectories reach the ledger and the trainer while the run goes on. A judge
that gives no verdict for ``[judge] unreachable_s`` stops the run; when the run stops, for that or any
reason, every trajectory still waiting goes on to the ledger unscored (``release``): nothing played is
lost.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, cast

import anyio

from distrl.config import EXPERT, SIM_KIND, Inventory
from distrl.errors import ConfigError, JudgeError, TaskFileError
from distrl.fleet.stop import Stop
from distrl.records import Task, Trajectory
from distrl.tasks import Drawing, TaskFiles, TaskSource, registry, resolve_evaluators
from distrl.tasks.files import read_task_file

if TYPE_CHECKING:
    from distrl.tasks.judge import Judge, Verdict

__all__ = ["Judging", "build_judge", "run_tasks", "sim_phones_only", "task_variation"]

log = logging.getLogger(__name__)

FIRST_RETRY_S = 5.0
"""Wait before asking the judge again about an episode it gave no verdict for (doubling)."""
MAX_RETRY_S = 300.0


def sim_phones_only(inventory: Inventory) -> bool:
    """Whether every device of the fleet is an in-process simulated phone (of the ``sim`` kind: no
    attached device, no emulator to launch)."""
    return all(set(host.devices.kinds) <= {SIM_KIND} for host in inventory.hosts)


def run_tasks(
    inventory: Inventory,
    split: str | None = None,
    suite: str | None = None,
    *,
    given: Sequence[Task] | None = None,
) -> list[Task]:
    """The tasks of ``split`` (default ``[tasks] split``): from the task files, else from the sim's suite
    (``suite``, default ``run.suite``), or the caller's own (``given``); each with its evaluator.
    ``ConfigError`` or ``TaskFileError`` when there are none, or when some cannot be scored."""
    if given is not None:
        return _resolved(inventory, given)
    return _resolved(inventory, _pool(inventory, split, suite))


def _pool(inventory: Inventory, split: str | None = None, suite: str | None = None) -> list[Task]:
    """``run_tasks``' tasks before their evaluators are resolved."""
    settings = inventory.tasks
    split = split or settings.split
    source: TaskSource
    if settings.files and suite is None:
        source = TaskFiles(settings.files, max_steps=settings.max_steps)
        if inventory.policy.model == EXPERT:
            raise _expert_refused(settings.files[0], settings.max_steps)
    else:  # the sim's suites are registered task sources (``distrl.tasks.registry``)
        source = registry.task_source(suite or inventory.run.suite)
    pool = source.tasks(split)
    if not pool:
        where = "the task files" if isinstance(source, TaskFiles) else f"the sim's {source.name} suite"
        splits = sorted({task.split for task in source.tasks()})
        raise ConfigError.at(
            "tasks.split",
            f"no task of split {split!r} in {where} (their splits: {', '.join(splits)})",
            inventory.source or None,
        )
    return pool


def task_variation(inventory: Inventory) -> Drawing | None:
    """What draws the fresh tasks of ``[tasks] randomise`` (None for a share of 0): the sim's suite.
    ``ConfigError`` where the run's tasks come from task files, or from a source that cannot draw."""
    if inventory.tasks.randomise == 0:
        return None
    if inventory.tasks.files:
        raise ConfigError.at(
            "tasks.randomise",
            "task files cannot draw fresh tasks (only the sim's suites can): set it to 0, or use a suite",
            inventory.source or None,
        )
    source = registry.task_source(inventory.run.suite)
    if not callable(getattr(source, "drawn", None)):
        raise ConfigError.at(
            "tasks.randomise",
            f"the task source {inventory.run.suite!r} cannot draw fresh tasks: set it to 0",
            inventory.source or None,
        )
    return cast(Drawing, source)


def _expert_refused(path: str, max_steps: int) -> TaskFileError:
    """The expert cannot play a task file's tasks: the error naming the file's first task."""
    line = next(iter(read_task_file(path, max_steps=max_steps)))[0]
    return TaskFileError.at(
        path,
        line,
        "the expert policy (policy.model or --policy expert) plays only the sim's own suites, not a task"
        " file's tasks: give a model, or no task files",
    )


def _resolved(inventory: Inventory, tasks: Sequence[Task]) -> list[Task]:
    return resolve_evaluators(
        tasks,
        default=inventory.tasks.evaluator,
        sim_phones_only=sim_phones_only(inventory),
        judge=inventory.judge.configured,
        source=inventory.source or None,
    )


def check_algorithm(inventory: Inventory, tasks: Sequence[Task] | None = None) -> None:
    """The inventory's algorithm and its table checked, built once, against its task groups and the
    longest step limit of ``tasks`` (the run's when not given, whatever scores them): ``ConfigError`` naming
    the key (``distrl.learner.algorithms.check``)."""
    from distrl.learner.algorithms import check  # torch: only where it is asked for

    played = _pool(inventory) if tasks is None else tasks  # step limits: no evaluator needed yet
    check(
        inventory.learner,
        source=inventory.source,
        group_size=inventory.tasks.group_size,
        max_steps=max((task.max_steps for task in played), default=inventory.tasks.max_steps),
    )


def build_judge(inventory: Inventory, *, cached: bool = True) -> Judge:
    """The inventory's judge; ``ConfigError`` when its key's variable is not set. ``cached``: its verdicts
    kept in ``[judge] cache`` and read back (not for ``judge-eval``, which measures the judge itself)."""
    from distrl.tasks.judge import Judge

    settings = inventory.judge
    return Judge(
        base_url=settings.base_url,
        model=settings.model,
        api_key=settings.api_key(inventory.source or None),
        max_concurrency=settings.max_concurrency,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        max_backoff_s=settings.max_backoff_s,
        max_response_bytes=settings.max_response_bytes,
        screens=settings.screens,
        cache_dir=settings.cache if cached else None,
    )


class Judging:
    """The judge's queue: trajectories of ``judge`` tasks wait here for their verdict, then go on to
    ``arrive`` (the ledger's). Everything else goes straight on. With ``stop``, a judge that gives no
    verdict for ``unreachable_s`` seconds from its first failed call (0: never) stops the run."""

    def __init__(
        self,
        judge: Judge,
        arrive: Callable[[Trajectory], Awaitable[None]],
        *,
        capacity: int,
        concurrency: int,
        first_retry_s: float = FIRST_RETRY_S,
        stop: Stop | None = None,
        unreachable_s: float = 0.0,
    ) -> None:
        self.judge = judge
        self._arrive = arrive
        self._concurrency = concurrency
        self._first_retry_s = first_retry_s
        self._stop = stop
        self._unreachable_s = unreachable_s
        self._send, self._receive = anyio.create_memory_object_stream[Trajectory](capacity)
        self._held: dict[str, Trajectory] = {}
        """Trajectories handed to the judge and not yet passed on, by id (queued, being asked about, or
        still waiting for room in the queue)."""
        self._failing = 0
        """Askers whose last try gave no verdict."""
        self._failed = anyio.Event()
        """Set by a call that gave no verdict; replaced by a new one at the next verdict."""
        self._answered = anyio.Event()
        """Set by the first verdict after a failed call; replaced by a new one at the next failure."""
        self._last_error = ""
        self.unreachable = ""
        """Why the judge stopped the run (empty: it did not): how long it gave no verdict, its last
        error."""

    @property
    def waiting(self) -> int:
        """Trajectories handed to the judge and not yet scored (queued or being asked about)."""
        return len(self._held)

    @staticmethod
    def needs_judge(trajectory: Trajectory) -> bool:
        """A ``judge`` task's episode that ended as the policy or the step limit ended it (an episode cut
        short by a failure says nothing about the policy, and is not trained on)."""
        return (
            trajectory.task.evaluator == "judge" and trajectory.success is None and not trajectory.cut_short
        )

    async def arrive(self, trajectory: Trajectory) -> None:
        """Take an episode from a session: queue it for the judge (waiting while the queue is full), or
        pass it on."""
        if not self.needs_judge(trajectory):
            await self._arrive(trajectory)
            return
        self._held[trajectory.id] = trajectory  # from here on it is the judge's to keep, or release
        await self._send.send(trajectory)

    async def run(self) -> None:
        """Ask the judge about each queued episode, ``concurrency`` at a time, until cancelled. A judge
        that refuses (a wrong key, model or URL) raises its ``JudgeError``: no retry would mend it."""
        try:
            async with anyio.create_task_group() as tg:
                for _ in range(self._concurrency):
                    tg.start_soon(self._ask_each)
                if self._stop is not None and self._unreachable_s > 0:
                    tg.start_soon(self._watch, self._stop)
        except BaseExceptionGroup as group:
            refused = group.subgroup(JudgeError)
            if refused is None:
                raise
            raise refused.exceptions[0] from None
        finally:
            if self.waiting:
                log.warning(
                    "%d episode(s) were still waiting for the judge when the run ended: kept, unscored",
                    self.waiting,
                )
            await self.judge.aclose()

    async def release(self) -> None:
        """Pass every trajectory still waiting on to ``arrive``, unscored (``success`` None, the verdict
        saying why). For the run's stop, once ``run`` has ended: nothing played is lost."""
        why = f"no verdict: {self.unreachable or 'the run stopped before the judge answered'}"
        held, self._held = list(self._held.values()), {}
        for trajectory in held:
            await self._arrive(dataclasses.replace(trajectory, verdict=why))

    async def _ask_each(self) -> None:
        while True:
            trajectory = await self._receive.receive()
            verdict = await self._verdict(trajectory)
            self._held.pop(trajectory.id, None)
            scored = dataclasses.replace(trajectory, success=verdict.success, verdict=verdict.reason)
            await self._arrive(scored)

    async def _watch(self, stop: Stop) -> None:
        """Stop the run when the judge gives no verdict for ``unreachable_s`` after a failed call."""
        while True:
            await self._failed.wait()
            answered = self._answered
            with anyio.move_on_after(self._unreachable_s) as waited:
                await answered.wait()
            if waited.cancelled_caught:
                break
        self.unreachable = (
            f"the judge gave no verdict for {self._unreachable_s:g} s (judge.unreachable_s); its last"
            f" error: {self._last_error}"
        )
        log.warning("%s: the run stops, keeping the episodes that wait for it, unscored", self.unreachable)
        stop.set("judge")

    async def _verdict(self, trajectory: Trajectory) -> Verdict:
        delay = self._first_retry_s
        failed = False
        try:
            while True:
                try:
                    verdict = await self.judge.verdict(trajectory)
                except JudgeError as exc:
                    if exc.reason == "refused":  # a wrong key, model or URL: no retry will mend it
                        raise
                    self._last_error = str(exc)
                    if not self._failed.is_set():
                        self._answered = anyio.Event()
                        self._failed.set()
                    if not failed:
                        failed = True
                        self._failing += 1
                        if self._failing == 1:
                            log.warning(
                                "judge: no verdict (%s); episodes wait, unscored, and are asked again", exc
                            )
                    await anyio.sleep(delay)
                    delay = min(delay * 2, MAX_RETRY_S)
                else:
                    if self._failed.is_set():
                        self._failed = anyio.Event()
                        self._answered.set()
                    if failed and self._failing == 1:
                        log.warning("judge: answering again")
                    return verdict
        finally:
            if failed:
                self._failing -= 1
