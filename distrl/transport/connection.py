"""One SSH connection to a host, as ``run`` and ``deploy`` make it: through ``proxy_jump`` when set,
host keys checked against ``known_hosts_file`` (never added), ``identity_file`` or the agent's and default
keys, keepalives, TCP connect and key exchange within ``ssh_connect_s`` and authentication within
``ssh_login_s``. Failures are ``TransportError`` with phase ``connect``, ``host_key`` or ``login``."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import asyncssh

from distrl import config
from distrl.config import Timeouts
from distrl.errors import TransportError, TransportTimeout

log = logging.getLogger(__name__)

_JUMP = re.compile(r"(?:(?P<user>[^\s@:]+)@)?(?P<address>[^\s@:/]+)(?::(?P<port>[0-9]{1,5}))?")


@contextlib.asynccontextmanager
async def connect_ssh(
    host: config.HostEntry, timeouts: Timeouts
) -> AsyncIterator[asyncssh.SSHClientConnection]:
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


def _endpoints(host: config.HostEntry) -> tuple[_Endpoint | None, _Endpoint]:
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


def _known_hosts_path(host: config.HostEntry) -> str:
    return host.known_hosts_file or os.path.expanduser("~/.ssh/known_hosts")


async def _credentials(host: config.HostEntry) -> _Credentials:
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
                f"host {host.name!r}: cannot read the known_hosts file {path}: {reason(exc)}",
                host=host.name,
                phase="host_key",
            ) from exc
    keys: Sequence[asyncssh.SSHKeyPair] | None = None
    if host.identity_file:
        try:
            keys = await anyio.to_thread.run_sync(asyncssh.load_keypairs, [host.identity_file])
        except (OSError, asyncssh.KeyImportError) as exc:
            raise TransportError(
                f"host {host.name!r}: cannot use the identity file {host.identity_file}: {reason(exc)}",
                host=host.name,
                phase="login",
            ) from exc
    return _Credentials(known_hosts=known, known_hosts_file=path, client_keys=keys)


async def _connect(
    host: config.HostEntry,
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
            f"host {name!r}: {doing} {endpoint.role}: {reason(exc)}", host=name, phase=attempt.phase
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
    host: config.HostEntry, endpoint: _Endpoint, credentials: _Credentials, attempt: _Attempt
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


def reason(exc: BaseException) -> str:
    """The human part of an asyncssh or OS error."""
    if isinstance(exc, asyncssh.Error) and exc.reason:
        return str(exc.reason)
    if isinstance(exc, OSError) and exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)  # asyncio's own text names the address again
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # a resolver error (negative errno)
    return str(exc) or type(exc).__name__


async def _disconnect(connection: asyncssh.SSHClientConnection, cleanup_s: float) -> None:
    connection.close()
    with anyio.move_on_after(cleanup_s, shield=True):
        await connection.wait_closed()
