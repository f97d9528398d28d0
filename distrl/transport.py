"""Hosts: where worker agents run, and the framed stream to each.

``open_host`` starts ``<python> -m distrl worker`` for one inventory entry and yields a ``HostLink``:
the host and a ``FrameStream`` over the worker's stdin/stdout. On exit it stops the worker the same way
for every transport: end of input first (the worker exits by itself), then SIGTERM and SIGKILL to its
process group, ``cleanup_s`` apart.

- Local hosts: a child process in its own session; its stderr goes to ours.
- SSH hosts (asyncssh): one connection per host, through ``proxy_jump`` when set, with keepalives
  every ``heartbeat_interval_s`` (the link counts as lost after ``heartbeat_timeout_s`` of silence).
  TCP connect and key exchange must finish within ``ssh_connect_s``, authentication within
  ``ssh_login_s``. Host keys are checked against ``known_hosts_file`` (``~/.ssh/known_hosts``) and
  never added; ``known_hosts = "ignore"`` skips the check, with a warning. The client key is
  ``identity_file`` alone, or the SSH agent's and the default keys. ``~/.ssh/config`` is not read: the
  inventory alone says how to reach a host. A jump host is checked and logged in to the same way (its
  user defaults to ``user``), and the connection to the host is tunnelled through it. The worker runs
  without a PTY (frames are binary) under a POSIX shell command line,
  ``cd <workdir> && env K=V ... <python> -m distrl worker ...``, every value quoted (``~/`` at the
  start of ``workdir`` or ``python`` means the remote home); an empty ``python`` is
  ``~/.distrl/venv/bin/python`` where ``python -m distrl deploy`` made it, else ``python3``. Its
  stderr arrives here line by line, each prefixed with the host's name. ``connect_ssh`` makes the same
  connection for others (``distrl.deploy``).

No worker outlives its learner: a worker exits when its stdin closes, and a dead learner or a dropped
link closes it (the kernel closes a local pipe; sshd closes the session's pipes when the connection
goes). Over SSH the command line then signals the worker's own process group (sshd made it a session
of its own), so whatever the worker started goes too. Failures are ``TransportError`` (or
``TransportTimeout``) with a ``phase``: ``connect``, ``host_key``, ``login`` or ``start``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import asyncssh
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from distrl.config import Host, Timeouts
from distrl.errors import TransportError, TransportTimeout
from distrl.wire import FrameStream

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SESSION = re.compile(rb"distrl-session ([0-9]+)\r?\n\Z")
"""The remote shell's first line on stdout, before the worker's frames: its pid, which is its group's
(a login script may print before it)."""
_JUMP = re.compile(r"(?:(?P<user>[^\s@:]+)@)?(?P<address>[^\s@:/]+)(?::(?P<port>[0-9]{1,5}))?")


DEPLOYED_PYTHON = "~/.distrl/venv/bin/python"
"""The interpreter ``python -m distrl deploy`` installs on an SSH host (``~/`` is the remote home)."""


@dataclass(frozen=True, kw_only=True)
class HostLink:
    """A running worker on a host, and the framed stream to it."""

    host: Host
    stream: FrameStream


def worker_command(host: Host, timeouts: Timeouts) -> list[str]:
    """The argv that starts the worker agent on ``host`` (no shell: values are never interpreted).

    The worker logs as verbosely as this process does, waits for the learner's hello as long as
    ``timeouts.handshake_s``, and leaves a learner silent past ``timeouts.heartbeat_timeout_s``. An
    empty ``host.python`` is this interpreter locally; over SSH, ``DEPLOYED_PYTHON`` where ``deploy``
    made it, else ``python3`` (``remote_command`` decides on the host)."""
    verbosity = (
        ["-vv"] if log.isEnabledFor(logging.DEBUG) else ["-v"] if log.isEnabledFor(logging.INFO) else []
    )
    handshake = [
        "--silence-timeout",
        f"{timeouts.heartbeat_timeout_s:g}",
        "--handshake-timeout",
        f"{timeouts.handshake_s:g}",
    ]
    python = host.python or (sys.executable if host.is_local else DEPLOYED_PYTHON)
    return [python, "-m", "distrl", *verbosity, "worker", "--host", host.name, *handshake]


def remote_command(host: Host, timeouts: Timeouts) -> str:
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


@contextlib.asynccontextmanager
async def open_host(host: Host, timeouts: Timeouts) -> AsyncIterator[HostLink]:
    """Start the worker on ``host`` and yield the link; on exit, stop it within ``cleanup_s`` steps."""
    worker = _local_worker if host.is_local else _ssh_worker
    async with worker(host, timeouts) as link:
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


# -- SSH ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Endpoint:
    """One SSH server to log in to: the host itself, or its jump host."""

    address: str
    port: int
    user: str
    """Empty for the current user."""
    role: str
    """How messages name it: ``"127.0.0.1 port 22"`` or ``"jump host bastion port 22"``."""

    @property
    def known_hosts_name(self) -> str:
        """The name of its entry in a known_hosts file."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


def _endpoints(host: Host) -> tuple[_Endpoint | None, _Endpoint]:
    """The jump host (None when there is none) and the host."""
    target = _Endpoint(
        address=host.address, port=host.port, user=host.user, role=f"{host.address} port {host.port}"
    )
    if not host.proxy_jump:
        return None, target
    match = _JUMP.fullmatch(host.proxy_jump)
    port = int(match["port"]) if match and match["port"] else 22
    if match is None or not 1 <= port <= 65535:
        raise TransportError(
            f"host {host.name!r}: proxy_jump {host.proxy_jump!r} is not [user@]host[:port]",
            host=host.name,
            phase="connect",
        )
    jump = _Endpoint(
        address=match["address"],
        port=port,
        user=match["user"] or host.user,
        role=f"jump host {match['address']} port {port}",
    )
    return jump, target


class _Attempt(asyncssh.SSHClient):
    """Follows one connection attempt: its phase, the host key offered, and the login deadline."""

    def __init__(self, scope: anyio.CancelScope, login_s: float) -> None:
        self.phase = "connect"
        self.offered_key: asyncssh.SSHKey | None = None
        self.peer_ip = ""
        self._scope = scope
        self._login_s = login_s

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        # Called only for a key that is not in known_hosts: remember it for the error message.
        self.offered_key = key
        self.peer_ip = addr
        return False

    def begin_auth(self, username: str) -> None:
        # Key exchange is done (the host key checked): authentication gets its own time limit.
        self.phase = "login"
        self._scope.deadline = anyio.current_time() + self._login_s


@dataclass(frozen=True, kw_only=True)
class _Credentials:
    """What every connection to one host (and its jump host) presents and checks."""

    known_hosts: asyncssh.SSHKnownHosts | None
    """None: host keys are not checked."""
    known_hosts_file: str
    client_keys: Sequence[asyncssh.SSHKeyPair] | None
    """None: the agent's and the default keys."""


def _known_hosts_path(host: Host) -> str:
    return host.known_hosts_file or os.path.expanduser("~/.ssh/known_hosts")


async def _credentials(host: Host) -> _Credentials:
    path = _known_hosts_path(host)
    known: asyncssh.SSHKnownHosts | None = None
    if host.known_hosts == "ignore":
        log.warning(
            'host %s: not checking the SSH host key of %s (known_hosts = "ignore"); anyone on the path '
            "can impersonate it",
            host.name,
            host.address,
        )
    else:
        try:
            known = await anyio.to_thread.run_sync(asyncssh.read_known_hosts, path)
        except FileNotFoundError:
            known = asyncssh.import_known_hosts("")
        except (OSError, ValueError) as exc:
            raise TransportError(
                f"host {host.name!r}: cannot read the known_hosts file {path}: {_reason(exc)}",
                host=host.name,
                phase="host_key",
            ) from exc
    keys: Sequence[asyncssh.SSHKeyPair] | None = None
    if host.identity_file:
        try:
            keys = await anyio.to_thread.run_sync(asyncssh.load_keypairs, [host.identity_file])
        except (OSError, asyncssh.KeyImportError) as exc:
            raise TransportError(
                f"host {host.name!r}: cannot use the identity file {host.identity_file}: {_reason(exc)}",
                host=host.name,
                phase="login",
            ) from exc
    return _Credentials(known_hosts=known, known_hosts_file=path, client_keys=keys)


async def _connect(
    host: Host,
    endpoint: _Endpoint,
    credentials: _Credentials,
    timeouts: Timeouts,
    tunnel: asyncssh.SSHClientConnection | None = None,
) -> asyncssh.SSHClientConnection:
    """Log in to ``endpoint`` (through ``tunnel``), within ``ssh_connect_s`` then ``ssh_login_s``."""
    scope = anyio.CancelScope(deadline=anyio.current_time() + timeouts.ssh_connect_s)
    attempt = _Attempt(scope, timeouts.ssh_login_s)
    options: dict[str, Any] = {
        "config": None,
        "client_factory": lambda: attempt,
        "known_hosts": credentials.known_hosts,
        "keepalive_interval": timeouts.heartbeat_interval_s,
        "keepalive_count_max": max(1, round(timeouts.heartbeat_timeout_s / timeouts.heartbeat_interval_s)),
        # The scope above is the limit; asyncssh's own is a backstop that never fires first.
        "login_timeout": timeouts.ssh_connect_s + timeouts.ssh_login_s + 1,
    }
    if endpoint.user:
        options["username"] = endpoint.user
    if credentials.client_keys is not None:
        options.update(client_keys=credentials.client_keys, agent_path=None)
    if tunnel is not None:
        options["tunnel"] = tunnel
    name = host.name
    connection: asyncssh.SSHClientConnection | None = None
    try:
        with scope:
            connection = await asyncssh.connect(endpoint.address, endpoint.port, **options)
    except asyncssh.HostKeyNotVerifiable as exc:
        raise _host_key_error(host, endpoint, credentials, attempt) from exc
    except asyncssh.PermissionDenied as exc:
        user = endpoint.user or "the current user"
        keys = (
            f"the key in {host.identity_file}" if host.identity_file else "the SSH agent's and default keys"
        )
        raise TransportError(
            f"host {name!r}: login as {user} at {endpoint.role} failed with {keys}; add the public key to "
            "that account's ~/.ssh/authorized_keys, or set identity_file",
            host=name,
            phase="login",
        ) from exc
    except (OSError, asyncssh.Error) as exc:
        doing = "cannot connect to" if attempt.phase == "connect" else "login failed at"
        raise TransportError(
            f"host {name!r}: {doing} {endpoint.role}: {_reason(exc)}", host=name, phase=attempt.phase
        ) from exc
    if connection is None:
        limit = timeouts.ssh_connect_s if attempt.phase == "connect" else timeouts.ssh_login_s
        doing = "no SSH connection to" if attempt.phase == "connect" else "no login at"
        raise TransportTimeout(
            f"host {name!r}: {doing} {endpoint.role} within {limit:g} s",
            host=name,
            phase=attempt.phase,
            timeout_s=limit,
        )
    return connection


def _host_key_error(
    host: Host, endpoint: _Endpoint, credentials: _Credentials, attempt: _Attempt
) -> TransportError:
    entry = endpoint.known_hosts_name
    path = credentials.known_hosts_file
    offered = f" ({attempt.offered_key.get_fingerprint()})" if attempt.offered_key else ""
    port = f"-p {endpoint.port} " if endpoint.port != 22 else ""
    keyscan = f"ssh-keyscan {port}{shlex.quote(endpoint.address)} >> {shlex.quote(path)}"
    known = credentials.known_hosts
    if known is not None and known.match(endpoint.address, attempt.peer_ip, endpoint.port)[0]:
        message = (
            f"host {host.name!r}: the host key of {endpoint.role}{offered} does not match the one for "
            f"{entry} in {path}: the host was reinstalled, or someone is intercepting the connection; "
            f"if the change is expected, run 'ssh-keygen -R {shlex.quote(entry)} -f {shlex.quote(path)}' "
            f"and then '{keyscan}'"
        )
    else:
        message = (
            f"host {host.name!r}: the host key of {endpoint.role}{offered} is not in {path}; add it with "
            f"'{keyscan}' (and compare the fingerprint with the host's), or set "
            'known_hosts = "ignore" for a throwaway host'
        )
    return TransportError(message, host=host.name, phase="host_key")


def _reason(exc: BaseException) -> str:
    """The human part of an asyncssh or OS error."""
    if isinstance(exc, asyncssh.Error) and exc.reason:
        return str(exc.reason)
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)  # asyncio's own text names the address again
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # a resolver error (negative errno)
    return str(exc) or type(exc).__name__


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


@contextlib.asynccontextmanager
async def connect_ssh(host: Host, timeouts: Timeouts) -> AsyncIterator[asyncssh.SSHClientConnection]:
    """An SSH connection to ``host`` as ``run`` makes it (host keys checked, through ``proxy_jump``,
    ``identity_file`` or the agent, keepalives), closed within ``cleanup_s`` on exit. Failures are
    ``TransportError`` with phase ``connect``, ``host_key`` or ``login``."""
    jump, target = _endpoints(host)
    credentials = await _credentials(host)
    async with contextlib.AsyncExitStack() as connections:
        tunnel = None
        if jump is not None:
            tunnel = await _connect(host, jump, credentials, timeouts)
            connections.push_async_callback(_disconnect, tunnel, timeouts.cleanup_s)
        connection = await _connect(host, target, credentials, timeouts, tunnel)
        connections.push_async_callback(_disconnect, connection, timeouts.cleanup_s)
        yield connection


@contextlib.asynccontextmanager
async def _ssh_worker(host: Host, timeouts: Timeouts) -> AsyncIterator[HostLink]:
    command = remote_command(host, timeouts)
    async with connect_ssh(host, timeouts) as connection:
        process, session = await _start_remote(connection, command, host, timeouts.ssh_login_s)
        stream = FrameStream.from_pair(
            receive=_ChannelReceiveStream(process.stdout), send=_ChannelSendStream(process.stdin)
        )
        forwarded = anyio.Event()
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_forward_stderr, process.stderr, host.name, forwarded, name=f"stderr {host.name}")
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


async def _start_remote(
    connection: asyncssh.SSHClientConnection, command: str, host: Host, timeout_s: float
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
            f"host {name!r}: the SSH server could not start the worker: {_reason(exc)}",
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
    host: Host,
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


async def _disconnect(connection: asyncssh.SSHClientConnection, cleanup_s: float) -> None:
    connection.close()
    with anyio.move_on_after(cleanup_s, shield=True):
        await connection.wait_closed()
