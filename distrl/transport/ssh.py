"""``SshHost``: the worker over SSH, under a POSIX shell command line (``remote_command``) in a session
channel without a PTY; its stderr arrives here line by line, each prefixed with the host's name."""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import asyncssh
from anyio.abc import ByteReceiveStream, ByteSendStream

from distrl import config
from distrl.config import Timeouts
from distrl.errors import TransportError, TransportTimeout
from distrl.transport.connection import connect_ssh, reason
from distrl.transport.protocol import DEPLOYED_PYTHON, HostLink, worker_command
from distrl.wire import FrameStream

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SESSION = re.compile(rb"distrl-session ([0-9]+)\r?\n\Z")
"""The remote shell's first line on stdout, before the worker's frames: its pid, which is its group's
(a login script may print before it)."""


@dataclass(frozen=True)
class SshHost:
    """A ``Host`` reached over SSH (``connect_ssh``); the worker runs under ``remote_command``."""

    entry: config.HostEntry
    timeouts: Timeouts

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[HostLink]:
        host, timeouts = self.entry, self.timeouts
        command = remote_command(host, timeouts)
        async with connect_ssh(host, timeouts) as connection:
            process, session = await _start_remote(connection, command, host, timeouts.ssh_login_s)
            stream = FrameStream.from_pair(
                receive=_ChannelReceiveStream(process.stdout), send=_ChannelSendStream(process.stdin)
            )
            forwarded = anyio.Event()
            failure: Exception | None = None
            async with anyio.create_task_group() as tg:
                stderr = f"stderr {host.name}"
                tg.start_soon(_forward_stderr, process.stderr, host.name, forwarded, name=stderr)
                try:
                    yield HostLink(host=host, stream=stream)
                except Exception as exc:
                    failure = exc  # raised below as itself, not wrapped in the task group's ExceptionGroup
                finally:
                    with anyio.CancelScope(shield=True):
                        await _stop_remote(connection, process, session, stream, host, timeouts.cleanup_s)
                        with anyio.move_on_after(timeouts.cleanup_s):
                            await forwarded.wait()
                    tg.cancel_scope.cancel()
            if failure is not None:
                raise failure


def remote_command(host: config.HostEntry, timeouts: Timeouts) -> str:
    """The POSIX shell command line that starts the worker over SSH: ``worker_command`` in
    ``host.workdir`` with ``host.env``, every value quoted. It first prints ``distrl-session <pid>``
    (the shell's pid, which sshd made a process group leader) on stdout, before any frame; when the
    worker exits, it signals that group (whatever the worker started), then exits with its status."""
    for key in host.env:
        if not _ENV_NAME.fullmatch(key):
            raise TransportError(
                f"host {host.name!r}: {key!r} is not an environment variable name",
                host=host.name,
                phase="start",
            )
    python, *args = worker_command(host, timeouts)
    assignments = [shlex.quote(f"{key}={value}") for key, value in host.env.items()]
    choose = ""
    if not host.python:  # the deployed interpreter where there is one, else python3
        choose = f'p={remote_path(DEPLOYED_PYTHON)}; [ -x "$p" ] || p=python3; '
    interpreter = '"$p"' if choose else remote_path(python)
    run = " ".join([*(["env", *assignments] if assignments else []), interpreter, shlex.join(args)])
    if host.workdir:
        problem = shlex.quote(f"distrl: the workdir {host.workdir} is not a folder on this host")
        enter = f"cd -- {remote_path(host.workdir)} 2>/dev/null || {{ echo {problem} >&2; exit 3; }}"
        run = f"{{ {enter}; }} && {run}"
    return (
        f"echo distrl-session $$; {choose}{run}; "
        "status=$?; trap '' TERM; kill -s TERM -- -$$ 2>/dev/null; exit $status"
    )


def remote_path(path: str) -> str:
    """``path`` quoted for the remote shell; a leading ``~/`` is the remote home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class _ChannelReceiveStream(ByteReceiveStream):
    """The remote worker's stdout as an anyio byte stream."""

    def __init__(self, reader: asyncssh.SSHReader[bytes]) -> None:
        self._reader = reader
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except (OSError, asyncssh.Error) as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._closed = True


class _ChannelSendStream(ByteSendStream):
    """The remote worker's stdin as an anyio byte stream; closing it sends end of input."""

    def __init__(self, writer: asyncssh.SSHWriter[bytes]) -> None:
        self._writer = writer
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (OSError, asyncssh.Error) as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError, asyncssh.Error):
                self._writer.write_eof()


async def _start_remote(
    connection: asyncssh.SSHClientConnection, command: str, host: config.HostEntry, timeout_s: float
) -> tuple[asyncssh.SSHClientProcess[bytes], int]:
    """Run ``command`` in a session channel (no PTY); returns it and the remote shell's process group,
    which the shell announces on stdout before the worker starts (login scripts may print first)."""
    name = host.name
    process: asyncssh.SSHClientProcess[bytes] | None = None
    try:
        with anyio.fail_after(timeout_s):
            process = await connection.create_process(command, encoding=None, request_pty=False)
            log.debug("host %s: worker started over SSH: %s", name, command)
            while line := await process.stdout.readline():
                match = _SESSION.search(line)
                printed = line[: match.start()] if match else line
                if printed.strip():
                    _print_line(name, printed)  # what a login script printed
                if match:
                    return process, int(match[1])
    except TimeoutError:
        if process is not None:
            process.close()
        raise TransportTimeout(
            f"host {name!r}: the SSH server did not start the worker within {timeout_s:g} s",
            host=name,
            phase="start",
            timeout_s=timeout_s,
        ) from None
    except (OSError, asyncssh.Error) as exc:
        raise TransportError(
            f"host {name!r}: the SSH server could not start the worker: {reason(exc)}",
            host=name,
            phase="start",
        ) from exc
    with anyio.move_on_after(timeout_s), contextlib.suppress(OSError, asyncssh.Error):
        for line in (await process.stderr.read()).splitlines():
            _print_line(name, line)  # the shell's complaint
    process.close()
    raise TransportError(
        f"host {name!r}: the login shell exited before starting the worker (see its output above); "
        "distrl needs a POSIX shell (sh, bash, zsh) as the login shell",
        host=name,
        phase="start",
    )


def _print_line(name: str, line: bytes) -> None:
    print(f"[{name}] {line.decode(errors='replace').rstrip()}", file=sys.stderr, flush=True)


async def _forward_stderr(reader: asyncssh.SSHReader[bytes], name: str, done: anyio.Event) -> None:
    """Copy the remote worker's stderr to ours, a line at a time, each prefixed with the host's name."""
    try:
        while line := await reader.readline():
            _print_line(name, line)
    except (OSError, asyncssh.Error):
        pass  # the link dropped: the frame stream reports it
    finally:
        done.set()


async def _stop_remote(
    connection: asyncssh.SSHClientConnection,
    process: asyncssh.SSHClientProcess[bytes],
    session: int,
    stream: FrameStream,
    host: config.HostEntry,
    cleanup_s: float,
) -> None:
    """Like ``_stop``: end of input, then SIGTERM and SIGKILL to the worker's process group, ``cleanup_s``
    apart. The signals go by ``kill`` in a second channel of the connection: sshd refuses its own signal
    request for root logins (OpenSSH 9.2 does), and other servers lack it. Closing the connection
    afterwards ends the rest."""
    await stream.aclose()
    signalled = False
    for signal_name in ("TERM", "KILL"):
        with anyio.move_on_after(cleanup_s) as waiting:
            await process.wait_closed()
        if not waiting.cancelled_caught:
            break
        log.warning("host %s: worker still running; sending SIG%s", host.name, signal_name)
        signalled = True
        with anyio.move_on_after(cleanup_s), contextlib.suppress(OSError, asyncssh.Error):
            await connection.run(f"kill -s {signal_name} -- -{session}", check=False)
    process.close()
    status = process.exit_status
    if status and not signalled:
        hints = {
            127: " (command not found: is its python installed there? 'python -m distrl deploy' makes one)",
            3: " (its workdir is missing)",
        }
        hint = hints.get(status, "")
        log.warning("host %s: the worker exited with status %d%s", host.name, status, hint)
