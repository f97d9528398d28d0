"""Batched inference for a worker serving many devices: many coroutines ask, one thread answers in batches.

Each device's episode loop awaits ``batcher(request)``. The ``Batcher`` service gathers requests into a
batch until it holds ``max_batch`` of them or ``max_wait_s`` has passed since the first one, runs the
blocking function (the model) on the whole batch in a worker thread, so the event loop stays free for
heartbeats and device I/O, and hands each requester its own answer. Batches run one at a time, in the
order requests arrived.

Weights change between batches only: ``async with batcher.exclusive():`` waits for the running batch to
finish and holds the next one back until the block ends (the worker swaps in a new adapter version
there).

If the function raises, every request of that batch gets the error; the service goes on with the next
batch. A requester that is cancelled while waiting loses only its own answer.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Batcher", "BatchStats"]

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass
class BatchStats:
    """What a ``Batcher`` has done so far."""

    batches: int = 0
    requests: int = 0
    failed_batches: int = 0
    busy_s: float = 0.0
    """Seconds spent inside the batch function."""

    @property
    def mean_batch(self) -> float:
        return self.requests / self.batches if self.batches else 0.0


@dataclass(eq=False)
class _Request(Generic[In, Out]):
    item: In
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Out | None = None
    error: BaseException | None = None


class Batcher(Generic[In, Out]):
    """Gathers requests from many coroutines into batches for one blocking batch function."""

    def __init__(
        self,
        fn: Callable[[list[In]], Sequence[Out]],
        *,
        max_batch: int,
        max_wait_s: float,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if not (math.isfinite(max_wait_s) and max_wait_s >= 0):
            raise ValueError(f"max_wait_s must be a finite number ≥ 0, got {max_wait_s!r}")
        self.fn = fn
        """Answers a batch: one output per input, in order. Runs in a worker thread."""
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.limiter = limiter
        """Limits the threads running ``fn`` (None: anyio's default limiter)."""
        self.stats = BatchStats()
        send, receive = anyio.create_memory_object_stream[_Request[In, Out]](max_batch * 4)
        self._send: MemoryObjectSendStream[_Request[In, Out]] = send
        self._receive: MemoryObjectReceiveStream[_Request[In, Out]] = receive
        self._turn = anyio.Lock()
        self._running = False

    async def __call__(self, item: In) -> Out:
        """The answer to ``item``, computed in a batch with other requests."""
        if not self._running:
            raise RuntimeError("the batcher is not running: start Batcher.run in a task group first")
        request: _Request[In, Out] = _Request(item)
        try:
            await self._send.send(request)  # waits when the queue is full: backpressure
        except anyio.ClosedResourceError:
            raise RuntimeError("the batcher stopped before answering") from None
        await request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result  # type: ignore[return-value]  # set whenever error is None

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """No batch runs inside this block; it starts once the running batch has finished."""
        async with self._turn:
            yield

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The service: batches until cancelled. Start it with ``await tg.start(batcher.run)``.

        When it stops, every request it has not answered fails with ``RuntimeError``.
        """
        self._running = True
        task_status.started()
        batch: list[_Request[In, Out]] = []
        try:
            while True:
                batch = [await self._receive.receive()]
                await self._fill(batch)
                async with self._turn:
                    await self._answer(batch)
        finally:
            self._running = False
            self._send.close()
            stopped = RuntimeError("the batcher stopped before answering")
            while True:
                try:
                    batch.append(self._receive.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            for request in batch:
                if not request.done.is_set():
                    request.error = stopped
                    request.done.set()
            self._receive.close()

    async def _fill(self, batch: list[_Request[In, Out]]) -> None:
        """Add requests to ``batch`` until it is full or ``max_wait_s`` has passed since the first."""
        with anyio.move_on_after(self.max_wait_s):
            while len(batch) < self.max_batch:
                batch.append(await self._receive.receive())
        while len(batch) < self.max_batch:  # whatever is already queued joins without waiting
            try:
                batch.append(self._receive.receive_nowait())
            except anyio.WouldBlock:
                break

    def _call(self, items: list[In]) -> Sequence[Out]:
        outputs = self.fn(items)
        if len(outputs) != len(items):
            raise RuntimeError(f"batch function gave {len(outputs)} answers for {len(items)} requests")
        return outputs

    async def _answer(self, batch: list[_Request[In, Out]]) -> None:
        items = [request.item for request in batch]
        started = anyio.current_time()
        self.stats.batches += 1
        self.stats.requests += len(batch)
        try:
            outputs = await anyio.to_thread.run_sync(self._call, items, limiter=self.limiter)
        except Exception as exc:  # every requester of this batch gets it; the service goes on
            self.stats.failed_batches += 1
            for request in batch:
                request.error = exc
                request.done.set()
            return
        finally:
            self.stats.busy_s += anyio.current_time() - started
        for request, output in zip(batch, outputs, strict=True):
            request.result = output
            request.done.set()
