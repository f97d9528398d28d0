"""One of the learner's other ranks, its side: load the policy, join rank 0's group, and do what rank 0
says, update after update, until it says stop (``python -m distrl.learner.rank_child``, started by
``distrl.learner.rank_processes``; or ``distrl run`` under ``torchrun`` where ``RANK`` is not 0).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import sys
import threading
from collections.abc import Callable

import orjson
import torch
import torch.distributed as dist
from torch.distributed import TCPStore  # type: ignore[attr-defined]  # exported at run time, not in its stubs

from distrl.config import LearnerSettings, PolicySettings, parse_learner_settings
from distrl.errors import LearnerError
from distrl.learner.core import Learner
from distrl.learner.ranks import STOP, SYNC, Ranks
from distrl.learner.replay import ReplaySample
from distrl.policy import Policy

__all__ = ["follow", "serve"]


def follow(learner: Learner) -> None:
    """Another rank's life: do what rank 0 says, update after update, until it says stop."""
    ranks = learner.ranks
    assert isinstance(ranks, Ranks)
    assert not ranks.leader
    while True:
        command = ranks.receive()
        if command.op == STOP:
            return
        if command.op == SYNC:
            learner.sync_ranks()
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
    policy = Policy.load(policy_settings, device=device, dtype=dtype, seed=seed)  # type: ignore[arg-type]
    ranks = join(policy)
    try:
        learner = Learner(policy, learner_settings, seed=seed, ranks=ranks)
        follow(learner)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _child_main() -> None:
    """``python -m distrl.learner.rank_child``: a rank rank 0 started, its settings on stdin."""
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
