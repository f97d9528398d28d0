"""The chain of parts every run is made of, built once for ``train`` and ``collect`` alike.

``Fleet.build`` makes them in the order they depend on each other, each handed what it needs and no
part built later: the ``Stop``; the ``TaskSampler``; the ``Ledger`` (kept for ``collect``, streamed to
the trainer for ``train``; each counted arrival to the ``Recorder`` and the ``Curves``); the judge's
queue before it, where some task is the judge's; the ``Sessions`` (and sync mode's ``Rounds``); the
``HostSupervisor``. ``train`` adds its trainer, publisher and checkpoints around it; the ``Board`` comes
last, reading the parts (``Fleet.gauges``). ``Fleet.run`` runs them until the stop.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from distrl.config import Inventory, worker_settings_json
from distrl.fleet.board import Board, Curves, Gauges
from distrl.fleet.host import HostSupervisor
from distrl.fleet.ledger import Ledger, RunStats
from distrl.fleet.publisher import Publisher
from distrl.fleet.recorder import Recorder
from distrl.fleet.scoring import Judging, build_judge
from distrl.fleet.session import Rounds, Sessions
from distrl.fleet.stop import Stop
from distrl.fleet.training import Trainer
from distrl.records import Task, Trajectory
from distrl.tasks import Drawing, TaskSampler
from distrl.transport import HostOpener, open_host

__all__ = ["Fleet"]

Job = Callable[[], Coroutine[Any, Any, None]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fleet:
    """The parts of one run between its tasks and its hosts."""

    inventory: Inventory
    stop: Stop
    sampler: TaskSampler
    ledger: Ledger
    judging: Judging | None
    """The judge's queue before the ledger, where some task is the judge's."""
    sessions: Sessions
    rounds: Rounds | None
    """Sync mode's rounds (``run.mode = "sync"``)."""
    hosts: HostSupervisor
    recorder: Recorder | None
    """Where the episodes are written as they arrive, if anywhere."""

    @classmethod
    def build(
        cls,
        inventory: Inventory,
        tasks: Sequence[Task],
        *,
        rng: random.Random,
        limit: int | None,
        recorder: Recorder | None = None,
        curves: Curves | None = None,
        publisher: Publisher | None = None,
        trainer: MemoryObjectSendStream[Trajectory] | None = None,
        drawing: Drawing | None = None,
        opener: HostOpener = open_host,
    ) -> Fleet:
        """The chain for ``tasks`` drawn with ``rng``, until ``limit`` episodes have arrived (None: no
        limit). With ``trainer``, the arrivals go there (``train``), measured against ``publisher``'s
        version; without, the ledger keeps them (``collect``). With ``drawing``, ``[tasks] randomise`` of
        the train tasks' episodes play a task it draws instead (``run``). ``opener`` starts each host's
        worker (``open_host``: a subprocess or SSH)."""
        run = inventory.run
        stop = Stop()
        sampler = TaskSampler(
            tasks,
            rng,
            run_name=run.name,
            limit=limit,
            stop=stop,
            curriculum=inventory.tasks.curriculum,
            randomise=inventory.tasks.randomise if drawing else 0.0,
            drawing=drawing,
            group_size=inventory.tasks.group_size,
        )
        ledger = Ledger(
            stop=stop,
            limit=limit,
            group_size=inventory.tasks.group_size,
            version=(lambda: publisher.version) if publisher else (lambda: 0),
            trainer=trainer,
            keep=trainer is None,
            record=_record(recorder, curves, sampler),
        )
        judging = _judging(inventory, tasks, ledger, stop)
        sessions = Sessions(
            sampler=sampler,
            arrive=judging.arrive if judging else ledger.arrive,
            timeouts=inventory.timeouts,
            max_failures=run.max_restarts,
            greedy_share=inventory.policy.greedy_share,
        )
        rounds = Rounds(sessions, stop) if run.mode == "sync" else None
        hosts = HostSupervisor(
            timeouts=inventory.timeouts,
            max_restarts=run.max_restarts,
            settings_json=worker_settings_json(inventory),
            run_folder=inventory.output_dir.absolute(),
            stop=stop,
            play=rounds.play if rounds else sessions.play,
            publisher=publisher,
            on_step=ledger.count_step,
            opener=opener,
        )
        return cls(
            inventory=inventory,
            stop=stop,
            sampler=sampler,
            ledger=ledger,
            judging=judging,
            sessions=sessions,
            rounds=rounds,
            hosts=hosts,
            recorder=recorder,
        )

    def gauges(
        self,
        publisher: Publisher | None = None,
        trainer: Trainer | None = None,
        *,
        goal: int = 0,
        deadline_s: float = 0.0,
    ) -> Gauges:
        """What the board reads the run's numbers from: these parts, and ``train``'s own."""
        return Gauges(
            stop=self.stop,
            sampler=self.sampler,
            sessions=self.sessions,
            ledger=self.ledger,
            hosts=self.hosts,
            host_count=len(self.inventory.hosts),
            judging=self.judging,
            publisher=publisher,
            trainer=trainer,
            goal=goal,
            deadline_s=deadline_s,
        )

    async def run(self, board: Board, *jobs: Job) -> RunStats:
        """Every host supervised, the judge's queue, the recorder and ``jobs`` beside them and the board
        ticking, until the stop; then, however it stopped (cancelled too), the episodes still waiting for
        the judge go on unscored and the recorder writes what is queued; the final numbers."""
        stop, hosts = self.stop, self.hosts
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(board.run, stop)
                for job in (
                    *jobs,
                    *([self.judging.run] if self.judging else []),
                    *([self.recorder.run] if self.recorder else []),
                ):
                    tg.start_soon(job)

                async def every_host() -> None:
                    async with anyio.create_task_group() as inner:
                        for host in self.inventory.hosts:
                            inner.start_soon(hosts.supervise, host, name=f"host {host.name}")
                    stop.set("hosts")  # every host is done or given up

                tg.start_soon(every_host)
                await stop.wait()
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # one part failed (the trainer, say): its own error, not a group
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
                raise group.exceptions[0] from None
            raise
        finally:
            with anyio.CancelScope(shield=True):  # after every job, so that nothing offers any more
                if self.judging is not None:
                    await self.judging.release()
                if self.recorder is not None:
                    await self.recorder.drain()
            stats = board.close()
        return stats


def _record(
    recorder: Recorder | None, curves: Curves | None, sampler: TaskSampler
) -> Callable[[Trajectory], None]:
    """Where the ledger hands each counted trajectory: the sampler's curriculum, the recorder's queue, the
    curves' samples."""
    sinks: list[Callable[[Trajectory], None]] = [sampler.record]
    if recorder is not None:
        sinks.append(recorder.offer)
    if curves is not None:
        sinks.append(curves.sample)

    def record(trajectory: Trajectory) -> None:
        for sink in sinks:
            sink(trajectory)

    return record


def _judging(inventory: Inventory, tasks: Sequence[Task], ledger: Ledger, stop: Stop) -> Judging | None:
    """The judge's queue, where some task is the judge's; a judge that gives no verdict for
    ``judge.unreachable_s`` stops the run."""
    if not any(task.evaluator == "judge" for task in tasks):
        return None
    settings = inventory.judge
    return Judging(
        build_judge(inventory),
        ledger.arrive,
        capacity=max(settings.max_concurrency, inventory.device_count) * 2,
        concurrency=settings.max_concurrency,
        stop=stop,
        unreachable_s=settings.unreachable_s,
    )
