"""Network namespaces joined to this one by veth pairs: other machines on this one, for the tests and
the benchmarks (root and ``ip`` needed; ``unavailable()`` says why not).

``joined_namespace(name, veth, peer, subnet)`` makes the namespace ``name`` at ``10.213.<subnet>.2``,
joined by a veth pair (``veth`` here at ``.1``, ``peer`` there), with ``lo`` up; on exit it kills
whatever still runs there and deletes it. ``Namespace.shape(rate)`` limits what this side sends into it
(``tc``'s token bucket), as a network link of that speed would; ``Namespace.cut()`` drops every packet
without telling anyone. Where the kernel refuses a namespace or a veth, it skips (``pytest.skip``) and
says why.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from distrl.testing.sshd import find_sshd

IP_S = 10.0
"""Limit on one ``ip`` or ``tc`` command, seconds."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=IP_S, check=check
    )


def gone(pid: int) -> bool:
    """Exited (a zombie counts) or never there."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@dataclass(frozen=True)
class Namespace:
    """A network namespace joined to ours by a veth pair: a machine at ``address``."""

    name: str
    veth: str
    """Our end of the pair."""
    peer: str
    """Its end, inside the namespace."""
    address: str
    """Its address (``gateway`` is ours, on the same /24)."""
    gateway: str

    def pids(self) -> list[int]:
        out = ip("netns", "pids", self.name, check=False).stdout
        return [int(pid) for pid in out.split()]

    def worker_pids(self) -> list[int]:
        """The worker processes (``... worker --host NAME ...``) running in it; not the shell that starts
        them, whose command line is one argument."""
        found = []
        for pid in self.pids():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                pairs = itertools.pairwise(argv)
                if (b"worker", b"--host") in pairs and not gone(pid):
                    found.append(pid)
        return found

    def cut(self) -> None:
        """Take its end of the link down: every packet either way is dropped, nobody is told."""
        ip("-n", self.name, "link", "set", self.peer, "down")

    def shape(self, rate: str) -> None:
        """Send into it at ``rate`` at most (``tc`` syntax: ``500mbit``), as over a link of that speed."""
        subprocess.run(
            ["tc", "qdisc", "replace", "dev", self.veth, "root", "tbf", "rate", rate, "burst", "1mb",
             "latency", "100ms"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=IP_S, check=True,
        )  # fmt: skip


def free_subnets(count: int) -> list[int]:
    """``count`` third octets ``n`` for which nothing here routes 10.213.n.0/24 yet."""
    routes = ip("-4", "route", "show", "table", "all").stdout + ip("-4", "addr").stdout
    start = os.getpid() % 250
    chosen = [n for n in (1 + (start + i) % 250 for i in range(250)) if f"10.213.{n}." not in routes]
    if len(chosen) < count:
        pytest.skip("no free 10.213.n.0/24 subnet for the test namespaces")
    return chosen[:count]


def unavailable() -> str | None:
    """Why network namespaces cannot be used here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root (ip netns add, veth pairs)"
    if shutil.which("ip") is None:
        return "no ip command (Debian: apt-get install iproute2)"
    if find_sshd() is None:
        return "OpenSSH's sshd is not installed (Debian: apt-get install openssh-server)"
    return None


@contextlib.contextmanager
def joined_namespace(name: str, veth: str, peer: str, subnet: int) -> Iterator[Namespace]:
    made = ip("netns", "add", name, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace (ip netns add): {made.stderr.strip()}")
    namespace = Namespace(name, veth, peer, address=f"10.213.{subnet}.2", gateway=f"10.213.{subnet}.1")
    try:
        paired = ip("link", "add", veth, "type", "veth", "peer", "name", peer, check=False)
        if paired.returncode != 0:
            pytest.skip(f"cannot make a veth pair: {paired.stderr.strip()}")
        ip("link", "set", peer, "netns", name)
        ip("addr", "add", f"{namespace.gateway}/24", "dev", veth)
        ip("link", "set", veth, "up")
        ip("-n", name, "addr", "add", f"{namespace.address}/24", "dev", peer)
        ip("-n", name, "link", "set", peer, "up")
        ip("-n", name, "link", "set", "lo", "up")
        yield namespace
    finally:
        # Whatever still runs there (session sshds, a stranded worker) keeps a namespace alive.
        for pid in namespace.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while namespace.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        ip("netns", "delete", name, check=False)
        ip("link", "delete", veth, check=False)  # normally gone with its peer's namespace
