"""Hosts: where worker agents run, and the framed stream to each.

``LocalHost`` starts ``<python> -m distrl worker`` as a child process and speaks frames over its
stdin/stdout; the worker's stderr goes to ours. ``open_host`` picks the implementation for an inventory
entry. SSH hosts (``SshHost``, over asyncssh) arrive with the distributed runtime; until then an SSH
entry is refused with a ``TransportError`` that says so.

A worker exits by itself when its stdin closes (the learner died or the link dropped), so no worker
outlives its learner.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator
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


def worker_command(host: Host, timeouts: Timeouts) -> list[str]:
    """The argv that starts the worker agent on ``host`` (no shell: values are never interpreted).

    The worker logs as verbosely as this process does, and waits for the learner's hello as long as
    ``timeouts.handshake_s``."""
    verbosity = (
        ["-vv"] if log.isEnabledFor(logging.DEBUG) else ["-v"] if log.isEnabledFor(logging.INFO) else []
    )
    handshake = ["--handshake-timeout", f"{timeouts.handshake_s:g}"]
    return [host.python, "-m", "distrl", *verbosity, "worker", "--host", host.name, *handshake]


@contextlib.asynccontextmanager
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


@contextlib.asynccontextmanager
async def _local_worker(host: Host, timeouts: Timeouts) -> AsyncIterator[HostLink]:
    env = {**os.environ, **host.env}
    command = worker_command(host, timeouts)
    if host.workdir and not await anyio.Path(host.workdir).is_dir():
        raise TransportError(
            f"host {host.name!r}: workdir {host.workdir} is not a folder", host=host.name, phase="start"
        )
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
    except (OSError, ValueError) as exc:
        raise TransportError(
            f"host {host.name!r}: cannot start the worker ({' '.join(command)}): "
            f"{getattr(exc, 'strerror', None) or exc}",
            host=host.name,
            phase="start",
        ) from exc
    assert process.stdin is not None
    assert process.stdout is not None
    stream = FrameStream.from_pair(receive=process.stdout, send=process.stdin)
    log.debug("host %s: worker pid %d started: %s", host.name, process.pid, command)
    try:
        yield HostLink(host=host, stream=stream)
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, stream, host, timeouts.cleanup_s)


async def _stop(process: Process, stream: FrameStream, host: Host, cleanup_s: float) -> None:
    """Close the worker's stdin (it exits on end of input); past ``cleanup_s``, SIGTERM its process group,
    and past another ``cleanup_s``, SIGKILL it. Whatever the worker started dies with its group."""
    await stream.aclose()
    for signal_number in (signal.SIGTERM, signal.SIGKILL):
        with anyio.move_on_after(cleanup_s):
            await process.wait()
        if process.returncode is not None:
            break
        log.warning(
            "host %s: worker %d still running; sending %s", host.name, process.pid, signal_number.name
        )
        _kill_group(process.pid, signal_number)
    with anyio.move_on_after(cleanup_s):
        await process.aclose()
    _kill_group(process.pid, signal.SIGKILL)  # leftovers of a worker that exited


def _kill_group(pgid: int, signal_number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal_number)
