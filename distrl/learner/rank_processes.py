"""The learner's other ranks as processes, rank 0's side: it starts them (``start_ranks``) and watches
them (``Child``); each loads the policy and follows rank 0's commands until it stops, and ends with its
parent (``distrl.learner.rank_child``).

A child is ``python -m distrl.learner.rank_child`` with one JSON line on its stdin: the policy's and
the learner's settings (``learner_settings_json``, checked as the inventory is), its rank, the world's
size, the port of rank 0's store, its device, dtype, seed and threads. Its stdin then stays open, and its
end is the parent's end. Under ``torchrun`` the processes are ``torchrun``'s: ``distrl run`` serves as a
rank where ``RANK`` is not 0, and ``start_ranks`` joins the group from the environment.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import orjson
import torch
import torch.distributed as dist
from torch.distributed import TCPStore  # type: ignore[attr-defined]  # exported at run time, not in its stubs

from distrl.config import LearnerSettings, learner_settings_json
from distrl.errors import RankError
from distrl.learner.algorithms import searched_folders
from distrl.learner.ranks import Ranks, rank_devices, torchrun_rank

if TYPE_CHECKING:
    from distrl.policy import Policy

__all__ = ["Child", "start_ranks"]

log = logging.getLogger(__name__)

_JOIN_POLL_S = 0.5


def start_ranks(policy: Policy, settings: LearnerSettings, *, seed: int) -> Ranks:
    """Rank 0's group: joined under ``torchrun``, else with ``settings.ranks - 1`` children started here,
    each loading the policy as ``policy`` was loaded (its settings, dtype and ``seed``).

    Raises ``RankError`` (``start``) when a child does not join, with what it wrote last."""
    timeout = datetime.timedelta(seconds=settings.collective_timeout_s)
    backend = "nccl" if policy.device.type == "cuda" else "gloo"
    launched = torchrun_rank()
    if launched is not None:
        rank, world = launched
        _join_torchrun(backend, rank, world, settings.collective_timeout_s)
        return Ranks(rank=rank, world=world, device=policy.device, timeout_s=settings.collective_timeout_s)
    world = settings.ranks
    threads = before = torch.get_num_threads()
    if policy.device.type == "cpu":  # ranks on one machine's cores share them
        threads = max(1, threads // world)
    store = TCPStore("127.0.0.1", 0, world, is_master=True, timeout=timeout, wait_for_workers=False)
    document = {
        "settings": learner_settings_json(policy.settings, settings),
        "world": world,
        "port": store.port,
        "seed": seed,
        "dtype": str(next(policy.model.parameters()).dtype).removeprefix("torch."),
        "threads": threads,
        "backend": backend,
    }
    devices = rank_devices(settings, policy.device, world)
    children: list[Child] = []
    try:
        for rank in range(1, world):
            children.append(Child.start(rank, {**document, "rank": rank, "device": str(devices[rank])}))
        _wait_until_joined(store, children, settings.collective_timeout_s)
        dist.init_process_group(backend, store=store, rank=0, world_size=world, timeout=timeout)
    except BaseException:
        for child in children:
            child.kill()
        raise
    log.info("learner: %d ranks (%s), %d thread(s) each", world, backend, threads)
    ranks = Ranks(
        rank=0,
        world=world,
        device=policy.device,
        timeout_s=settings.collective_timeout_s,
        children=children,
        threads=before,
    )
    torch.set_num_threads(threads)
    return ranks


@dataclasses.dataclass
class Child:
    """A rank that rank 0 started: its process and where its stderr goes."""

    rank: int
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]

    @classmethod
    def start(cls, rank: int, document: dict[str, Any]) -> Child:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115  # held while the child lives; stop() closes it
        env = dict(os.environ)
        if searched := searched_folders():  # a user's module:Class beside the inventory: every rank's too
            env["PYTHONPATH"] = os.pathsep.join(
                [*filter(None, env.get("PYTHONPATH", "").split(os.pathsep)), *searched]
            )
        process = subprocess.Popen(
            [sys.executable, "-m", "distrl.learner.rank_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,  # Ctrl-C reaches rank 0, which stops its ranks itself
        )
        assert process.stdin is not None
        process.stdin.write(orjson.dumps(document) + b"\n")
        process.stdin.flush()  # stdin stays open: its end is the parent's end
        return cls(rank, process, stderr)

    def exited(self) -> bool:
        return self.process.poll() is not None

    def returncode(self) -> int | None:
        return self.process.poll()

    def last_words(self) -> str:
        """``": <its last line on stderr>"``, or nothing."""
        self.stderr.seek(0)
        lines = [
            line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()
        ]
        return f": {lines[-1]}" if lines else ""

    def stop(self, timeout_s: float) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        self.stderr.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def _join_torchrun(backend: str, rank: int, world: int, timeout_s: float) -> None:
    """Join ``torchrun``'s group from its environment (``MASTER_ADDR``, ``MASTER_PORT``), or raise
    ``RankError`` (``timeout``) naming the peers this rank waited for: rank 0 for the others, the others
    for rank 0. Another rank first waits here until rank 0's store answers, since torch's own client logs
    each refused connection with its C++ stack."""
    address, port = os.environ.get("MASTER_ADDR", "127.0.0.1"), os.environ.get("MASTER_PORT", "")
    others = f"ranks 1 to {world - 1}, which never all came" if world > 2 else "rank 1, which never came"
    waited = (
        f"for rank 0 at {address}:{port}, which never answered"
        if rank
        else f"at {address}:{port} for {others}"
    )
    problem = (
        f"learner rank {rank} of {world} (torchrun) waited {timeout_s:g} s (learner.collective_timeout_s)"
        f" {waited}: start `python -m distrl run` under torchrun on every node"
    )
    deadline = time.monotonic() + timeout_s
    while rank and port.isdigit() and not _answers(address, int(port)):
        if time.monotonic() > deadline:
            raise RankError(problem, rank=0, reason="timeout")
        time.sleep(_JOIN_POLL_S)
    try:
        timeout = datetime.timedelta(seconds=timeout_s)  # also every exchange's, for the whole run
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
    except dist.DistError as exc:
        raise RankError(f"{problem} ({exc})", rank=None if rank == 0 else 0, reason="timeout") from exc


def _answers(address: str, port: int) -> bool:
    """Whether something listens at ``address``:``port``."""
    try:
        with socket.create_connection((address, port), timeout=_JOIN_POLL_S):
            return True
    except OSError:
        return False


def _wait_until_joined(store: TCPStore, children: Sequence[Child], timeout_s: float) -> None:
    """Wait until every child has loaded its policy and says so in the store, or refuse the one that died
    or took longer than ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    for child in children:
        while not store.check([f"ready/{child.rank}"]):
            time.sleep(_JOIN_POLL_S)
            if child.exited():
                raise RankError(
                    f"learner rank {child.rank} did not start (exit code {child.returncode()})"
                    f"{child.last_words()}",
                    rank=child.rank,
                    reason="start",
                )
            if time.monotonic() > deadline:
                raise RankError(
                    f"learner rank {child.rank} did not join within learner.collective_timeout_s ="
                    f" {timeout_s:g} s{child.last_words()}",
                    rank=child.rank,
                    reason="timeout",
                )
