"""The learner's other ranks as processes: rank 0 starts them (``start_ranks``), each loads the policy and
follows rank 0's commands (``serve``, ``follow``) until it stops, and ends with its parent.

A child is ``python -m distrl.learner.rank_processes`` with one JSON line on its stdin: the policy's and
the learner's settings (``learner_settings_json``, checked as the inventory is), its rank, the world's
size, the port of rank 0's store, its device, dtype, seed and threads. Its stdin then stays open, and its
end is the parent's end. Under ``torchrun`` the processes are ``torchrun``'s: ``distrl run`` serves as a
rank where ``RANK`` is not 0, and ``start_ranks`` joins the group from the environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

import orjson
import torch
import torch.distributed as dist
from torch.distributed import TCPStore  # type: ignore[attr-defined]  # exported at run time, not in its stubs

from distrl.config import LearnerSettings, PolicySettings, learner_settings_json, parse_learner_settings
from distrl.errors import LearnerError, RankError
from distrl.learner.ranks import STOP, SYNC, Ranks, rank_devices, torchrun_rank
from distrl.learner.replay import ReplaySample

if TYPE_CHECKING:
    from distrl.learner.core import Learner
    from distrl.policy import Policy

__all__ = ["Child", "follow", "serve", "start_ranks"]

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
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
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


def follow(learner: Learner) -> None:
    """Another rank's life: do what rank 0 says, update after update, until it says stop."""
    ranks = learner.ranks
    assert ranks is not None
    assert not ranks.leader
    while True:
        command = ranks.receive()
        if command.op == STOP:
            return
        if command.op == SYNC:
            ranks.sync(learner)
            continue
        learner.updates = command.updates
        count = len(command.trajectories)
        sample = ReplaySample(
            keys=tuple(range(count)),
            trajectories=command.trajectories,
            probabilities=(1.0 / count,) * count,
            weights=command.weights,
        )
        with contextlib.suppress(LearnerError):  # every rank refuses alike; rank 0 reports it
            learner.update_on(sample)


def serve(
    policy_settings: PolicySettings,
    learner_settings: LearnerSettings,
    *,
    device: str,
    dtype: str | None,
    seed: int,
    join: Callable[[Policy], Ranks],
) -> None:
    """Load the policy, join the group (``join``), and ``follow`` rank 0 until it stops."""
    from distrl.learner.core import Learner
    from distrl.policy import Policy

    policy = Policy.load(policy_settings, device=device, dtype=dtype, seed=seed)  # type: ignore[arg-type]
    ranks = join(policy)
    try:
        learner = Learner(policy, learner_settings, seed=seed, ranks=ranks)
        follow(learner)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


@dataclasses.dataclass
class Child:
    """A rank that rank 0 started: its process and where its stderr goes."""

    rank: int
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]

    @classmethod
    def start(cls, rank: int, document: dict[str, Any]) -> Child:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115  # held while the child lives; stop() closes it
        process = subprocess.Popen(
            [sys.executable, "-m", "distrl.learner.rank_processes"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
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


def _child_main() -> None:
    """``python -m distrl.learner.ranks``: a rank rank 0 started, its settings on stdin."""
    logging.basicConfig(level=logging.WARNING, format="learner rank %(process)d: %(message)s")
    document = orjson.loads(sys.stdin.buffer.readline())
    threading.Thread(target=_end_with_parent, daemon=True).start()
    policy_settings, learner_settings = parse_learner_settings(document["settings"])
    torch.set_num_threads(int(document["threads"]))
    rank, world = int(document["rank"]), int(document["world"])
    timeout = datetime.timedelta(seconds=learner_settings.collective_timeout_s)

    def join(policy: Policy) -> Ranks:
        store = TCPStore("127.0.0.1", int(document["port"]), world, is_master=False, timeout=timeout)
        store.set(f"ready/{rank}", "1")
        dist.init_process_group(
            document["backend"], store=store, rank=rank, world_size=world, timeout=timeout
        )
        device = torch.device(document["device"])
        return Ranks(rank=rank, world=world, device=device, timeout_s=learner_settings.collective_timeout_s)

    serve(
        policy_settings,
        learner_settings,
        device=document["device"],
        dtype=document["dtype"],
        seed=int(document["seed"]),
        join=join,
    )


def _end_with_parent() -> None:
    """Exit when rank 0's end of our stdin closes: rank 0 ended, or stopped us."""
    while os.read(0, 1 << 16):  # unbuffered: a thread blocked in sys.stdin would stop the interpreter's exit
        pass
    os._exit(0)


if __name__ == "__main__":
    _child_main()
