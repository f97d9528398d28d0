"""The learner's runtime: ``train`` (``python -m distrl run``) and ``collect`` over a fleet of hosts.

One anyio event loop holds everything:

- a **host loop** per host: start the worker (``open_host``), shake hands, ``Setup`` (devices and the
  policy replica), push the current weights in full, then run one **session** per device. A lost link
  (worker died, connection cut, malformed frame, silence past ``heartbeat_timeout_s``) ends that host's
  sessions; their in-flight tasks go back to the sampler, and the host is started again after a backoff
  (1, 2, 4 … s), at most ``run.max_restarts`` times in a row. The run goes on with the hosts it has and
  says so.
- a **session** per device: take a task, send an ``EpisodeRequest``, wait for its ``TrajectoryReport``
  (``timeouts.episode_s``), score it (reward 1 on the last step of a successful episode) and hand it to
  the learner. A session never waits for another (``async`` mode). A device that fails is reset by its
  next episode; after ``max_restarts`` failed episodes in a row it is retired.
- the **trainer**: ``Learner.update`` runs in a thread so the loop stays free; every
  ``publish_every`` updates the **publisher** sends version n+1 to every worker at once, as a diff
  against the version that worker acked (or in full when it has none, or when the diff was refused),
  and waits for the acks (``timeouts.weight_push_s``). Weights travel in ``run.publish_dtype``.
- ``sync`` mode (the DigiRL-style baseline): rounds in which every device plays one episode, a barrier,
  the updates, and a broadcast, on the same components.

Nothing is lost: every episode has a unique id; a trajectory counts once, when its report arrives; the
statistics account for every task handed out (``completed``, ``failed`` by reason, ``requeued``).
Checkpoints are written every ``checkpoint_every`` updates and when the run stops, and ``resume=True``
continues from the latest.

What the user sees: a progress line every few seconds (episodes, success rate, steps/s, policy version
and lag, hosts up) on stderr, and TensorBoard scalars in ``<output>/tensorboard``.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import logging
import math
import random
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from distrl.config import EXPERT, Host, Inventory, PolicySettings, load_inventory, worker_settings_json
from distrl.errors import ConfigError, DistrlError, WeightsError, WireError
from distrl.fleet import handshake
from distrl.records import Task, Trajectory
from distrl.transport import HostLink, open_host
from distrl.wire import (
    Ack,
    EpisodeRequest,
    ErrorReport,
    Heartbeat,
    Message,
    Setup,
    Shutdown,
    StepReport,
    TrajectoryReport,
    Weights,
)

if TYPE_CHECKING:
    import torch

    from distrl.learner.checkpoint import Checkpoints
    from distrl.learner.trainer import Learner, UpdateReport

__all__ = ["CollectResult", "RunStats", "collect", "train"]

log = logging.getLogger(__name__)

_PROGRESS_EVERY_S = 5.0


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
    restarts: int = 0
    """Host links started again after a loss."""
    stale: int = 0
    """Trajectories the learner refused on arrival: begun by a policy more than ``run.max_policy_lag``
    versions old (counted in ``completed``, not trained on)."""
    updates: int = 0
    weight_bytes: int = 0
    weight_pushes: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)
    steps_per_s: float = 0.0
    """Steps the devices took per second over the last progress period (counted as they are streamed)."""
    policy_version: int = 0
    lag_p50: int = 0
    """Median staleness (versions) of recent steps when they reached the learner."""
    hosts_up: int = 0
    hosts: int = 0
    recent: collections.deque[bool] = dataclasses.field(default_factory=lambda: collections.deque(maxlen=100))
    """Success of the last 100 trajectories, oldest first."""

    @property
    def in_flight(self) -> int:
        return self.handed_out - self.completed - sum(self.failed.values())

    @property
    def success_rate(self) -> float:
        return self.successes / self.completed if self.completed else 0.0

    @property
    def recent_success_rate(self) -> float:
        """Success over the last 100 trajectories: the one that shows learning."""
        return sum(self.recent) / len(self.recent) if self.recent else 0.0

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        """One line of progress, as ``python -m distrl run`` prints it."""
        return (
            f"{self.elapsed_s:6.0f} s  episodes {self.completed} ({self.success_rate:.0%} success, "
            f"last {len(self.recent)}: {self.recent_success_rate:.0%}, "
            f"{sum(self.failed.values())} failed, {self.in_flight} running)  {self.steps_per_s:.1f} steps/s  "
            f"policy v{self.policy_version} lag p50 {self.lag_p50}  updates {self.updates}  "
            f"hosts {self.hosts_up}/{self.hosts} up"
        )


@dataclasses.dataclass(frozen=True)
class CollectResult:
    """What ``collect`` brought back."""

    trajectories: tuple[Trajectory, ...]
    stats: RunStats


class _Sampler:
    """Tasks in a seeded shuffled order, cycling; failed episodes' tasks come back first."""

    def __init__(self, pool: Sequence[Task], rng: random.Random) -> None:
        if not pool:
            raise DistrlError("there are no tasks to run")
        self.pool = list(pool)
        self.rng = rng
        self.order: list[Task] = []
        self.returned: collections.deque[Task] = collections.deque()

    def next(self) -> Task:
        if self.returned:
            return self.returned.popleft()
        if not self.order:
            self.order = self.rng.sample(self.pool, len(self.pool))
        return self.order.pop()

    def give_back(self, task: Task) -> None:
        self.returned.append(task)


class _LinkLost(Exception):
    """The host's link ended; the session's episode did not come back."""


class _Link:
    """One host's worker: sending, the dispatch of its replies, and the weights version it acked."""

    def __init__(self, link: HostLink, on_step: Callable[[], None]) -> None:
        self.link = link
        self.on_step = on_step
        """Called for every step the worker streams, as it happens."""
        self.name = link.host.name
        self.version: int | None = None
        self.ids = 0
        self.replies: dict[int, MemoryObjectSendStream[Message]] = {}
        self.episodes: dict[str, MemoryObjectSendStream[Message]] = {}
        self.requests: dict[int, str] = {}
        """Episode request id → episode id: a worker's error on a request names the request."""
        self.lost: str = ""
        self.last_heard = time.monotonic()
        self.pushing = anyio.Lock()
        """Held while weights travel to this worker: one push at a time."""

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    async def send(self, message: Message) -> None:
        if self.lost:
            raise _LinkLost(self.lost)
        try:
            await self.link.stream.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._lose("the worker's stream closed")
            raise _LinkLost(self.lost) from exc

    async def _send_within(self, message: Message) -> None:
        """``send``, where a send that outlasts the caller's deadline loses the link: a worker that
        stops reading must not hold the stream (and every sender behind it) forever."""
        try:
            await self.send(message)
        except anyio.get_cancelled_exc_class():
            self._lose(f"a {type(message).__name__} could not be sent in time")
            raise

    async def request(self, message: Message, timeout_s: float) -> Message:
        """Send ``message`` and wait for the ``Ack`` or ``ErrorReport`` that names it."""
        send, receive = anyio.create_memory_object_stream[Message](1)
        self.replies[message.id] = send
        try:
            with anyio.fail_after(timeout_s):
                await self._send_within(message)
                try:
                    return await receive.receive()
                except anyio.EndOfStream:
                    raise _LinkLost(self.lost) from None
        finally:
            self.replies.pop(message.id, None)
            receive.close()

    async def episode(self, request: EpisodeRequest, timeout_s: float) -> Trajectory:
        """Run one episode on the worker; raises ``_LinkLost``, ``TimeoutError`` or the worker's error."""
        send, receive = anyio.create_memory_object_stream[Message](1)
        self.episodes[request.episode_id] = send
        self.requests[request.id] = request.episode_id
        try:
            with anyio.fail_after(timeout_s):
                await self._send_within(request)
                try:
                    reply = await receive.receive()
                except anyio.EndOfStream:
                    raise _LinkLost(self.lost) from None
        finally:
            self.episodes.pop(request.episode_id, None)
            self.requests.pop(request.id, None)
            receive.close()
        if isinstance(reply, ErrorReport):
            raise reply.error
        assert isinstance(reply, TrajectoryReport)  # only those are routed here
        return reply.trajectory

    async def read(self) -> None:
        """Route every message from the worker until the link ends; then fail whoever waits."""
        try:
            async for message in self.link.stream:
                self.last_heard = time.monotonic()
                match message:
                    case Ack() | ErrorReport() if message.ref in self.replies:
                        await self.replies[message.ref].send(message)
                    case ErrorReport() if message.ref in self.requests:
                        waiter = self.episodes.get(self.requests[message.ref])
                        if waiter is not None:
                            await waiter.send(message)
                    case TrajectoryReport():
                        waiter = self.episodes.get(message.trajectory.id)
                        if waiter is not None:
                            await waiter.send(message)
                    case StepReport():
                        self.on_step()
                    case Heartbeat():
                        pass
                    case ErrorReport():
                        log.warning("host %s: worker error: %s", self.name, message.error)
                    case _:
                        log.warning(
                            "host %s: unexpected %s from the worker", self.name, type(message).__name__
                        )
            self._lose("the worker closed the link")
        except WireError as exc:
            self._lose(f"malformed frame from the worker: {exc}")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            self._lose("the worker's stream closed")
        finally:
            self.release_waiters()

    def release_waiters(self) -> None:
        """Wake everyone waiting for a reply on this link: they see it lost."""
        for stream in [*self.replies.values(), *self.episodes.values()]:
            stream.close()

    def _lose(self, why: str) -> None:
        if not self.lost:
            self.lost = why
            log.warning("host %s: link lost: %s", self.name, why)


class _Fleet:
    """The state shared by host loops, sessions, the trainer and the publisher."""

    def __init__(
        self,
        inventory: Inventory,
        pool: Sequence[Task],
        rng: random.Random,
        *,
        episodes: int | None,
        keep: bool,
        learner: Learner | None,
    ) -> None:
        self.inventory = inventory
        self.sampler = _Sampler(pool, rng)
        self.stats = RunStats()
        self.limit = episodes
        self.keep = keep
        self.learner = learner
        self.kept: list[Trajectory] = []
        self.pending: list[Trajectory] = []
        """Trajectories waiting for the trainer to add them (it adds between updates)."""
        self.links: dict[str, _Link] = {}
        self.hosts_up: set[str] = set()
        self.stop = anyio.Event()
        self.arrived = anyio.Event()
        self.requeued = anyio.Event()
        """Set (and replaced) each time a failed episode's task goes back to the sampler."""
        self.counter = 0
        self.session = uuid.uuid4().hex[:8]
        """Part of every episode id, so that ids stay unique across resumed runs."""
        self.staleness: list[int] = []
        self.version = learner.version if learner is not None else 0
        self.published: dict[str, torch.Tensor] | None = None
        """The weights at ``version``, as sent to workers (in ``run.publish_dtype``)."""
        self.previous: dict[str, torch.Tensor] | None = None
        self.previous_version: int | None = None
        self.blobs: dict[tuple[int, int | None], bytes] = {}
        """Encoded weights, by (version, base version or None for full): each is encoded once, whichever
        workers it goes to; only the current version's are kept."""
        self.encoding = anyio.Lock()
        self.settings_json = worker_settings_json(inventory)
        self.fresh = 0
        """Trajectories added since the last update."""
        self.push_s: list[float] = []
        """Seconds each publication took to reach every worker."""
        self.checkpoints: Checkpoints | None = None
        self.checkpointed_added = -1
        """``ReplayStats.added`` at the last checkpoint."""
        self.checkpointed_at = time.monotonic()
        """When the last checkpoint was written (or the run started)."""
        self.warned_stale = False
        self.rounds = anyio.Condition()
        self.round = 0
        self.round_hosts: set[str] = set()

    def count_step(self) -> None:
        self.stats.steps_streamed += 1

    async def take(self) -> tuple[str, Task] | None:
        """The next episode to hand out, or None once the run has stopped. While the episodes the run
        needs are all handed out, wait: one that fails puts its task back, for any host still up."""
        while self.limit is not None and self.stats.handed_out - self._returned() >= self.limit:
            if self.stop.is_set():
                return None
            await self.requeued.wait()
        if self.stop.is_set():
            return None
        task = self.sampler.next()
        self.counter += 1
        self.stats.handed_out += 1
        return f"{self.inventory.run.name}/{self.session}/{self.counter:07d}", task

    def _returned(self) -> int:
        return sum(self.stats.failed.values())

    def failed(self, task: Task, reason: str) -> None:
        self.stats.failed[reason] += 1
        self.stats.requeued += 1
        self.sampler.give_back(task)
        self.requeued.set()
        self.requeued = anyio.Event()

    def arrive(self, trajectory: Trajectory) -> None:
        """A trajectory reached the learner: score it and count it, once."""
        steps = trajectory.steps
        if trajectory.success and steps:
            steps = (*steps[:-1], dataclasses.replace(steps[-1], reward=1.0))
            trajectory = dataclasses.replace(trajectory, steps=steps)
        self.stats.completed += 1
        self.stats.successes += bool(trajectory.success)
        if not trajectory.cut_short:
            self.stats.recent.append(bool(trajectory.success))
        self.stats.steps += len(steps)
        self.stats.device_errors += trajectory.end_reason == "device_error"
        self.stats.cut_short += trajectory.cut_short
        self.staleness.extend(self.version - step.policy_version for step in steps)
        if self.keep:
            self.kept.append(trajectory)
        if self.learner is not None:
            self.pending.append(trajectory)
        self.arrived.set()
        if self.limit is not None and self.stats.completed >= self.limit:
            self.stop.set()


_LINK_ERRORS = (
    DistrlError,
    _LinkLost,
    TimeoutError,
    OSError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)
"""What ends one host's link without ending the run."""


async def _host_loop(host: Host, fleet: _Fleet, sessions: Callable[[_Link, TaskGroup], Any]) -> None:
    """Keep ``host``'s worker running and its sessions going, restarting it after a loss."""
    settings = fleet.inventory
    failures = 0
    while not fleet.stop.is_set():
        started = time.monotonic()
        try:
            async with open_host(host, settings.timeouts) as raw:
                await handshake(raw, settings.timeouts)
                link = _Link(raw, fleet.count_step)
                error: BaseException | None = None
                async with anyio.create_task_group() as tg:
                    tg.start_soon(link.read)
                    tg.start_soon(_heartbeats, link, fleet)
                    try:
                        await _serve_host(link, fleet, sessions, tg)
                    except _LINK_ERRORS as exc:  # raised here, not in a child task: no exception group
                        error = exc
                    tg.cancel_scope.cancel()
                if error is not None:
                    raise error
            if fleet.stop.is_set() or not link.lost:
                return  # the run is over, or this host has played all it was given
            failures = 0 if time.monotonic() - started > 60 else failures + 1
        except _LINK_ERRORS as exc:
            failures += 1
            log.warning("host %s: %s", host.name, exc or type(exc).__name__)
        if failures > settings.run.max_restarts:
            log.error(
                "host %s: given up after %d failures in a row; the run goes on without it",
                host.name,
                failures,
            )
            return
        fleet.stats.restarts += 1
        await _wait_or_stop(fleet, min(30.0, 2.0 ** (failures - 1)))


async def _serve_host(
    link: _Link, fleet: _Fleet, sessions: Callable[[_Link, TaskGroup], Any], tg: TaskGroup
) -> None:
    """Set the worker up, bring it to the current weights, run its sessions, then say goodbye."""
    settings = fleet.inventory
    name = link.name
    reply = await link.request(
        Setup(id=link.next_id(), settings=fleet.settings_json), settings.timeouts.worker_start_s
    )
    if isinstance(reply, ErrorReport):
        raise reply.error
    fleet.links[name] = link
    try:
        if fleet.learner is not None:
            async with link.pushing:
                while link.version != fleet.version:  # a publication may land while this one travels
                    await _push(link, fleet)
        fleet.hosts_up.add(name)
        log.info("host %s: up, %d device(s)", name, len(link.link.host.devices.serials))
        await sessions(link, tg)
    finally:
        fleet.links.pop(name, None)
        fleet.hosts_up.discard(name)
    if not link.lost:
        with anyio.move_on_after(settings.timeouts.cleanup_s), contextlib.suppress(*_LINK_ERRORS):
            await link.request(
                Shutdown(id=link.next_id(), reason="run complete"), settings.timeouts.cleanup_s
            )


async def _wait_or_stop(fleet: _Fleet, seconds: float) -> None:
    with anyio.move_on_after(seconds):
        await fleet.stop.wait()


async def _heartbeats(link: _Link, fleet: _Fleet) -> None:
    """Send a heartbeat every interval; a link silent past ``heartbeat_timeout_s`` is lost."""
    timeouts = fleet.inventory.timeouts
    seq = 0
    while not link.lost:
        await anyio.sleep(timeouts.heartbeat_interval_s)
        if time.monotonic() - link.last_heard > timeouts.heartbeat_timeout_s:
            link._lose(f"silent for more than {timeouts.heartbeat_timeout_s:g} s")
            link.release_waiters()
            with contextlib.suppress(Exception):
                await link.link.stream.aclose()
            return
        with anyio.move_on_after(timeouts.heartbeat_interval_s), contextlib.suppress(_LinkLost):
            await link.send(Heartbeat(id=link.next_id(), seq=seq, sent_at_s=time.time()))
        seq += 1


async def _session(link: _Link, device: str, fleet: _Fleet, *, once: bool = False) -> None:
    """Episodes on one device, one after another, until the run stops or the link is lost."""
    timeouts = fleet.inventory.timeouts
    failures = 0
    while not link.lost:
        job = await fleet.take()
        if job is None:
            return
        episode_id, task = job
        request = EpisodeRequest(
            id=link.next_id(), episode_id=episode_id, device=device, task=task, policy_version=fleet.version
        )
        try:
            trajectory = await link.episode(request, timeouts.episode_s)
        except anyio.get_cancelled_exc_class():
            fleet.failed(task, "stopped")  # the run ended with this episode in flight
            raise
        except _LinkLost:
            fleet.failed(task, "link_lost")
            return
        except TimeoutError:
            fleet.failed(task, "timeout")
            failures += 1
        except DistrlError as exc:
            log.warning("host %s: %s: %s", link.name, device, exc)
            fleet.failed(task, "worker_error")
            failures += 1
        else:
            fleet.arrive(trajectory)
            failures = failures + 1 if trajectory.end_reason == "device_error" else 0
        if failures > fleet.inventory.run.max_restarts:
            log.error("host %s: device %s retired after %d failures in a row", link.name, device, failures)
            return
        if once:
            return


# -- weights ------------------------------------------------------------------------------------------------


def _published(learner: Learner, dtype: str) -> dict[str, torch.Tensor]:
    import torch

    target = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    return {name: tensor.to(target) for name, tensor in learner.policy.adapter_state().items()}


async def _push(link: _Link, fleet: _Fleet) -> None:
    """Bring ``link``'s worker to the fleet's published version: a diff if it holds the previous one."""
    from distrl import weights

    assert fleet.published is not None
    # read together, before any wait: a publication may replace them while this push travels
    version, published, previous = fleet.version, fleet.published, fleet.previous
    if link.version == version:
        return
    if previous is None or link.version is None or link.version != fleet.previous_version:
        previous = None
    kind: Literal["full", "diff"] = "full" if previous is None else "diff"
    base = None if previous is None else link.version
    blob = await _blob(fleet, version, published, base, previous)
    info = weights.describe(blob)
    message = Weights(
        id=link.next_id(), version=version, base_version=base, kind=kind, checksum=info.checksum, blob=blob
    )
    reply = await link.request(message, fleet.inventory.timeouts.weight_push_s)
    fleet.stats.weight_bytes += len(blob)
    fleet.stats.weight_pushes += 1
    if isinstance(reply, ErrorReport):
        if kind == "diff" and isinstance(reply.error, WeightsError):
            link.version = None
            await _push(link, fleet)
            return
        raise reply.error
    link.version = version


async def _blob(
    fleet: _Fleet,
    version: int,
    published: dict[str, torch.Tensor],
    base: int | None,
    previous: dict[str, torch.Tensor] | None,
) -> bytes:
    """``version`` in full (``base`` None) or as a diff from ``base``, encoded once for every worker."""
    from distrl import weights

    async with fleet.encoding:
        blob = fleet.blobs.get((version, base))
        if blob is None:
            if previous is None:
                blob = await anyio.to_thread.run_sync(weights.encode_full, published, version)
            else:
                assert base is not None
                blob = await anyio.to_thread.run_sync(weights.encode_diff, previous, published, base, version)
            fleet.blobs = {key: b for key, b in fleet.blobs.items() if key[0] == version}
            fleet.blobs[version, base] = blob
    return blob


async def _publish(fleet: _Fleet) -> None:
    """Make the learner's weights the next published version and send them to every worker at once."""
    assert fleet.learner is not None
    new = await anyio.to_thread.run_sync(_published, fleet.learner, fleet.inventory.run.publish_dtype)
    fleet.previous, fleet.previous_version = fleet.published, fleet.version if fleet.published else None
    fleet.published, fleet.version = new, fleet.learner.version

    async def one(link: _Link) -> None:
        try:
            async with link.pushing:
                await _push(link, fleet)
        except (_LinkLost, TimeoutError, DistrlError) as exc:
            log.warning("host %s: weights v%d not delivered: %s", link.name, fleet.version, exc)

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for link in list(fleet.links.values()):
            tg.start_soon(one, link)
    fleet.push_s.append(time.monotonic() - started)


async def _train_steps(fleet: _Fleet, board: _Board, updates: int | None = None) -> int:
    """Add the trajectories that arrived, then update (``updates`` times, or as the data allows)."""
    learner = fleet.learner
    assert learner is not None
    settings = fleet.inventory
    done = 0
    while updates is None or done < updates:
        for trajectory in fleet.pending:
            if not learner.add(trajectory) and trajectory.steps and not trajectory.cut_short:
                fleet.stats.stale += 1
        new, fleet.pending = len(fleet.pending), []
        _warn_if_stale(fleet)
        fleet.fresh += new
        if updates is None and fleet.fresh < settings.learner.min_new_trajectories:
            return done
        fleet.fresh = 0
        report = await anyio.to_thread.run_sync(learner.update)
        if report is None:
            return done
        done += 1
        fleet.stats.updates = learner.updates
        board.update(report, learner)
        if learner.updates % settings.run.publish_every == 0:
            await _publish(fleet)
        every, every_s = settings.run.checkpoint_every, settings.run.checkpoint_every_s
        if (every and learner.updates % every == 0) or (
            every_s and time.monotonic() - fleet.checkpointed_at >= every_s
        ):
            await _checkpoint(fleet)
    return done


def _warn_if_stale(fleet: _Fleet) -> None:
    """Say so, once, when the learner refuses a quarter or more of what arrives as too old."""
    stats = fleet.stats
    if fleet.warned_stale or stats.completed < 20 or 4 * stats.stale < stats.completed:
        return
    fleet.warned_stale = True
    log.warning(
        "%d of %d trajectories arrived more than run.max_policy_lag = %d versions old and were not"
        " trained on; raise max_policy_lag, or learner.min_new_trajectories to update less often",
        stats.stale,
        stats.completed,
        fleet.inventory.run.max_policy_lag,
    )


async def _checkpoint(fleet: _Fleet) -> None:
    assert fleet.learner is not None and fleet.checkpoints is not None  # noqa: PT018
    learner, checkpoints = fleet.learner, fleet.checkpoints
    latest = checkpoints.latest()
    added = learner.stats().added
    if latest is not None and latest.name == f"step-{learner.updates:09d}":
        if added == fleet.checkpointed_added:
            return  # nothing new since the last one
        # same update, more trajectories in the buffer (the run's last ones): write it again; until the
        # new one is in place, the checkpoint before it is the latest
        await anyio.to_thread.run_sync(shutil.rmtree, latest)
    fleet.checkpointed_added, fleet.checkpointed_at = added, time.monotonic()
    folder = await anyio.to_thread.run_sync(lambda: checkpoints.write(learner.updates, learner.save))
    log.info("checkpoint: %s", folder)


async def _trainer(fleet: _Fleet, board: _Board) -> None:
    """Async mode: update whenever enough new trajectories have arrived."""
    while not fleet.stop.is_set():
        fleet.arrived = anyio.Event()
        await _train_steps(fleet, board)
        with anyio.move_on_after(1.0):
            await fleet.arrived.wait()


# -- what the user sees -------------------------------------------------------------------------------------


class _Board:
    """Progress lines on stderr and TensorBoard scalars (``None`` folder: progress only)."""

    def __init__(
        self, fleet: _Fleet, folder: Path | None, on_progress: Callable[[RunStats], None] | None
    ) -> None:
        self.fleet = fleet
        self.on_progress = on_progress
        self.writer: Any = None
        if folder is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(folder))
        self.last_steps = 0
        self.last_time = time.monotonic()

    def update(self, report: UpdateReport, learner: Learner) -> None:
        if self.writer is None:
            return
        step = report.update
        for name in (
            "actor_loss",
            "critic_loss",
            "entropy",
            "mean_rho",
            "clipped_share",
            "mean_advantage",
            "mean_value",
            "mean_priority",
            "wall_s",
        ):
            self.writer.add_scalar(f"learner/{name}", getattr(report, name), step)
        if report.staleness:
            import torch

            self.writer.add_histogram("learner/staleness", torch.tensor(report.staleness), step)
        stats = learner.stats()
        self.writer.add_scalar("replay/trajectories", stats.trajectories, step)
        self.writer.add_scalar("replay/dropped_stale", stats.dropped_stale, step)

    def tick(self) -> None:
        fleet, stats = self.fleet, self.fleet.stats
        now = time.monotonic()
        stats.steps_per_s = (stats.steps_streamed - self.last_steps) / max(1e-9, now - self.last_time)
        self.last_steps, self.last_time = stats.steps_streamed, now
        lag = sorted(fleet.staleness[-500:])
        stats.lag_p50 = lag[len(lag) // 2] if lag else 0
        stats.policy_version = fleet.version
        stats.hosts_up, stats.hosts = len(fleet.hosts_up), len(fleet.inventory.hosts)
        log.info("%s", stats.line())
        if self.on_progress is not None:
            self.on_progress(stats)
        if self.writer is not None:
            elapsed = stats.elapsed_s
            self.writer.add_scalar("collect/success_rate", stats.success_rate, stats.completed)
            self.writer.add_scalar(
                "collect/success_rate_last_100", stats.recent_success_rate, stats.completed
            )
            self.writer.add_scalar("collect/steps_per_s", stats.steps_per_s, int(elapsed))
            self.writer.add_scalar("collect/trajectories", stats.completed, int(elapsed))
            self.writer.add_scalar("collect/failed", sum(stats.failed.values()), int(elapsed))
            self.writer.add_scalar("collect/stale", stats.stale, int(elapsed))
            self.writer.add_scalar("fleet/hosts_up", len(fleet.hosts_up), int(elapsed))
            devices = max(1, fleet.inventory.device_count)
            self.writer.add_scalar("fleet/device_utilisation", stats.in_flight / devices, int(elapsed))
            self.writer.add_scalar("fleet/restarts", stats.restarts, int(elapsed))
            self.writer.add_scalar("weights/bytes", stats.weight_bytes, int(elapsed))
            if fleet.push_s:
                self.writer.add_scalar("weights/push_s", fleet.push_s[-1], int(elapsed))
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _ticker(board: _Board, fleet: _Fleet) -> None:
    while not fleet.stop.is_set():
        with anyio.move_on_after(_PROGRESS_EVERY_S):
            await fleet.stop.wait()
        board.tick()


async def _deadline(fleet: _Fleet, seconds: float) -> None:
    if seconds > 0:
        await _wait_or_stop(fleet, seconds)
        fleet.stop.set()


# -- entry points -------------------------------------------------------------------------------------------


def _inventory(hosts: Inventory | str | Path) -> Inventory:
    return hosts if isinstance(hosts, Inventory) else load_inventory(hosts)


def _tasks(inventory: Inventory, tasks: Sequence[Task] | str | None, split: str) -> list[Task]:
    from distrl.sim.suites import tasks as suite_tasks

    if tasks is None:
        return suite_tasks(inventory.run.suite, split)
    if isinstance(tasks, str):
        return suite_tasks(tasks, split)
    return list(tasks)


async def collect(
    hosts: Inventory | str | Path,
    *,
    policy: PolicySettings | str | None = None,
    tasks: Sequence[Task] | str | None = None,
    split: str = "test",
    episodes: int,
    seed: int | None = None,
    on_progress: Callable[[RunStats], None] | None = None,
) -> CollectResult:
    """Run a policy on a fleet and bring back ``episodes`` trajectories, without training.

    ``hosts`` is an inventory or the path of a hosts file; its ``run.mode`` applies: ``async`` keeps
    every device busy, ``sync`` plays rounds (every device one episode, then a barrier), as ``train``
    would without its updates. ``policy`` is the policy to run (its
    settings, or a model folder; default the inventory's ``[policy]``): each worker loads it itself.
    ``tasks`` is a list of tasks, or a suite name (its ``split``), default the inventory's suite.
    Cancelling the call (a timeout, Ctrl-C in a notebook) stops the workers and returns nothing.
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
    rng = random.Random(f"collect/{inventory.run.seed}")
    fleet = _Fleet(
        inventory, _tasks(inventory, tasks, split), rng, episodes=episodes, keep=True, learner=None
    )
    board = _Board(fleet, None, on_progress)
    if inventory.run.mode == "sync":
        await _run_fleet(
            fleet, board, lambda link, tg: _sessions_sync(link, fleet), lambda: _sync_rounds(fleet, board)
        )
    else:
        await _run_fleet(fleet, board, lambda link, tg: _sessions(link, fleet))
    if fleet.stats.completed < episodes:
        log.warning(
            "collect: %d of %d episodes came back (failed: %s); the hosts ran out of restarts",
            fleet.stats.completed,
            episodes,
            dict(fleet.stats.failed) or "none",
        )
    return CollectResult(trajectories=tuple(sorted(fleet.kept, key=lambda t: t.id)), stats=fleet.stats)


async def _sessions(link: _Link, fleet: _Fleet) -> None:
    async with anyio.create_task_group() as tg:
        for device in link.link.host.devices.serials:
            tg.start_soon(_session, link, device, fleet)


async def _run_fleet(
    fleet: _Fleet, board: _Board, sessions: Callable[[_Link, TaskGroup], Any], *extra: Callable[[], Any]
) -> None:
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_ticker, board, fleet)
            for job in extra:
                tg.start_soon(job)

            async def hosts() -> None:
                async with anyio.create_task_group() as inner:
                    for host in fleet.inventory.hosts:
                        inner.start_soon(_host_loop, host, fleet, sessions)
                fleet.stop.set()  # every host is done or given up

            tg.start_soon(hosts)
            await fleet.stop.wait()
            tg.cancel_scope.cancel()
    finally:
        board.tick()
        board.close()


async def train(
    hosts: Inventory | str | Path,
    *,
    resume: bool = False,
    on_progress: Callable[[RunStats], None] | None = None,
) -> RunStats:
    """Train as the inventory says (``python -m distrl run``): until ``run.max_trajectories``
    trajectories or ``run.duration_s`` seconds (whichever first; both 0 runs until cancelled), then a
    final checkpoint. With ``resume``, start from the latest checkpoint in ``<output>/checkpoints``.
    """
    from distrl.learner.checkpoint import Checkpoints
    from distrl.learner.trainer import Learner
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
    output = inventory.output_dir
    output.mkdir(parents=True, exist_ok=True)
    policy = await anyio.to_thread.run_sync(
        lambda: Policy.load(inventory.policy, device=inventory.learner.device, seed=run.seed)
    )
    learner = Learner(policy, inventory.learner, max_policy_lag=run.max_policy_lag, seed=run.seed)
    checkpoints = Checkpoints(output / "checkpoints", keep=run.keep_checkpoints)
    if resume:
        latest = checkpoints.latest()
        if latest is None:
            raise DistrlError(f"nothing to resume: no checkpoint in {output / 'checkpoints'}")
        await anyio.to_thread.run_sync(learner.load, latest)
        log.info("resumed from %s (update %d)", latest, learner.updates)
    limit = run.max_trajectories or None
    # the sampler's own stream (the learner's is saved from its thread); a resumed run draws anew
    sampler_rng = random.Random(f"tasks/{run.seed}/{learner.updates}")
    fleet = _Fleet(
        inventory, _tasks(inventory, None, "train"), sampler_rng, episodes=limit, keep=False, learner=learner
    )
    fleet.checkpoints = checkpoints
    fleet.published = await anyio.to_thread.run_sync(_published, learner, run.publish_dtype)
    board = _Board(fleet, output / "tensorboard", on_progress)
    try:
        sync = run.mode == "sync"
        await _run_fleet(
            fleet,
            board,
            (lambda link, tg: _sessions_sync(link, fleet))
            if sync
            else (lambda link, tg: _sessions(link, fleet)),
            (lambda: _sync_rounds(fleet, board)) if sync else (lambda: _trainer(fleet, board)),
            lambda: _deadline(fleet, run.duration_s),
        )
    finally:
        with anyio.CancelScope(shield=True):
            for trajectory in fleet.pending:
                learner.add(trajectory)
            fleet.pending = []
            await _checkpoint(fleet)
    return fleet.stats


# -- sync mode ----------------------------------------------------------------------------------------------


async def _sessions_sync(link: _Link, fleet: _Fleet) -> None:
    """A host's devices in sync mode: one episode each per round, then wait for the next round."""
    played = fleet.round  # a host that comes up during a round waits for the next one
    try:
        while not link.lost and not fleet.stop.is_set():
            async with fleet.rounds:
                while fleet.round <= played:
                    await fleet.rounds.wait()
            played = fleet.round
            async with anyio.create_task_group() as tg:
                for device in link.link.host.devices.serials:
                    tg.start_soon(functools.partial(_session, link, device, fleet, once=True))
            async with fleet.rounds:
                if played == fleet.round:
                    fleet.round_hosts.discard(link.name)
                fleet.rounds.notify_all()
    finally:
        with anyio.CancelScope(shield=True):
            async with fleet.rounds:
                fleet.round_hosts.discard(link.name)
                fleet.rounds.notify_all()


async def _sync_rounds(fleet: _Fleet, board: _Board) -> None:
    """DigiRL-style rounds: every device one episode, a barrier, the updates, a broadcast (``collect``:
    the rounds and barriers alone)."""
    learner = fleet.learner
    settings = fleet.inventory
    while not fleet.stop.is_set():
        while not fleet.hosts_up:
            await _wait_or_stop(fleet, 0.1)
            if fleet.stop.is_set():
                return
        async with fleet.rounds:
            fleet.round += 1
            fleet.round_hosts = set(fleet.hosts_up)
            fleet.rounds.notify_all()
            while fleet.round_hosts:
                await fleet.rounds.wait()
        if learner is None:
            continue
        new = len(fleet.pending)
        per_update = max(1, settings.learner.min_new_trajectories)
        before = learner.updates
        await _train_steps(fleet, board, updates=max(1, math.ceil(new / per_update)))
        if learner.updates != before and learner.updates % settings.run.publish_every:
            await _publish(fleet)  # every round ends with a broadcast
