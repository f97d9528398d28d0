"""The learner's end of one worker's link: requests and their replies, episodes, heartbeats and loss.

A ``Link`` wraps a handshaken ``HostLink``. ``read`` routes every message from the worker: an ``Ack``
or ``ErrorReport`` to the request it names, the ``StepReport``s of an episode to that episode (in order,
each screen once), and its ``EpisodeEnd`` back to the session waiting for it, which gets the whole
trajectory. ``keep_alive`` sends heartbeats and loses the link when the worker has been silent past
``heartbeat_timeout_s``. Once lost (closed stream, malformed frame, silence, a send that could not finish
in time) every waiter wakes with ``LinkLost``, and the link stays lost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from distrl.config import Timeouts
from distrl.errors import WireError
from distrl.records import Step, Trajectory
from distrl.transport import HostLink
from distrl.wire import (
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    Heartbeat,
    Message,
    StepReport,
)

__all__ = ["Link", "LinkLost"]

log = logging.getLogger(__name__)


class LinkLost(Exception):
    """The host's link ended; what was asked of it did not come back."""


@dataclasses.dataclass
class _Episode:
    """An episode in flight: where its ending goes, and the steps streamed so far."""

    reply: MemoryObjectSendStream[Trajectory | ErrorReport]
    steps: list[Step] = dataclasses.field(default_factory=list)


class Link:
    """One host's worker: sending, the routing of its replies, heartbeats, and whether it is lost."""

    def __init__(self, link: HostLink, on_step: Callable[[], None] = lambda: None) -> None:
        self.link = link
        self.on_step = on_step
        """Called for every step the worker streams, as it happens."""
        self.name = link.host.name
        self.devices = link.host.devices.serials
        self._ids = 0
        self._replies: dict[int, MemoryObjectSendStream[Message]] = {}
        self._episodes: dict[str, _Episode] = {}
        self._requests: dict[int, str] = {}
        """Episode request id → episode id: a worker's error on a request names the request."""
        self.lost = ""
        """Why the link was lost; empty while it is up."""
        self._last_heard = time.monotonic()

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def send(self, message: Message) -> None:
        if self.lost:
            raise LinkLost(self.lost)
        try:
            await self.link.stream.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.lose(f"the worker's stream broke: {exc}" if str(exc) else "the worker's stream closed")
            raise LinkLost(self.lost) from exc

    async def _send_within(self, message: Message, deadline: anyio.CancelScope) -> None:
        """``send``, where a send that outlasts ``deadline`` loses the link: a worker that stops reading
        must not hold the stream (and every sender behind it) forever. A send cancelled by its caller
        instead (the run stopping) leaves the link up: a frame it left half-written breaks the stream,
        and the next send finds that and loses the link."""
        try:
            await self.send(message)
        except anyio.get_cancelled_exc_class():
            if anyio.current_time() >= deadline.deadline:
                self.lose(f"the {type(message).__name__} could not be sent in time")
            raise

    async def request(self, message: Message, timeout_s: float) -> Message:
        """Send ``message`` and wait for the ``Ack`` or ``ErrorReport`` that names it."""
        send, receive = anyio.create_memory_object_stream[Message](1)
        self._replies[message.id] = send
        try:
            with anyio.fail_after(timeout_s) as deadline:
                await self._send_within(message, deadline)
                try:
                    return await receive.receive()
                except anyio.EndOfStream:
                    raise LinkLost(self.lost) from None
        finally:
            self._replies.pop(message.id, None)
            receive.close()

    async def episode(self, request: EpisodeRequest, timeout_s: float) -> Trajectory:
        """Run one episode on the worker; raises ``LinkLost``, ``TimeoutError`` or the worker's error."""
        send, receive = anyio.create_memory_object_stream[Trajectory | ErrorReport](1)
        self._episodes[request.episode_id] = _Episode(send)
        self._requests[request.id] = request.episode_id
        try:
            with anyio.fail_after(timeout_s) as deadline:
                await self._send_within(request, deadline)
                try:
                    reply = await receive.receive()
                except anyio.EndOfStream:
                    raise LinkLost(self.lost) from None
        finally:
            self._episodes.pop(request.episode_id, None)
            self._requests.pop(request.id, None)
            receive.close()
        if isinstance(reply, ErrorReport):
            raise reply.error
        return reply

    async def read(self) -> None:
        """Route every message from the worker until the link ends; then fail whoever waits."""
        try:
            async for message in self.link.stream:
                self._last_heard = time.monotonic()
                await self._route(message)
            self.lose("the worker closed the link")
        except WireError as exc:
            self.lose(f"malformed frame from the worker: {exc}")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            self.lose("the worker's stream closed")
        finally:
            self._release_waiters()

    async def _route(self, message: Message) -> None:
        match message:
            case Ack() | ErrorReport() if message.ref in self._replies:
                await self._replies[message.ref].send(message)
            case ErrorReport() if message.ref in self._requests:
                episode = self._episodes.get(self._requests[message.ref])
                if episode is not None:
                    await episode.reply.send(message)
            case StepReport():
                self.on_step()
                episode = self._episodes.get(message.episode_id)
                if episode is not None:
                    if message.step.index != len(episode.steps):
                        raise WireError(
                            f"episode {message.episode_id}: step {message.step.index} arrived, "
                            f"{len(episode.steps)} expected"
                        )
                    episode.steps.append(message.step)
            case EpisodeEnd():
                trajectory = message.trajectory
                episode = self._episodes.get(trajectory.id)
                if episode is not None:
                    if message.steps != len(episode.steps):
                        raise WireError(
                            f"episode {trajectory.id}: ended after {message.steps} steps, "
                            f"{len(episode.steps)} arrived"
                        )
                    await episode.reply.send(dataclasses.replace(trajectory, steps=tuple(episode.steps)))
            case Heartbeat():
                pass
            case ErrorReport():
                log.warning("host %s: worker error: %s", self.name, message.error)
            case _:
                log.warning("host %s: unexpected %s from the worker", self.name, type(message).__name__)

    async def keep_alive(self, timeouts: Timeouts) -> None:
        """Send a heartbeat every interval; a link silent past ``heartbeat_timeout_s`` is lost."""
        seq = 0
        while not self.lost:
            await anyio.sleep(timeouts.heartbeat_interval_s)
            if time.monotonic() - self._last_heard > timeouts.heartbeat_timeout_s:
                self.lose(f"silent for more than {timeouts.heartbeat_timeout_s:g} s")
                self._release_waiters()
                with contextlib.suppress(Exception):
                    await self.link.stream.aclose()
                return
            with anyio.move_on_after(timeouts.heartbeat_interval_s), contextlib.suppress(LinkLost):
                await self.send(Heartbeat(id=self.next_id(), seq=seq, sent_at_s=time.time()))
            seq += 1

    def _release_waiters(self) -> None:
        """Wake everyone waiting for a reply on this link: they see it lost."""
        for stream in self._replies.values():
            stream.close()
        for episode in self._episodes.values():
            episode.reply.close()

    def lose(self, why: str) -> None:
        if not self.lost:
            self.lost = why
            log.warning("host %s: link lost: %s", self.name, why)
