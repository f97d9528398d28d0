"""A real OpenSSH ``sshd`` on loopback for the tests and the benchmarks (the ``sshd`` fixture, which
``tests/conftest.py`` offers every test module that runs workers over SSH).

``sshd -D -e -f <config>`` on a free 127.0.0.1 port with a generated ed25519 host key, its own config,
pid file and authorized_keys (a generated client key) in a temporary folder; it logs to ``sshd.log``
there. Its host key is written to a known_hosts file as ``[127.0.0.1]:<port>``. The tests log in as
the user running them (root in CI). Without an ``sshd`` binary the fixture skips and says so.

``serve_sshd`` runs such an sshd elsewhere too: on another address and port, its command behind a
prefix (``["ip", "netns", "exec", NS]`` puts it in a network namespace, as ``tests/test_netns.py`` does).
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from distrl.config import Devices, HostEntry

SSHD_START_S = 10.0
"""Limit on sshd coming up, seconds."""


def find_sshd() -> str | None:
    """The sshd binary, or None when OpenSSH's server is not installed."""
    found = shutil.which("sshd")
    candidates = [found] if found else []
    candidates += ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
    return next((path for path in candidates if os.access(path, os.X_OK)), None)


@dataclass(frozen=True)
class Sshd:
    """A running sshd of our own, and what it takes to log in to it."""

    port: int
    folder: Path
    host_key: str
    """Its public host key, as ``<type> <base64>``."""
    client_key: Path
    """A private key that ``authorized_keys`` lets in."""
    stranger_key: Path
    """A private key that it does not let in."""
    known_hosts: Path
    log: Path
    pid: int
    """The listening sshd; each connection is served by a child of it."""
    address: str = "127.0.0.1"
    """The address it listens on."""

    def host(self, name: str = "ssh", **changes: object) -> HostEntry:
        """A ``HostEntry`` that logs in to this sshd as the current user, checking its host key."""
        host = HostEntry(
            name=name,
            address=self.address,
            transport="ssh",
            port=self.port,
            user=getpass.getuser(),
            identity_file=str(self.client_key),
            known_hosts_file=str(self.known_hosts),
            python=sys.executable,
            devices=Devices(sim=2),
        )
        return dataclasses.replace(host, **changes)  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=10,
    )


def _start_sshd(
    binary: str,
    folder: Path,
    port: int,
    address: str = "127.0.0.1",
    prefix: Sequence[str] = (),
    extra_config: str = "",
) -> subprocess.Popen[bytes] | None:
    """sshd on ``address:port`` (run as ``prefix + [sshd, ...]``, ``extra_config`` appended to its config),
    once it accepts connections from here; None if the port was taken meanwhile."""
    config = folder / "sshd_config"
    config.write_text(
        textwrap.dedent(
            f"""\
            ListenAddress {address}
            Port {port}
            HostKey {folder / "host_key"}
            PidFile {folder / "sshd.pid"}
            AuthorizedKeysFile {folder / "authorized_keys"}
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            AllowTcpForwarding yes
            Subsystem sftp internal-sftp
            MaxStartups 64
            MaxSessions 64
            UseDNS no
            PrintMotd no
            LogLevel INFO
            """
        )
        + extra_config
    )
    log = folder / "sshd.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*prefix, binary, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    deadline = time.monotonic() + SSHD_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if "Address already in use" in log.read_text():
                return None
            pytest.fail(f"sshd exited with status {process.returncode}: {log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1):
            return process
        time.sleep(0.02)
    process.kill()
    process.wait(timeout=5)
    pytest.fail(
        f"sshd did not accept connections on {address} port {port} within {SSHD_START_S} s: {log.read_text()}"
    )


@contextlib.contextmanager
def serve_sshd(
    binary: str,
    folder: Path,
    *,
    address: str = "127.0.0.1",
    port: int | None = None,
    prefix: Sequence[str] = (),
    extra_config: str = "",
) -> Iterator[Sshd]:
    """An sshd of our own with its keys, config and known_hosts in ``folder``, listening on ``address``
    and ``port`` (None: a free one, three tries), started as ``prefix + [sshd, ...]`` with
    ``extra_config`` added to its config (``SetEnv HOME=...``); stopped on exit (the listener only: the
    sessions it serves are children of their own)."""
    for name in ("host_key", "client_key", "stranger_key"):
        _keygen(folder / name)
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    if os.geteuid() == 0:
        # sshd running as root wants its privilege separation folder, which its service unit would make.
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    for _ in range(3 if port is None else 1):
        chosen = free_port() if port is None else port
        process = _start_sshd(binary, folder, chosen, address, prefix, extra_config)
        if process is not None:
            break
    else:
        pytest.fail(
            f"found no free port for sshd on {address}" if port is None else f"{address} port {port} is taken"
        )
    host_key = " ".join((folder / "host_key.pub").read_text().split()[:2])
    known_hosts = folder / "known_hosts"
    entry = address if chosen == 22 else f"[{address}]:{chosen}"
    known_hosts.write_text(f"{entry} {host_key}\n")
    try:
        yield Sshd(
            port=chosen,
            folder=folder,
            host_key=host_key,
            client_key=folder / "client_key",
            stranger_key=folder / "stranger_key",
            known_hosts=known_hosts,
            log=folder / "sshd.log",
            pid=process.pid,
            address=address,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    binary = find_sshd()
    if binary is None:
        pytest.skip("OpenSSH's sshd is not installed (Debian: apt-get install openssh-server)")
    with serve_sshd(binary, tmp_path_factory.mktemp("sshd")) as server:
        yield server
