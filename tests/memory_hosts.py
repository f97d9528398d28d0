"""Fleet hosts in this process: ``MemoryHost`` running the real worker agent, and agents of the tests' own.

``worker_agent`` is ``distrl.worker.serve`` as a ``MemoryHost`` calls an agent; ``slow_to_take_weights``
puts a link that holds back weights in front of one. ``MemoryHosts`` (the ``memory_hosts`` fixture of
the fleet's tests) is a ``HostOpener``: given to ``train`` or ``collect`` as ``opener=hosts.open``, it
makes every host the run opens a ``MemoryHost``, and remembers which it opened.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import anyio

from distrl.config import HostEntry, Timeouts
from distrl.testing.slow_link import hold_back_weights
from distrl.transport import Agent, HostLink, MemoryHost, frame_pipe
from distrl.wire import FrameStream
from distrl.worker import serve


async def worker_agent(stream: FrameStream, host: HostEntry, timeouts: Timeouts) -> int:
    """The worker agent (``python -m distrl worker``'s ``serve``) on ``stream``, with the limits
    ``worker_command`` gives the process."""
    return await serve(
        stream, host=host.name, handshake_s=timeouts.handshake_s, silence_s=timeouts.heartbeat_timeout_s
    )


def slow_to_take_weights(delay_s: float, agent: Agent = worker_agent) -> Agent:
    """``agent`` behind a link on which each weights message after the first arrives ``delay_s`` late;
    every other message passes at once, both ways (heartbeats and episodes go on)."""

    async def slow(stream: FrameStream, host: HostEntry, timeouts: Timeouts) -> object:
        near, far = frame_pipe()

        async def down() -> None:
            await hold_back_weights(stream, near.send, delay_s)
            await near.send_eof()  # end of input reaches the agent

        async def up() -> None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for message in near:
                    await stream.send(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(down)
            tg.start_soon(up)
            try:
                status = await agent(far, host, timeouts)
            finally:
                await far.aclose()
                tg.cancel_scope.cancel()
        return status

    return slow


@dataclass
class MemoryHosts:
    """What the fleet opens instead of its hosts' workers: ``MemoryHost``, with the agent ``agents``
    names for a host (``worker_agent`` for the others)."""

    agents: dict[str, Agent] = field(default_factory=dict)
    opened: list[str] = field(default_factory=list)
    """The hosts opened, in order, once per life."""

    def open(self, entry: HostEntry, timeouts: Timeouts) -> contextlib.AbstractAsyncContextManager[HostLink]:
        self.opened.append(entry.name)
        return MemoryHost(entry, timeouts, self.agents.get(entry.name, worker_agent)).open()
