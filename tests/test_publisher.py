"""The weight publisher alone, against stand-in links that ack when a test says so.

What it promises: ``publish`` never waits; each link gets the newest version when it is free (the
versions in between skipped), as a diff from the version it acked; a slow link delays no other.
"""

from __future__ import annotations

from typing import cast

import anyio
import pytest
import torch

from distrl.fleet.link import Link
from distrl.fleet.publisher import Publisher
from distrl.wire import Ack, Weights

pytestmark = pytest.mark.anyio


class GatedLink:
    """A link whose worker acks each weights message once the test opens the gate (or at once)."""

    def __init__(self, name: str, *, gated: bool) -> None:
        self.name = name
        self.lost = ""
        self.gated = gated
        self.sent: list[tuple[int, int | None, str]] = []
        self.arrived = anyio.Event()
        self._gate = anyio.Event()
        self._ids = 0

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def open(self) -> None:
        self._gate.set()
        self._gate = anyio.Event()

    async def request(self, message: Weights, timeout_s: float) -> Ack:
        self.sent.append((message.version, message.base_version, message.kind))
        self.arrived.set()
        self.arrived = anyio.Event()
        if self.gated:
            await self._gate.wait()
        return Ack(ref=message.id, ok=True)


def _weights(value: float) -> dict[str, torch.Tensor]:
    return {"a": torch.full((4, 4), value), "b": torch.arange(8, dtype=torch.float32) * value}


async def _settle() -> None:
    for _ in range(50):
        await anyio.sleep(0.01)


async def test_a_busy_link_gets_the_newest_version_and_skips_those_between() -> None:
    publisher = Publisher(0, _weights(0.0), push_timeout_s=30)
    slow, fast = GatedLink("slow", gated=True), GatedLink("fast", gated=False)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for link in (slow, fast):
                tg.start_soon(_catch_up_then_serve, publisher, cast(Link, link))
            await slow.arrived.wait()
            slow.open()  # the catch-up: version 0 in full
            await _settle()
            publisher.publish(1, _weights(1.0))  # returns at once, whoever is slow
            await slow.arrived.wait()  # v1 on its way to the slow link, which holds it
            publisher.publish(2, _weights(2.0))
            publisher.publish(3, _weights(3.0))
            await _settle()
            assert fast.sent[-1][0] == 3  # the fast link was never held up by the slow one
            slow.open()  # v1 acked; the slow link is free, and takes the newest: 3, from 1
            await slow.arrived.wait()
            slow.open()
            await _settle()
            tg.cancel_scope.cancel()
    assert slow.sent == [(0, None, "full"), (1, 0, "diff"), (3, 1, "diff")]  # version 2 skipped
    assert fast.sent[0] == (0, None, "full")
    assert [version for version, _, _ in fast.sent] == sorted({v for v, _, _ in fast.sent})
    assert fast.sent[-1][0] == 3
    assert publisher.pushes == len(slow.sent) + len(fast.sent)


async def _catch_up_then_serve(publisher: Publisher, link: Link) -> None:
    await publisher.catch_up(link)
    await publisher.serve(link)


async def test_publish_returns_without_waiting_for_any_link() -> None:
    publisher = Publisher(0, _weights(0.0), push_timeout_s=30)
    held = GatedLink("held", gated=True)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(publisher.serve, cast(Link, held))
            await held.arrived.wait()  # a full push of version 0, never acked
            for version in range(1, 20):
                publisher.publish(version, _weights(float(version)))  # no await: it cannot wait
            assert publisher.version == 19
            tg.cancel_scope.cancel()
    assert held.sent == [(0, None, "full")]
