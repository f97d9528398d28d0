"""Sessions: one coroutine per device, playing episode after episode; and sync mode's rounds.

A session takes a task from the sampler, asks the worker for one episode on its device
(``timeouts.episode_s``) and hands the trajectory on (to the ledger, or to the judge's queue first). A
session never waits for another (``async`` mode). A ``greedy_share`` of the episodes, spread evenly, are
asked for at temperature 0, the rest at the worker's ``[policy] temperature``. An episode that does not
come back puts its task back in the sampler, counted by reason. A device that fails ``max_failures`` + 1
episodes in a row rests (10 s, doubling up to 5 minutes) and is tried again, so that a phone that
recovers comes back; after ``max_failures`` rests it is retired. A lost link ends its host's sessions.

``Rounds`` is the ``sync`` mode baseline (DigiRL's synchronous rounds): every device of every host up
plays one episode, a barrier, then the round's training and broadcast, on the same sessions.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable

import anyio

from distrl.config import Timeouts
from distrl.errors import DistrlError
from distrl.fleet.link import Link, LinkLost
from distrl.fleet.stop import Stop
from distrl.records import Trajectory
from distrl.tasks.draw import greedy_turn
from distrl.tasks.sampler import TaskSampler
from distrl.wire import EpisodeRequest

__all__ = ["Rounds", "Sessions"]

log = logging.getLogger(__name__)

_FIRST_REST_S = 10.0
_MAX_REST_S = 300.0


class Sessions:
    """What every session of a run shares: where tasks come from and where trajectories go."""

    def __init__(
        self,
        *,
        sampler: TaskSampler,
        arrive: Callable[[Trajectory], Awaitable[None]],
        timeouts: Timeouts,
        max_failures: int,
        greedy_share: float = 0.0,
    ) -> None:
        self._sampler = sampler
        self._arrive = arrive
        """Where each trajectory goes: the ledger, or the judge's queue before it."""
        self._timeouts = timeouts
        self._max_failures = max_failures
        self._greedy_share = greedy_share
        self._requested = 0
        """Episodes asked for (``distrl.tasks.draw.greedy_turn`` says which are greedy)."""
        self.retired = 0
        """Devices retired for good: after ``max_failures`` + 1 failed episodes in a row a device rests
        (10 s, doubling up to 5 minutes) and is tried again, ``max_failures`` times."""

    async def play(self, link: Link) -> None:
        """One session per device of ``link``'s host, until the run stops or the link is lost."""
        async with anyio.create_task_group() as tg:
            for device in link.devices:
                tg.start_soon(self.session, link, device)

    async def session(self, link: Link, device: str, *, once: bool = False) -> None:
        """Episodes on one device, one after another (``once``: a single one)."""
        failures = 0
        rests = 0
        while not link.lost:
            job = await self._sampler.take(device, link.name)
            if job is None:
                return
            episode_id, task, group = job
            request = EpisodeRequest(
                id=link.next_id(),
                episode_id=episode_id,
                device=device,
                task=task,
                temperature=0.0 if self._greedy_next() else None,
            )
            try:
                trajectory = await link.episode(request, self._timeouts.episode_s)
            except anyio.get_cancelled_exc_class():
                self._sampler.failed_episode(task, "stopped", group)  # the run ended with this one in flight
                raise
            except LinkLost:
                self._sampler.failed_episode(task, "link_lost", group)
                return
            except TimeoutError:
                self._sampler.failed_episode(task, "timeout", group)
                failures += 1
            except DistrlError as exc:
                log.warning("host %s: %s: %s", link.name, device, exc)
                self._sampler.failed_episode(task, "worker_error", group)
                failures += 1
            else:
                await self._arrive(dataclasses.replace(trajectory, group=group) if group else trajectory)
                failures = failures + 1 if trajectory.end_reason == "device_error" else 0
            if failures > self._max_failures:
                rests += 1
                if rests > self._max_failures:
                    log.error(
                        "host %s: device %s retired: it kept failing after %d rests",
                        link.name,
                        device,
                        rests - 1,
                    )
                    self.retired += 1
                    return
                rest_s = min(_MAX_REST_S, _FIRST_REST_S * 2 ** (rests - 1))
                log.warning(
                    "host %s: device %s failed %d episodes in a row; trying it again in %g s",
                    link.name,
                    device,
                    failures,
                    rest_s,
                )
                await anyio.sleep(rest_s)
                failures = 0
            if once:
                return

    def _greedy_next(self) -> bool:
        """Whether the next episode is one of the ``greedy_share`` played greedily."""
        self._requested += 1
        return greedy_turn(self._requested, self._greedy_share)


class Rounds:
    """Sync mode: rounds in which every device of every host up plays one episode, then a barrier."""

    def __init__(self, sessions: Sessions, stop: Stop) -> None:
        self._sessions = sessions
        self._stop = stop
        self._changed = anyio.Condition()
        self._round = 0
        self._playing: set[str] = set()
        """Hosts still playing the current round."""
        self._up: set[str] = set()
        self._host_up = anyio.Event()

    async def play(self, link: Link) -> None:
        """A host's devices: one episode each per round, then wait for the next round."""
        played = self._round  # a host that comes up during a round waits for the next one
        self._up.add(link.name)
        self._host_up.set()
        try:
            while not link.lost and not self._stop.is_set():
                async with self._changed:
                    while self._round <= played:
                        await self._changed.wait()
                played = self._round
                async with anyio.create_task_group() as tg:
                    for device in link.devices:
                        tg.start_soon(functools.partial(self._sessions.session, link, device, once=True))
                async with self._changed:
                    if played == self._round:
                        self._playing.discard(link.name)
                    self._changed.notify_all()
        finally:
            self._up.discard(link.name)
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._playing.discard(link.name)
                    self._changed.notify_all()

    async def run(self, after_round: Callable[[], Awaitable[None]] | None = None) -> None:
        """Start round after round (each once a host is up), ``after_round`` after each barrier."""
        while not self._stop.is_set():
            while not self._up:
                self._host_up = anyio.Event()
                await self._host_up.wait()
            async with self._changed:
                self._round += 1
                self._playing = set(self._up)
                self._changed.notify_all()
                while self._playing:
                    await self._changed.wait()
            if after_round is not None:
                await after_round()
