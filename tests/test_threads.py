"""``Threads``: a blocking call its caller gave up on can never land after the next call begins."""

from __future__ import annotations

import logging
import threading
import time

import anyio
import pytest

from distrl.device.threads import Threads

pytestmark = pytest.mark.anyio


def _threads(limiter: anyio.CapacityLimiter | None = None) -> Threads:
    own = limiter or anyio.CapacityLimiter(4)
    return Threads("emulator-5554", lambda: own)


async def test_the_next_call_waits_for_the_thread_a_cancelled_call_left() -> None:
    threads = _threads()
    log: list[str] = []

    def slow() -> None:
        time.sleep(0.3)  # a command that answers late: it lands after its caller gave up
        log.append("late command landed")

    with anyio.move_on_after(0.05) as scope:
        await threads.run(1.0, slow)
    assert scope.cancelled_caught
    assert log == []  # the caller is gone, its thread is not
    await threads.run(1.0, lambda: log.append("next call"))
    assert log == ["late command landed", "next call"]
    await threads.settle()  # nothing left to wait for
    assert log == ["late command landed", "next call"]


async def test_a_thread_past_its_socket_timeout_is_let_go_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    threads = _threads()
    release = threading.Event()
    with anyio.move_on_after(0.02):
        await threads.run(0.2, release.wait, 5.0)  # hangs past the 0.2 s it promised
    start = anyio.current_time()
    with caplog.at_level(logging.WARNING, logger="distrl.device.threads"):
        assert await threads.run(0.2, lambda: "answered") == "answered"
    waited = anyio.current_time() - start
    release.set()
    assert 0.1 < waited < 1.0  # until the abandoned call's socket timeout, not the thread's end
    assert "emulator-5554: an abandoned device call runs on past its socket timeout" in caplog.messages


async def test_a_call_given_up_before_its_thread_started_never_runs() -> None:
    limiter = anyio.CapacityLimiter(1)
    threads = _threads(limiter)
    ran: list[str] = []
    taken, done = anyio.Event(), anyio.Event()

    async def hold() -> None:  # every worker thread of this device is taken
        async with limiter:
            taken.set()
            await done.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(hold)
        await taken.wait()
        with anyio.move_on_after(0.05) as scope:
            await threads.run(1.0, lambda: ran.append("dropped"))
        assert scope.cancelled_caught
        done.set()
    assert await threads.run(1.0, lambda: "after") == "after"
    assert ran == []


async def test_errors_reach_the_caller_and_leave_nothing_to_wait_for() -> None:
    threads = _threads()

    def broken() -> None:
        raise OSError("connection reset")

    with pytest.raises(OSError, match="connection reset"):
        await threads.run(1.0, broken)
    start = anyio.current_time()
    await threads.settle()
    assert anyio.current_time() - start < 0.1
