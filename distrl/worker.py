"""The worker agent: ``python -m distrl worker``, one per host, speaking frames on stdin/stdout.

The learner starts it (as a subprocess, or over SSH), and it lives exactly as long as its stdin:
end of input means the learner is gone, and the worker exits. Its protocol, in order:

1. receive the learner's ``Hello`` (within ``handshake_s``), check the protocol version;
2. answer with its own ``Hello``: the devices it drives and what it runs on;
3. serve: echo each ``Heartbeat``; answer ``Shutdown`` with an ``Ack`` and exit.

Episodes and weights arrive with the device layer and the policy; until then the worker answers an
``EpisodeRequest`` or ``Weights`` with an ``ErrorReport`` and keeps serving.

Anything the process prints goes to stderr: stdout carries frames only.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from typing import NoReturn

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from distrl import __version__
from distrl.errors import DistrlError, ProtocolMismatch, WireError
from distrl.wire import (
    PROTOCOL_VERSION,
    Ack,
    ErrorReport,
    FrameStream,
    Heartbeat,
    Hello,
    Message,
    Shutdown,
)

log = logging.getLogger(__name__)


async def serve(stream: FrameStream, *, host: str, handshake_s: float = 60.0) -> int:
    """Run the worker protocol on ``stream`` until shutdown or end of input; returns an exit status."""
    with anyio.fail_after(handshake_s):
        first = await stream.receive()
    if not isinstance(first, Hello) or first.role != "learner":
        await stream.send(ErrorReport(ref=first.id, error=WireError("expected the learner's hello first")))
        return 2
    if first.protocol != PROTOCOL_VERSION:
        mismatch = ProtocolMismatch(
            f"learner speaks protocol {first.protocol}, this worker {PROTOCOL_VERSION}",
            ours=PROTOCOL_VERSION,
            theirs=first.protocol,
        )
        await stream.send(ErrorReport(ref=first.id, error=mismatch))
        return 2
    await stream.send(
        Hello(
            id=first.id,
            role="worker",
            protocol=PROTOCOL_VERSION,
            distrl_version=__version__,
            host=host,
            devices=first.devices,
            compute={
                "cpus": os.cpu_count() or 1,
                "python": platform.python_version(),
                "platform": platform.platform(terse=True),
                "pid": os.getpid(),
            },
        )
    )
    log.info("worker %s: serving %d device(s)", host, len(first.devices))
    async for message in stream:
        if isinstance(message, Shutdown):
            log.info("worker %s: shutting down (%s)", host, message.reason)
            await stream.send(Ack(ref=message.id, ok=True))
            return 0
        await stream.send(_answer(message))
    log.info("worker %s: the learner closed the link; exiting", host)
    return 0


def _answer(message: Message) -> Message:
    if isinstance(message, Heartbeat):
        return Heartbeat(id=message.id, seq=message.seq, sent_at_s=message.sent_at_s)
    problem = f"this worker cannot serve {type(message).__name__} messages yet"
    return ErrorReport(ref=message.id, error=DistrlError(problem))


class _FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor in a thread; cancellable (the blocked read is abandoned)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        pass


class _FdSendStream(ByteSendStream):
    """Writes a file descriptor in a thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        pass


def main(host: str, *, handshake_s: float = 60.0) -> NoReturn:
    """Entry point of ``python -m distrl worker``: frames on the real stdout, prints on stderr."""
    frames_out = os.dup(1)
    os.dup2(2, 1)  # a stray print() must not corrupt the frame stream
    sys.stdout = sys.stderr
    stream = FrameStream.from_pair(receive=_FdReceiveStream(0), send=_FdSendStream(frames_out))

    async def run() -> int:
        try:
            return await serve(stream, host=host, handshake_s=handshake_s)
        except TimeoutError:
            log.error("worker %s: no hello from the learner within %g s", host, handshake_s)
            return 2
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            log.info("worker %s: the learner is gone; exiting", host)
            return 0
        except WireError as exc:
            log.error("worker %s: bad frame from the learner: %s", host, exc)
            return 2

    status = anyio.run(run)
    # A read of stdin blocked in a thread cannot be interrupted, and a normal interpreter exit would wait
    # for it; leave at once, with the logs flushed.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(status)
