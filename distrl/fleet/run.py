"""The composition root: ``train`` (``python -m distrl run``) and ``collect``, built from the fleet's parts.

Each part owns its state and gets only what it needs (its settings, the stop event, its peers). Both
entry points build the same chain once (``wiring.Fleet.build``): the ``TaskSampler`` (which task next,
and the account of tasks handed out and failed); the ``Sessions`` (or sync mode's ``Rounds``), one
coroutine per device; the judge's queue (``Judging``, where some task is the judge's); the ``Ledger``,
which rewards and counts each arrival once; the ``HostSupervisor``, each host's worker started, set up,
caught up and restarted after a loss; the ``Recorder``, the episodes written as they arrive (``train``:
to ``<output>/episodes``; ``collect``: to ``out``). Then:

- ``collect``: the ledger keeps what arrives; a ``Board`` for progress;
- ``train``: the ``Publisher`` (each version to every worker, newest first, without holding up the
  trainer) and the TensorBoard ``Curves`` before the chain; the ``Trainer`` (the learner's updates in a
  thread, the publish and checkpoint cadence), fed by the ledger on a bounded memory object stream,
  after it; the ``Board`` last, reading every part.

The run stops at its episode budget, its deadline, when every host is done or given up, when the judge
gives no verdict for ``judge.unreachable_s``, or when cancelled; then every worker is shut down, the
episodes still waiting for the judge go on unscored and are written with the rest, and (``train``) the
last checkpoint is written.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from distrl.config import (
    EXPERT,
    Inventory,
    PolicySettings,
    as_whole,
    load_inventory,
    parse_worker_settings,
    worker_settings_json,
)
from distrl.episodes import EpisodeWriter
from distrl.errors import CheckpointError, ConfigError, DistrlError
from distrl.fleet.board import Board, Curves
from distrl.fleet.ledger import RunStats
from distrl.fleet.publisher import Publisher, snapshot
from distrl.fleet.recorder import Recorder
from distrl.fleet.scoring import check_algorithm, run_tasks, task_variation
from distrl.fleet.session import Rounds
from distrl.fleet.training import Trainer
from distrl.fleet.wiring import Fleet
from distrl.records import Task, Trajectory
from distrl.transport import HostOpener, open_host

if TYPE_CHECKING:
    from distrl.learner.checkpoint import Checkpoints
    from distrl.learner.core import Learner

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
    group_size: int | None = None,
    opener: HostOpener = open_host,
) -> CollectResult:
    """Run a policy on a fleet and bring back ``episodes`` trajectories, without training.

    ``hosts`` is an inventory or the path of a hosts file; its ``run.mode`` applies: ``async`` keeps
    every device busy, ``sync`` plays rounds (every device one episode, then a barrier), as ``train``
    would without its updates. ``policy`` is the policy to run (its settings, or a model folder; default
    the inventory's ``[policy]``): each worker loads it itself. ``tasks`` is a list of tasks, or a suite
    name (its ``split``), default the inventory's suite. ``out`` (a folder, or a writer into one) gets
    each episode as it arrives (``distrl.episodes`` format). Cancelling the call (a timeout, Ctrl-C in a
    notebook) stops the workers and returns nothing; what arrived is in ``out`` all the same, with the
    episodes that still waited for the judge, unscored. ``group_size`` K (default the inventory's
    ``[tasks] group_size``) plays each task on K devices at once, for pass@k data: the K trajectories
    share their ``group``; ``episodes`` is a multiple of it (``ValueError`` otherwise, as for ``episodes``
    below 1 or a ``group_size`` below 1 or above the fleet's devices); settings a worker would refuse (a
    negative ``seed``, a ``policy`` out of its bounds) are a ``ConfigError`` and arguments of the wrong
    kind a ``TypeError`` (a ``ValueError`` for ``split`` None or ``policy`` ""), before any host starts.
    ``opener`` starts each host's worker:
    ``distrl.transport.open_host`` (a subprocess or SSH, as the inventory says), or one in its place:
    ``lambda entry, timeouts: MemoryHost(entry, timeouts, agent).open()`` runs ``agent`` (such as the worker
    agent, ``distrl.worker.serve``) in this process, over memory streams.
    """
    if tasks is not None and not isinstance(tasks, str):
        tasks = list(tasks)  # a generator, read once by the check below, would leave nothing to play
    _check_collect_arguments(policy, tasks, split, episodes, seed, group_size)
    inventory = _inventory(hosts)
    if isinstance(policy, str):
        policy = dataclasses.replace(inventory.policy, model=policy)
    if policy is not None:
        inventory = dataclasses.replace(inventory, policy=policy)
    if seed is not None:
        inventory = dataclasses.replace(inventory, run=dataclasses.replace(inventory.run, seed=seed))
    # what every worker checks of its settings at setup, checked here first: refused there, each worker
    # was asked again until it gave up, and collect came back empty
    parse_worker_settings(worker_settings_json(inventory))
    if episodes < 1:
        raise ValueError(f"episodes must be ≥ 1, got {episodes}")
    if group_size is not None:
        if not 1 <= group_size <= inventory.device_count:
            raise ValueError(
                f"group_size must be between 1 and the fleet's {inventory.device_count} device(s), got"
                f" {group_size}"
            )
        inventory = dataclasses.replace(
            inventory, tasks=dataclasses.replace(inventory.tasks, group_size=group_size)
        )
    if episodes % inventory.tasks.group_size:
        raise ValueError(
            f"episodes {episodes} is not a multiple of group_size {inventory.tasks.group_size}: each task is"
            " played by a whole group"
        )
    pool = _tasks(inventory, tasks, split)
    # collect keeps every trajectory anyway: its recorder's queue can hold every one that may arrive
    recorder = _collect_recorder(out, episodes + 2 * inventory.device_count)
    fleet = Fleet.build(
        inventory,
        pool,
        rng=random.Random(f"collect/{inventory.run.seed}"),
        limit=episodes,
        recorder=recorder,
        opener=opener,
    )
    board = Board(fleet.gauges(goal=episodes), on_progress=on_progress)
    stats = await fleet.run(board, *([fleet.rounds.run] if fleet.rounds else []))
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
    assert fleet.ledger.kept is not None  # no trainer: the ledger keeps every arrival
    return CollectResult(trajectories=tuple(sorted(fleet.ledger.kept, key=lambda t: t.id)), stats=stats)


async def train(
    hosts: Inventory | str | Path,
    *,
    resume: bool = False,
    new: bool = False,
    on_progress: Callable[[RunStats], None] | None = None,
    opener: HostOpener = open_host,
) -> RunStats:
    """Train as the inventory says (``python -m distrl run``): until ``run.max_trajectories``
    trajectories or ``run.duration_s`` seconds (whichever first; both 0 runs until cancelled), then a
    final checkpoint. With ``resume``, start from the latest checkpoint in ``<output>/checkpoints``.

    A run folder that holds an earlier run's checkpoints is never mixed with a new run: without
    ``resume`` it is refused (``ConfigError``), unless ``new``, which starts the run beside it under
    ``<name>.1`` (or the first free number). ``opener`` starts each host's worker, as in ``collect``.
    """
    from distrl.learner.checkpoint import Checkpoints

    inventory = _inventory(hosts)
    if inventory.policy.model == EXPERT:
        raise ConfigError.at(
            "policy.model",
            'the expert is scripted and cannot be trained; give a model ("tiny" or a folder), or use'
            " collect to record the expert's episodes",
            inventory.source or None,
        )
    pool = _tasks(inventory, None, None)  # refuses tasks nothing can score, before anything loads
    # the algorithm and its table, as `run` checks them: a module:Class beside the inventory is found
    check_algorithm(inventory, pool)
    drawing = task_variation(inventory)
    if any(task.evaluator == "judge" for task in pool):
        inventory.judge.api_key(inventory.source or None)
    if resume and new:
        raise ValueError("resume and new exclude each other")
    inventory = _fresh_folder(inventory, resume=resume, new=new)
    run = inventory.run
    output = inventory.output_dir
    output.mkdir(parents=True, exist_ok=True)
    checkpoints = Checkpoints(output / "checkpoints", keep=run.keep_checkpoints)
    learner, resumed = await _learner(inventory, checkpoints, resume=resume)
    limit = run.max_trajectories or None
    weights = await anyio.to_thread.run_sync(
        lambda: snapshot(learner.policy.adapter.state(), run.publish_dtype)
    )
    publisher = Publisher(learner.version, weights, push_timeout_s=inventory.timeouts.weight_push_s)
    before = dict(learner.progress)  # where the resumed run's counters, and TensorBoard's axes, go on from
    curves = Curves(
        output / "tensorboard",
        devices=inventory.device_count,
        push_s=lambda: publisher.push_s[-1] if publisher.push_s else None,
        env_steps_before=before.get("env_steps", 0),
        episodes_before=before.get("episodes", 0),
    )
    # room for one trajectory per device and more: a session never waits for the trainer's thread
    to_trainer, arrivals = anyio.create_memory_object_stream[Trajectory](inventory.device_count + 16)
    fleet = Fleet.build(
        inventory,
        pool,
        # the sampler's own stream (the learner's is saved from its thread); a resumed run draws anew
        rng=random.Random(f"tasks/{run.seed}/{learner.updates}"),
        limit=limit,
        recorder=_recorder(inventory),
        curves=curves,
        publisher=publisher,
        trainer=to_trainer,
        drawing=drawing,
        opener=opener,
    )
    ledger, stop = fleet.ledger, fleet.stop
    if resumed is not None and (resumed / CURRICULUM_FILE).is_file():
        fleet.sampler.resume_curriculum((resumed / CURRICULUM_FILE).read_bytes())
    trainer = Trainer(
        learner,
        arrivals,
        settings=inventory.learner,
        run=run,
        publisher=publisher,
        checkpoints=checkpoints,
        on_update=curves.update,
        progress=lambda: {
            "episodes": before.get("episodes", 0) + ledger.completed,
            "env_steps": before.get("env_steps", 0) + ledger.steps_streamed,
        },
        beside=lambda: {CURRICULUM_FILE: fleet.sampler.curriculum_file()},
    )
    gauges = fleet.gauges(publisher, trainer, goal=limit or 0, deadline_s=run.duration_s)
    board = Board(gauges, curves=curves, on_progress=on_progress)

    async def rounds_then_training(rounds: Rounds) -> None:
        async def after_round() -> None:
            await trainer.train_round()
            await publisher.delivered(publisher.version)  # sync mode waits for every worker

        await rounds.run(after_round)

    async def deadline() -> None:
        if run.duration_s > 0:
            with anyio.move_on_after(run.duration_s):
                await stop.wait()
            stop.set("deadline")

    training = functools.partial(rounds_then_training, fleet.rounds) if fleet.rounds else trainer.run
    try:
        return await fleet.run(board, training, deadline)
    finally:
        await trainer.finish()


CURRICULUM_FILE = "curriculum.json"
"""What the task draw's curriculum has learnt (``TaskSampler.curriculum_file``), in each checkpoint: a
resumed run draws on from it instead of sweeping every task again."""


async def _learner(
    inventory: Inventory, checkpoints: Checkpoints, *, resume: bool
) -> tuple[Learner, Path | None]:
    """The learner of the inventory's policy; with ``resume``, as the latest of ``checkpoints`` left it.
    Also the checkpoint folder it resumed from (None for a fresh start)."""
    from distrl.learner.core import Learner
    from distrl.policy import Policy

    run, settings = inventory.run, inventory.learner
    policy = await anyio.to_thread.run_sync(
        lambda: Policy.load(
            inventory.policy, device=(settings.devices or (settings.device,))[0], seed=run.seed
        )
    )
    # in a thread: with several ranks it waits for the others to load their policy
    learner = await anyio.to_thread.run_sync(
        lambda: Learner(policy, settings, max_policy_lag=run.max_policy_lag, seed=run.seed)
    )
    if resume:
        latest = checkpoints.latest()
        try:
            if latest is None:
                raise DistrlError(f"nothing to resume: no checkpoint in {checkpoints.root}")  # noqa: TRY301
            await anyio.to_thread.run_sync(_verify, checkpoints, latest)
            await anyio.to_thread.run_sync(learner.load, latest)
        except BaseException:
            learner.close()  # its other ranks
            raise
        log.info("resumed from %s (update %d)", latest, learner.updates)
        return learner, latest
    return learner, None


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


def _inventory(hosts: Inventory | str | Path) -> Inventory:
    return hosts if isinstance(hosts, Inventory) else load_inventory(hosts)


def _check_collect_arguments(
    policy: object, tasks: object, split: object, episodes: object, seed: object, group_size: object
) -> None:
    """``collect``'s arguments of the wrong kind, in one ``TypeError`` or ``ValueError`` naming the
    argument, before any host starts (not an ``AttributeError`` from deep in the fleet)."""
    for name, value, optional in (
        ("episodes", episodes, False),
        ("seed", seed, True),
        ("group_size", group_size, True),
    ):
        if as_whole(value) is None and not (optional and value is None):
            raise TypeError(f"{name} must be an integer, not {value!r}")
    if not isinstance(policy, PolicySettings | str | None):
        raise TypeError(f"policy must be PolicySettings, a model folder or None, not {type(policy).__name__}")
    if isinstance(policy, str) and not policy.strip():
        raise ValueError("policy '' names no model: give a model folder, tiny, tiny-bc or tiny-weak")
    if not isinstance(split, str) or not split:
        raise ValueError(f"split must be a split's name (train, test, unseen), not {split!r}")
    if not (tasks is None or isinstance(tasks, str)):
        wrong = next((task for task in tasks if not isinstance(task, Task)), None)  # type: ignore[attr-defined]
        if wrong is not None:
            raise TypeError(f"tasks must be Task records or a suite's name, not holding {wrong!r}")


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
