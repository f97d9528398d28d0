"""Batched inference: many coroutines, one batch function in a thread, answers to the right askers."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from distrl.policy.batching import Batcher

pytestmark = pytest.mark.anyio


def _doubler(log: list[list[int]]) -> Batcher[int, int]:
    def double(items: list[int]) -> list[int]:
        log.append(list(items))
        return [2 * item for item in items]

    return Batcher(double, max_batch=4, max_wait_s=0.5)


async def test_concurrent_requests_share_batches_and_get_their_own_answers() -> None:
    log: list[list[int]] = []
    batcher = _doubler(log)
    answers: dict[int, int] = {}

    async def ask(n: int) -> None:
        answers[n] = await batcher(n)

    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        async with anyio.create_task_group() as askers:
            for n in range(10):
                askers.start_soon(ask, n)
        tg.cancel_scope.cancel()
    assert answers == {n: 2 * n for n in range(10)}
    assert all(len(batch) <= 4 for batch in log)
    assert sorted(item for batch in log for item in batch) == list(range(10))
    assert len(log) == 3  # 4 + 4 + 2: requests waiting together are batched together
    assert batcher.stats.requests == 10
    assert batcher.stats.batches == 3
    assert batcher.stats.mean_batch == pytest.approx(10 / 3)


async def test_a_lone_request_is_answered_after_max_wait() -> None:
    batcher: Batcher[int, str] = Batcher(lambda items: [str(i) for i in items], max_batch=64, max_wait_s=0.05)
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        with anyio.fail_after(5):
            assert await batcher(7) == "7"
        tg.cancel_scope.cancel()


async def test_the_event_loop_stays_free_while_a_batch_runs() -> None:
    started = threading.Event()

    def slow(items: list[int]) -> list[int]:
        started.set()
        time.sleep(0.3)
        return items

    batcher = Batcher(slow, max_batch=2, max_wait_s=0)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        tg.start_soon(tick)
        await batcher(1)
        tg.cancel_scope.cancel()
    assert started.is_set()
    assert ticks >= 10  # the loop ran other coroutines during the 0.3 s batch


async def test_an_error_reaches_every_request_of_its_batch_and_the_service_goes_on() -> None:
    calls = 0

    def flaky(items: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("model exploded")
        return items

    batcher = Batcher(flaky, max_batch=2, max_wait_s=1.0)
    errors: list[BaseException] = []

    async def ask(n: int) -> None:
        try:
            await batcher(n)
        except ValueError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        async with anyio.create_task_group() as askers:
            askers.start_soon(ask, 1)
            askers.start_soon(ask, 2)
        assert await batcher(3) == 3
        tg.cancel_scope.cancel()
    assert [str(e) for e in errors] == ["model exploded", "model exploded"]
    assert batcher.stats.failed_batches == 1


async def test_a_wrong_number_of_answers_is_an_error() -> None:
    batcher: Batcher[int, int] = Batcher(lambda items: items[:-1], max_batch=4, max_wait_s=0)
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        with pytest.raises(RuntimeError, match="0 answers for 1 requests"):
            await batcher(1)
        tg.cancel_scope.cancel()


async def test_exclusive_holds_batches_back_until_it_ends() -> None:
    log: list[list[int]] = []
    batcher = _doubler(log)
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        answer: list[int] = []
        answered = anyio.Event()

        async def ask() -> None:
            answer.append(await batcher(5))
            answered.set()

        async with batcher.exclusive():
            tg.start_soon(ask)
            await anyio.sleep(0.7)  # longer than max_wait: the batch is ready but may not run
            assert log == []
        with anyio.fail_after(5):
            await answered.wait()
        tg.cancel_scope.cancel()
    assert answer == [10]


async def test_a_cancelled_requester_loses_only_its_own_answer() -> None:
    gate = threading.Event()

    def wait_for_gate(items: list[int]) -> list[int]:
        gate.wait(5)
        return items

    batcher = Batcher(wait_for_gate, max_batch=2, max_wait_s=1.0)
    kept: list[int] = []
    answered = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)

        async def ask(n: int) -> None:
            kept.append(await batcher(n))
            answered.set()

        with anyio.move_on_after(0.1):
            await batcher(1)  # cancelled while its batch waits
        tg.start_soon(ask, 2)
        await anyio.sleep(0.05)
        gate.set()
        with anyio.fail_after(5):
            await answered.wait()
        tg.cancel_scope.cancel()
    assert kept == [2]


async def test_requests_fail_clearly_when_the_service_is_not_running() -> None:
    batcher: Batcher[int, int] = Batcher(lambda items: items, max_batch=1, max_wait_s=0)
    with pytest.raises(RuntimeError, match="not running"):
        await batcher(1)
    gate = threading.Event()

    def blocking(items: list[int]) -> list[int]:
        gate.wait(5)
        return items

    blocked: Batcher[int, int] = Batcher(blocking, max_batch=1, max_wait_s=0)
    outcomes: dict[int, object] = {}

    async def ask(n: int) -> None:
        try:
            outcomes[n] = await blocked(n)
        except RuntimeError as exc:
            outcomes[n] = str(exc)

    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as service:
            await service.start(blocked.run)
            outer.start_soon(ask, 1)  # taken into a batch that blocks
            await anyio.sleep(0.05)
            outer.start_soon(ask, 2)  # queued behind it
            await anyio.sleep(0.05)
            service.cancel_scope.cancel()
            gate.set()
        with pytest.raises(RuntimeError, match="not running"):
            await blocked(3)
    stopped = "the batcher stopped before answering"
    assert outcomes[1] in (1, stopped)  # the batch in the thread finishes either way
    assert outcomes[2] == stopped  # the queued one is told, not left waiting


@pytest.mark.parametrize(("max_batch", "max_wait_s"), [(0, 0.1), (4, -1.0), (4, float("nan"))])
def test_bad_settings_are_refused(max_batch: int, max_wait_s: float) -> None:
    with pytest.raises(ValueError, match="max_"):
        Batcher(lambda items: items, max_batch=max_batch, max_wait_s=max_wait_s)
