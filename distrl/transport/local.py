"""``LocalHost``: the worker as a child process of this one, in its own session; its stderr goes to ours."""

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

from distrl import config
from distrl.config import Timeouts
from distrl.errors import TransportError
from distrl.transport.protocol import HostLink, worker_command
from distrl.wire import FrameStream

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalHost:
    """A ``Host`` on this machine: ``worker_command`` as a subprocess, in ``workdir`` with ``env``."""

    entry: config.HostEntry
    timeouts: Timeouts

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[HostLink]:
        host, timeouts = self.entry, self.timeouts
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


async def _stop(process: Process, stream: FrameStream, host: config.HostEntry, cleanup_s: float) -> None:
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
