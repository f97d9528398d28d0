"""The learner's end of a worker's link (``distrl.fleet.link``) over a real socket pair: a send that
outlasts its deadline loses the link, a send its caller cancels (the run stopping) does not."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator

import anyio
import pytest
from anyio.abc import SocketStream

from distrl.config import HostEntry
from distrl.fleet.link import Link, LinkLost
from distrl.transport import HostLink
from distrl.wire import FrameStream, Heartbeat, Weights

pytestmark = pytest.mark.anyio

BLOB_BYTES = 8 * 1024 * 1024
"""Far more than a socket pair's buffers hold: its send waits, mid-frame, while the worker does not read."""


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Link, socket.socket]]:
    """A link, and its worker's end of the socket pair: nothing reads it until a test does."""
    ours, theirs = socket.socketpair()
    learner = FrameStream(await SocketStream.from_socket(ours))
    link = Link(HostLink(host=HostEntry(name="h1", address="localhost"), stream=learner))
    try:
        yield link, theirs
    finally:
        await learner.aclose()
        theirs.close()


def _big(id: int) -> Weights:
    return Weights(version=1, base_version=None, kind="full", checksum="00", blob=bytes(BLOB_BYTES), id=id)


async def test_a_send_past_its_deadline_loses_the_link(
    pair: tuple[Link, socket.socket], caplog: pytest.LogCaptureFixture
) -> None:
    link, _ = pair
    with caplog.at_level(logging.WARNING), pytest.raises(TimeoutError):
        await link.request(_big(link.next_id()), timeout_s=0.5)
    assert link.lost == "the Weights could not be sent in time"
    assert "link lost: the Weights could not be sent in time" in caplog.text
    with pytest.raises(LinkLost):
        await link.send(Heartbeat(id=link.next_id(), seq=0, sent_at_s=0.0))


async def test_a_send_its_caller_cancels_leaves_the_link_up_until_a_broken_frame_is_found(
    pair: tuple[Link, socket.socket], caplog: pytest.LogCaptureFixture
) -> None:
    link, _ = pair
    with caplog.at_level(logging.WARNING):
        with anyio.move_on_after(0.5) as stop:  # the run stopping, long before the request's deadline
            await link.request(_big(link.next_id()), timeout_s=60)
        assert stop.cancelled_caught
        assert link.lost == ""
        assert "link lost" not in caplog.text
        # the cancelled send left its frame half-written: the next send finds the stream broken
        with pytest.raises(LinkLost):
            await link.send(Heartbeat(id=link.next_id(), seq=0, sent_at_s=0.0))
    assert link.lost.startswith("the worker's stream broke: an earlier send stopped in the middle")


async def test_a_send_cancelled_before_it_began_leaves_the_link_usable(
    pair: tuple[Link, socket.socket],
) -> None:
    link, theirs = pair
    worker = FrameStream(await SocketStream.from_socket(theirs))
    with anyio.CancelScope() as scope:
        scope.cancel()  # cancelled before its first byte: nothing of the frame was written
        await link.request(Heartbeat(id=link.next_id(), seq=0, sent_at_s=0.0), timeout_s=60)
    assert link.lost == ""
    await link.send(Heartbeat(id=link.next_id(), seq=1, sent_at_s=0.0))
    with anyio.fail_after(5):
        received = await worker.receive()
    assert isinstance(received, Heartbeat)
    assert received.seq == 1
