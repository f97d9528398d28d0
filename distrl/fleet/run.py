"""The composition root: ``train`` (``python -m distrl run``) and ``collect``, built from the fleet's parts.

Each part owns its state and gets only what it needs (its settings, the stop event, its peers):

- ``TaskSampler``: which task next, and the account of tasks handed out and failed;
- ``Sessions`` (or sync mode's ``Rounds``): one coroutine per device, episodes into the ``Ledger``;
- ``Judging`` (where some task is the judge's): each such episode's verdict, before the ledger;
- ``Ledger``: rewarding and counting each arrival once; kept (``collect``) or streamed to the
  ``Trainer`` on a bounded memory object stream;
- ``Trainer``: the learner's updates in a thread, the publish and checkpoint cadence;
- ``Publisher``: each version to every worker, newest first, without holding up the trainer;
- ``HostSupervisor``: each host's worker started, set up, caught up and restarted after a loss;
- ``Recorder``: the episodes written as they arrive, to ``<output>/episodes`` (``collect``: to ``out``);
- ``Board``: progress and TensorBoard.

The run stops at its episode budget, its deadline, when every host is done or given up, when the judge
gives no verdict for ``judge.unreachable_s``, or when cancelled; then every worker is shut down, the
episodes still waiting for the judge go on unscored and are written with the rest, and (``train``) the
last checkpoint is written.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from distrl.config import EXPERT, Inventory, PolicySettings, load_inventory, worker_settings_json
from distrl.episodes import EpisodeWriter
from distrl.errors import CheckpointError, ConfigError, DistrlError
from distrl.fleet.board import Board
from distrl.fleet.host import HostSupervisor
from distrl.fleet.ledger import Ledger, RunStats
from distrl.fleet.link import Link
from distrl.fleet.publisher import Publisher, snapshot
from distrl.fleet.recorder import Recorder
from distrl.fleet.scoring import Judging, build_judge, run_tasks
from distrl.fleet.session import Rounds, Sessions
from distrl.fleet.stop import Stop
from distrl.fleet.training import Trainer
from distrl.records import Task, Trajectory
from distrl.tasks import TaskSampler

if TYPE_CHECKING:
    from distrl.learner.checkpoint import Checkpoints

__all__ = ["CollectResult", "collect", "train"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class CollectResult:
    """What ``collect`` brought back."""

    trajectories: tuple[Trajectory, ...]
    stats: RunStats


async def collect(
    hosts: Inventory | str | Path,
    *,
    policy: PolicySettings | str | None = None,
    tasks: Sequence[Task] | str | None = None,
    split: str = "test",
    episodes: int,
    seed: int | None = None,
    out: EpisodeWriter | str | Path | None = None,
    on_progress: Callable[[RunStats], None] | None = None,
) -> CollectResult:
    """Run a policy on a fleet and bring back ``episodes`` trajectories, without training.

    ``hosts`` is an inventory or the path of a hosts file; its ``run.mode`` applies: ``async`` keeps
    every device busy, ``sync`` plays rounds (every device one episode, then a barrier), as ``train``
    would without its updates. ``policy`` is the policy to run (its settings, or a model folder; default
    the inventory's ``[policy]``): each worker loads it itself. ``tasks`` is a list of tasks, or a suite
    name (its ``split``), default the inventory's suite. ``out`` (a folder, or a writer into one) gets
    each episode as it arrives (``distrl.episodes`` format). Cancelling the call (a timeout, Ctrl-C in a
    notebook) stops the workers and returns nothing; what arrived is in ``out`` all the same, with the
    episodes that still waited for the judge, unscored.
    """
    inventory = _inventory(hosts)
    if isinstance(policy, str):
        policy = dataclasses.replace(inventory.policy, model=policy)
    if policy is not None:
        inventory = dataclasses.replace(inventory, policy=policy)
    if seed is not None:
        inventory = dataclasses.replace(inventory, run=dataclasses.replace(inventory.run, seed=seed))
    if episodes < 1:
        raise ValueError(f"episodes must be ≥ 1, got {episodes}")
    stop = Stop()
    pool = _tasks(inventory, tasks, split)
    sampler = TaskSampler(
        pool,
        random.Random(f"collect/{inventory.run.seed}"),
        run_name=inventory.run.name,
        limit=episodes,
        stop=stop,
    )
    # collect keeps every trajectory anyway: its recorder's queue can hold every one that may arrive
    recorder = _collect_recorder(out, episodes + 2 * inventory.device_count)
    ledger = Ledger(
        stop=stop, limit=episodes, version=lambda: 0, keep=True, record=recorder.offer if recorder else None
    )
    judging = _judging(inventory, pool, ledger, stop)
    sessions = Sessions(
        sampler=sampler,
        arrive=judging.arrive if judging else ledger.arrive,
        timeouts=inventory.timeouts,
        max_failures=inventory.run.max_restarts,
    )
    rounds = Rounds(sessions, stop) if inventory.run.mode == "sync" else None
    supervisor = _supervisor(inventory, stop, rounds.play if rounds else sessions.play, ledger, None)
    board = Board(
        lambda: _stats(
            inventory, stop, sampler, sessions, ledger, supervisor, judging=judging, goal=episodes
        ),
        folder=None,
        devices=inventory.device_count,
        on_progress=on_progress,
    )
    jobs = [
        *([rounds.run] if rounds else []),
        *([judging.run] if judging else []),
        *([recorder.run] if recorder else []),
    ]
    stats = await _run(inventory, stop, supervisor, board, *jobs, judging=judging, recorder=recorder)
    if recorder is not None and (recorder.dropped or recorder.failed):
        log.warning(
            "collect: %d episode(s) not written to %s (%d could not be written)",
            recorder.dropped + recorder.failed,
            recorder.writer.folder,
            recorder.failed,
        )
    if stats.completed < episodes:
        log.warning(
            "collect: %d of %d episodes came back (failed: %s): %s",
            stats.completed,
            episodes,
            dict(stats.failed) or "none",
            stats.achieved_nothing or "the run stopped early",
        )
    assert ledger.kept is not None  # keep=True
    return CollectResult(trajectories=tuple(sorted(ledger.kept, key=lambda t: t.id)), stats=stats)


async def train(
    hosts: Inventory | str | Path,
    *,
    resume: bool = False,
    new: bool = False,
    on_progress: Callable[[RunStats], None] | None = None,
) -> RunStats:
    """Train as the inventory says (``python -m distrl run``): until ``run.max_trajectories``
    trajectories or ``run.duration_s`` seconds (whichever first; both 0 runs until cancelled), then a
    final checkpoint. With ``resume``, start from the latest checkpoint in ``<output>/checkpoints``.

    A run folder that holds an earlier run's checkpoints is never mixed with a new run: without
    ``resume`` it is refused (``ConfigError``), unless ``new``, which starts the run beside it under
    ``<name>.1`` (or the first free number).
    """
    from distrl.learner.checkpoint import Checkpoints
    from distrl.learner.core import Learner
    from distrl.policy import Policy

    inventory = _inventory(hosts)
    if inventory.policy.model == EXPERT:
        raise ConfigError.at(
            "policy.model",
            'the expert is scripted and cannot be trained; give a model ("tiny" or a folder), or use'
            " collect to record the expert's episodes",
            inventory.source or None,
        )
    run = inventory.run
    pool = _tasks(inventory, None, None)  # refuses tasks nothing can score, before anything loads
    if any(task.evaluator == "judge" for task in pool):
        inventory.judge.api_key(inventory.source or None)
    if resume and new:
        raise ValueError("resume and new exclude each other")
    inventory = _fresh_folder(inventory, resume=resume, new=new)
    run = inventory.run
    output = inventory.output_dir
    output.mkdir(parents=True, exist_ok=True)
    settings = inventory.learner
    policy = await anyio.to_thread.run_sync(
        lambda: Policy.load(
            inventory.policy, device=(settings.devices or (settings.device,))[0], seed=run.seed
        )
    )
    # in a thread: with several ranks it waits for the others to load their policy
    learner = await anyio.to_thread.run_sync(
        lambda: Learner(policy, settings, max_policy_lag=run.max_policy_lag, seed=run.seed)
    )
    checkpoints = Checkpoints(output / "checkpoints", keep=run.keep_checkpoints)
    if resume:
        latest = checkpoints.latest()
        try:
            if latest is None:
                raise DistrlError(f"nothing to resume: no checkpoint in {output / 'checkpoints'}")  # noqa: TRY301
            await anyio.to_thread.run_sync(_verify, checkpoints, latest)
            await anyio.to_thread.run_sync(learner.load, latest)
        except BaseException:
            learner.close()  # its other ranks
            raise
        log.info("resumed from %s (update %d)", latest, learner.updates)
    limit = run.max_trajectories or None
    stop = Stop()
    # the sampler's own stream (the learner's is saved from its thread); a resumed run draws anew
    sampler = TaskSampler(
        pool,
        random.Random(f"tasks/{run.seed}/{learner.updates}"),
        run_name=run.name,
        limit=limit,
        stop=stop,
    )
    weights = await anyio.to_thread.run_sync(
        lambda: snapshot(learner.policy.adapter_state(), run.publish_dtype)
    )
    publisher = Publisher(learner.version, weights, push_timeout_s=inventory.timeouts.weight_push_s)
    # room for one trajectory per device and more: a session never waits for the trainer's thread
    to_trainer, arrivals = anyio.create_memory_object_stream[Trajectory](inventory.device_count + 16)
    recorder = _recorder(inventory)

    def record(trajectory: Trajectory) -> None:
        if recorder is not None:
            recorder.offer(trajectory)
        board.sample(trajectory)

    ledger = Ledger(
        stop=stop, limit=limit, version=lambda: publisher.version, trainer=to_trainer, record=record
    )
    judging = _judging(inventory, pool, ledger, stop)
    sessions = Sessions(
        sampler=sampler,
        arrive=judging.arrive if judging else ledger.arrive,
        timeouts=inventory.timeouts,
        max_failures=run.max_restarts,
    )
    rounds = Rounds(sessions, stop) if run.mode == "sync" else None
    supervisor = _supervisor(inventory, stop, rounds.play if rounds else sessions.play, ledger, publisher)
    before = dict(learner.progress)  # where the resumed run's counters, and TensorBoard's axes, go on from
    board = Board(
        lambda: _stats(
            inventory,
            stop,
            sampler,
            sessions,
            ledger,
            supervisor,
            publisher,
            trainer,
            judging=judging,
            goal=limit or 0,
        ),
        folder=output / "tensorboard",
        devices=inventory.device_count,
        push_s=lambda: publisher.push_s[-1] if publisher.push_s else None,
        on_progress=on_progress,
        env_steps_before=before.get("env_steps", 0),
        episodes_before=before.get("episodes", 0),
    )
    trainer = Trainer(
        learner,
        arrivals,
        settings=inventory.learner,
        run=run,
        publisher=publisher,
        checkpoints=checkpoints,
        on_update=board.update,
        progress=lambda: {
            "episodes": before.get("episodes", 0) + ledger.completed,
            "env_steps": before.get("env_steps", 0) + ledger.steps_streamed,
        },
    )

    async def rounds_then_training() -> None:
        async def after_round() -> None:
            await trainer.train_round()
            await publisher.delivered(publisher.version)  # sync mode waits for every worker

        assert rounds is not None
        await rounds.run(after_round)

    async def deadline() -> None:
        if run.duration_s > 0:
            with anyio.move_on_after(run.duration_s):
                await stop.wait()
            stop.set("deadline")

    try:
        jobs = [
            rounds_then_training if rounds else trainer.run,
            deadline,
            *([judging.run] if judging else []),
            *([recorder.run] if recorder else []),
        ]
        return await _run(inventory, stop, supervisor, board, *jobs, judging=judging, recorder=recorder)
    finally:
        await trainer.finish()


def _fresh_folder(inventory: Inventory, *, resume: bool, new: bool) -> Inventory:
    """``inventory``, or with ``new`` where its run folder holds an earlier run's checkpoints, the same
    under the first free name ``<name>.1``, ``<name>.2``...; without ``resume`` or ``new`` such a folder
    is refused (``ConfigError``). Another run's checkpoints are never touched."""
    from distrl.learner.checkpoint import Checkpoints

    output = inventory.output_dir
    latest = Checkpoints(output / "checkpoints").latest() if (output / "checkpoints").is_dir() else None
    if resume or latest is None:
        return inventory
    if not new:
        raise ConfigError.at(
            "run.name",
            f"{output} holds an earlier run (its latest checkpoint: {latest.name}): add --resume to go on"
            " with it, or --new to start a new run beside it (as <name>.1, .2, ...), or give this run"
            " another run.name",
            inventory.source or None,
        )
    number = 1
    while output.with_name(f"{output.name}.{number}").exists():
        number += 1
    name = f"{inventory.run.name}.{number}"
    log.warning("%s holds an earlier run: this one goes to %s", output, output.with_name(name))
    return dataclasses.replace(inventory, run=dataclasses.replace(inventory.run, name=name))


def _verify(checkpoints: Checkpoints, folder: Path) -> None:
    """Check ``folder`` against its manifest before anything is loaded from it (a damaged checkpoint
    would load silently, train on garbage and be written back as new)."""
    try:
        checkpoints.verify(folder)
    except CheckpointError as exc:
        earlier = [path for path in checkpoints.list() if path != folder]
        hint = (
            f"; the one before it is {earlier[-1]}: move {folder.name} aside to resume from it"
            if earlier
            else ""
        )
        raise CheckpointError(
            f"cannot resume from {folder}: {exc.message}{hint}", path=exc.path, reason=exc.reason
        ) from exc


def _supervisor(
    inventory: Inventory,
    stop: Stop,
    play: Callable[[Link], Awaitable[None]],
    ledger: Ledger,
    publisher: Publisher | None,
) -> HostSupervisor:
    return HostSupervisor(
        timeouts=inventory.timeouts,
        max_restarts=inventory.run.max_restarts,
        settings_json=worker_settings_json(inventory),
        stop=stop,
        play=play,
        publisher=publisher,
        on_step=ledger.count_step,
    )


async def _run(
    inventory: Inventory,
    stop: Stop,
    hosts: HostSupervisor,
    board: Board,
    *jobs: Callable[[], Coroutine[Any, Any, None]],
    judging: Judging | None = None,
    recorder: Recorder | None = None,
) -> RunStats:
    """Every host supervised, ``jobs`` beside them and the board ticking, until ``stop``; then, however
    it stopped (cancelled too), the episodes still waiting for ``judging`` go on unscored and
    ``recorder`` writes what is queued; the final numbers."""
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.run, stop)
            for job in jobs:
                tg.start_soon(job)

            async def every_host() -> None:
                async with anyio.create_task_group() as inner:
                    for host in inventory.hosts:
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
            if judging is not None:
                await judging.release()
            if recorder is not None:
                await recorder.drain()
        stats = board.close()
    return stats


def _stats(
    inventory: Inventory,
    stop: Stop,
    sampler: TaskSampler,
    sessions: Sessions,
    ledger: Ledger,
    hosts: HostSupervisor,
    publisher: Publisher | None = None,
    trainer: Trainer | None = None,
    *,
    judging: Judging | None = None,
    goal: int = 0,
) -> RunStats:
    """The run's numbers now, each read from the part that owns it (``goal``: the episode budget)."""
    lag_p50, host_lag_p50 = ledger.lag_p50()
    return RunStats(
        handed_out=sampler.handed_out,
        completed=ledger.completed,
        failed=sampler.failed.copy(),
        requeued=sampler.requeued,
        successes=ledger.successes,
        steps=ledger.steps,
        steps_streamed=ledger.steps_streamed,
        device_errors=ledger.device_errors,
        cut_short=ledger.cut_short,
        unscored=ledger.unscored,
        judging=judging.waiting if judging else 0,
        judge=judging.judge.stats.scalars() if judging else {},
        judge_unreachable=judging.unreachable if judging else "",
        actor_loss=trainer.last.actor_loss
        if trainer and trainer.last and trainer.last.trained_steps
        else None,
        entropy=trainer.last.entropy if trainer and trainer.last else None,
        goal_episodes=goal,
        deadline_s=inventory.run.duration_s if trainer else 0.0,
        restarts=hosts.restarts,
        stale=trainer.stale if trainer else 0,
        updates=trainer.updates if trainer else 0,
        weight_bytes=publisher.bytes if publisher else 0,
        weight_pushes=publisher.pushes if publisher else 0,
        started=ledger.started,
        policy_version=publisher.version if publisher else 0,
        lag_p50=lag_p50,
        host_lag_p50=host_lag_p50,
        hosts_up=len(hosts.up),
        hosts=len(inventory.hosts),
        given_up=dict(hosts.given_up),
        retired=sessions.retired,
        ended=stop.reason,
        recent=ledger.recent.copy(),
    )


def _inventory(hosts: Inventory | str | Path) -> Inventory:
    return hosts if isinstance(hosts, Inventory) else load_inventory(hosts)


def _tasks(inventory: Inventory, tasks: Sequence[Task] | str | None, split: str | None) -> list[Task]:
    """The tasks to play, each with its evaluator: the inventory's (its task files or sim suite, of
    ``split``), a sim suite's, or the caller's own."""
    if tasks is None or isinstance(tasks, str):
        return run_tasks(inventory, split, tasks)
    return run_tasks(inventory, given=tasks)


def _recorder(inventory: Inventory) -> Recorder | None:
    """The run's episodes to ``<output>/episodes`` (``run.record_episodes`` of them), if any."""
    run = inventory.run
    if run.record_episodes <= 0:
        return None
    writer = EpisodeWriter(
        inventory.output_dir / "episodes",
        share=run.record_episodes,
        budget_bytes=int(run.episodes_max_gb * 1e9),
    )
    return Recorder(writer)


def _collect_recorder(out: EpisodeWriter | str | Path | None, capacity: int) -> Recorder | None:
    """``collect``'s episodes to ``out`` as they arrive, if anywhere."""
    if out is None:
        return None
    return Recorder(out if isinstance(out, EpisodeWriter) else EpisodeWriter(out), capacity=capacity)


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
