"""Hosts: where worker agents run, and the framed stream to each.

``LocalHost`` starts ``<python> -m distrl worker`` as a child process and speaks frames over its
stdin/stdout; the worker's stderr goes to ours. ``open_host`` picks the implementation for an inventory
entry. SSH hosts (``SshHost``, over asyncssh) arrive with the distributed runtime; until then an SSH
entry is refused with a ``TransportError`` that says so.

A worker exits by itself when its stdin closes (the learner died or the link dropped), so no worker
outlives its learner.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from anyio.abc import Process

from distrl.config import Host, Timeouts
from distrl.errors import TransportError
from distrl.wire import FrameStream

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class HostLink:
    """A running worker on a host, and the framed stream to it."""

    host: Host
    stream: FrameStream
    pid: int | None
    """Process id of the worker where it is a local process."""


def worker_command(host: Host) -> list[str]:
    """The argv that starts the worker agent on ``host`` (no shell: values are never interpreted)."""
    return [host.python, "-m", "distrl", "worker", "--host", host.name]


@asynccontextmanager
async def open_host(host: Host, timeouts: Timeouts) -> AsyncIterator[HostLink]:
    """Start the worker on ``host`` and yield the link; on exit, stop it within ``cleanup_s``."""
    if not host.is_local:
        raise TransportError(
            f"host {host.name!r}: SSH hosts are not supported by this version of distrl yet; "
            'run the worker locally (transport = "local", address = "localhost")',
            host=host.name,
            phase="connect",
        )
    async with _local_worker(host, timeouts) as link:
        yield link


@asynccontextmanager
async def _local_worker(host: Host, timeouts: Timeouts) -> AsyncIterator[HostLink]:
    env = {**os.environ, **host.env}
    command = worker_command(host)
    try:
        process = await anyio.open_process(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            cwd=host.workdir or None,
            env=env,
            start_new_session=True,  # Ctrl-C reaches the learner only; it stops the workers in order.
        )
    except OSError as exc:
        raise TransportError(
            f"host {host.name!r}: cannot start the worker ({' '.join(command)}): {exc.strerror or exc}",
            host=host.name,
            phase="start",
        ) from exc
    assert process.stdin is not None
    assert process.stdout is not None
    stream = FrameStream.from_pair(receive=process.stdout, send=process.stdin)
    log.debug("host %s: worker pid %d started: %s", host.name, process.pid, command)
    try:
        yield HostLink(host=host, stream=stream, pid=process.pid)
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, stream, host, timeouts.cleanup_s)


async def _stop(process: Process, stream: FrameStream, host: Host, cleanup_s: float) -> None:
    """Close the worker's stdin (it exits on EOF), then terminate, then kill, each within ``cleanup_s``."""
    await stream.aclose()
    with anyio.move_on_after(cleanup_s):
        await process.wait()
    if process.returncode is None:
        log.warning("host %s: worker %d did not exit on EOF; terminating it", host.name, process.pid)
        process.terminate()
        with anyio.move_on_after(cleanup_s):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    await process.aclose()
