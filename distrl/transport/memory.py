"""``MemoryHost``: the worker agent in this process, over in-memory byte streams (for tests).

As httpx's ``MockTransport`` runs the real client over an in-memory transport, a ``MemoryHost`` runs the
real worker protocol (``distrl.wire`` frames, encoded and decoded) between the learner and an agent
coroutine in this event loop: no process, no pipe, no SSH. The agent is handed in (``Agent``), so that
the transport names no worker: tests pass ``distrl.worker.serve`` wrapped to this signature, or one of
their own (a worker slow to take weights, one that ignores end of input).

It keeps the ``Host`` contract where a coroutine can: on exit, end of input first (the agent returns
by itself), and past ``cleanup_s`` the agent is cancelled, the in-memory SIGTERM. An agent that returns
or fails closes its end, as a worker process that exits closes its pipes: the learner reads end of
stream and loses the link. ``host.python``, ``workdir`` and ``env`` mean nothing in this process and are
not used.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from distrl import config
from distrl.config import Timeouts
from distrl.errors import WireError
from distrl.transport.protocol import HostLink
from distrl.wire import FrameStream

__all__ = ["Agent", "MemoryHost", "frame_pipe"]

log = logging.getLogger(__name__)

Agent = Callable[[FrameStream, config.HostEntry, Timeouts], Awaitable[object]]
"""A worker agent's entry coroutine: it serves the learner on the stream until end of input, for the
host as the inventory names it, under the run's timeouts; what it returns is its exit status."""

PIPE_CHUNKS = 16
"""How many writes each direction holds before a writer waits for its reader, as a pipe's buffer."""


@dataclass(frozen=True)
class MemoryHost:
    """A ``Host`` whose worker is ``agent``, run in this process over a ``frame_pipe``."""

    entry: config.HostEntry
    timeouts: Timeouts
    agent: Agent

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[HostLink]:
        host, timeouts = self.entry, self.timeouts
        learner, worker = frame_pipe()
        finished = anyio.Event()
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._serve, worker, finished, name=f"worker {host.name} (in memory)")
            try:
                yield HostLink(host=host, stream=learner)
            except Exception as exc:
                failure = exc  # raised below as itself, not wrapped in the task group's ExceptionGroup
            finally:
                with anyio.CancelScope(shield=True):
                    await learner.aclose()  # end of input: the agent returns by itself
                    with anyio.move_on_after(timeouts.cleanup_s):
                        await finished.wait()
                    if not finished.is_set():
                        log.warning("host %s: in-memory worker still running; cancelling it", host.name)
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def _serve(self, stream: FrameStream, finished: anyio.Event) -> None:
        """Run the agent as a process would run: its failure is its own (logged, never the learner's),
        and its end closes its streams."""
        name = self.entry.name
        try:
            status = await self.agent(stream, self.entry, self.timeouts)
            log.debug("host %s: in-memory worker exited with %s", name, status)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.info("worker %s: the learner is gone; exiting", name)
        except (TimeoutError, WireError) as exc:
            log.error("worker %s: %s", name, str(exc) or type(exc).__name__)
        except Exception:  # a crash of the worker loses its link, not the learner's run
            log.exception("host %s: in-memory worker failed", name)
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            finished.set()


def frame_pipe() -> tuple[FrameStream, FrameStream]:
    """Two ``FrameStream`` ends joined in memory: what one sends, the other receives, as frames of
    bytes (encoded, limited and decoded as on a pipe). Closing an end is end of input for the other,
    whose sends then fail with ``anyio.BrokenResourceError``."""
    down, down_end = anyio.create_memory_object_stream[bytes](PIPE_CHUNKS)
    up, up_end = anyio.create_memory_object_stream[bytes](PIPE_CHUNKS)
    one = FrameStream.from_pair(receive=_BytesIn(up_end), send=_BytesOut(down))
    other = FrameStream.from_pair(receive=_BytesIn(down_end), send=_BytesOut(up))
    return one, other


class _BytesOut(ByteSendStream):
    """The writing end of an in-memory pipe."""

    def __init__(self, chunks: MemoryObjectSendStream[bytes]) -> None:
        self._chunks = chunks

    async def send(self, item: bytes) -> None:
        if item:
            await self._chunks.send(bytes(item))  # the writer may reuse its buffer, as with a pipe

    async def aclose(self) -> None:
        await self._chunks.aclose()


class _BytesIn(ByteReceiveStream):
    """The reading end of an in-memory pipe: at most ``max_bytes`` a read, the rest kept for the next."""

    def __init__(self, chunks: MemoryObjectReceiveStream[bytes]) -> None:
        self._chunks = chunks
        self._left = memoryview(b"")

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._left:
            self._left = memoryview(await self._chunks.receive())  # EndOfStream once the writer closed
        data, self._left = self._left[:max_bytes], self._left[max_bytes:]
        return bytes(data)

    async def aclose(self) -> None:
        self._left = memoryview(b"")
        await self._chunks.aclose()
