"""A worker behind a slow link: a real process between the learner and ``python -m distrl worker`` that
holds back each weights message after the first by a fixed delay, as a link shaped to a low bandwidth
would, and passes every other frame at once, both ways (heartbeats and episodes go on).

A host uses it through its ``python`` key: ``write_slow_python(folder, delay_s)`` writes an executable
that takes a Python command line, so that ``python = "<that path>"`` starts the relay, which starts the
real worker (``sys.executable`` and the same arguments) as its child, on its own stdin and stdout::

    python -m distrl.testing.slow_link --delay 15 -- /usr/bin/python3 -m distrl worker --host slow

The relay reads the learner's frames (``distrl.wire``), so a weights message is known by its type; the
worker's frames go back as bytes. It ends when the learner closes its input (the worker's stdin closes in
turn), with the worker's exit status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import AsyncIterable, Awaitable, Callable
from pathlib import Path

import anyio
from anyio.streams.file import FileReadStream, FileWriteStream

from distrl.wire import FrameStream, Message, Weights

__all__ = ["hold_back_weights", "write_slow_python"]


def write_slow_python(folder: Path, delay_s: float) -> Path:
    """An executable in ``folder`` to name as a host's ``python``: it runs this interpreter's commands
    behind a link that holds back each weights message after the first ``delay_s`` seconds."""
    path = folder / f"python-slow-{delay_s:g}s"
    relay = f"{sys.executable} -m distrl.testing.slow_link --delay {delay_s:g}"
    path.write_text(f'#!/bin/sh\nexec {relay} -- {sys.executable} "$@"\n')
    path.chmod(0o755)
    return path


async def hold_back_weights(
    messages: AsyncIterable[Message], send: Callable[[Message], Awaitable[None]], delay_s: float
) -> None:
    """Pass each of ``messages`` to ``send`` as it comes, but each weights message after the first
    ``delay_s`` seconds late (the rest overtake it); return at their end, once those held back are sent."""
    weights = 0

    async def late(message: Message) -> None:
        await anyio.sleep(delay_s)
        await send(message)

    async with anyio.create_task_group() as held:
        async for message in messages:
            if isinstance(message, Weights):
                weights += 1
                if weights > 1:
                    held.start_soon(late, message)
                    continue
            await send(message)


async def _relay(delay_s: float, command: list[str]) -> int:
    learner_in = FileReadStream(os.fdopen(sys.stdin.fileno(), "rb", buffering=0, closefd=False))
    learner_out = FileWriteStream(os.fdopen(sys.stdout.fileno(), "wb", buffering=0, closefd=False))
    async with await anyio.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
    ) as child:
        worker_in, worker_out = child.stdin, child.stdout
        assert worker_in is not None
        assert worker_out is not None
        # the learner's frames in, the worker's input out
        link = FrameStream.from_pair(receive=learner_in, send=worker_in)

        async def down() -> None:
            await hold_back_weights(link, link.send, delay_s)
            await worker_in.aclose()  # end of input reaches the worker, which exits

        async def up() -> None:
            async for chunk in worker_out:
                await learner_out.send(chunk)

        async with anyio.create_task_group() as tg:
            tg.start_soon(down)
            await up()  # the worker's output ends when it exits
            tg.cancel_scope.cancel()
        return await child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m distrl.testing.slow_link", description=__doc__)
    parser.add_argument(
        "--delay", type=float, required=True, help="seconds each weights message after the first waits"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the worker's command line")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.delay < 0:
        parser.error("give a delay of 0 or more and, after --, the worker's command line")
    sys.exit(anyio.run(_relay, args.delay, command))


if __name__ == "__main__":
    main()
