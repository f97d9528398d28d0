"""The worker as a process: frames on stdin and stdout (``python -m distrl worker``), prints on stderr.

The worker lives exactly as long as its stdin: end of input means the learner is gone, and it exits.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import NoReturn

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from distrl.errors import WireError
from distrl.wire import FrameStream
from distrl.worker.agent import serve

log = logging.getLogger(__name__)


class _FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor in a thread; cancellable (the blocked read is abandoned)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.heard_at = 0.0
        """When bytes last came (``time.monotonic``): a big frame still arriving keeps the watchdog quiet."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        self.heard_at = time.monotonic()
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


def main(host: str, *, handshake_s: float = 60.0, silence_s: float = 60.0) -> NoReturn:
    """Entry point of ``python -m distrl worker``: frames on the real stdout, prints on stderr."""
    frames_out = os.dup(1)
    os.dup2(2, 1)  # a stray print() must not corrupt the frame stream
    sys.stdout = sys.stderr
    receive = _FdReceiveStream(0)
    stream = FrameStream.from_pair(receive=receive, send=_FdSendStream(frames_out))

    async def run() -> int:
        try:
            return await serve(
                stream,
                host=host,
                handshake_s=handshake_s,
                silence_s=silence_s,
                bytes_heard=lambda: receive.heard_at,
            )
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
