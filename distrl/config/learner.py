"""``[learner]``: the learner core's settings and the algorithm's name, each with its default, bounds and
meaning. Each algorithm's own settings are its table ``[learner.NAME]``, kept here as written and read by
the algorithm (``distrl.learner.algorithms.configure``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from distrl.config.fields import num_field, text_field

__all__ = ["MOVED_KEYS", "LearnerSettings", "misplaced_table"]


@dataclass(frozen=True, kw_only=True)
class LearnerSettings:
    """The learner core's settings and the algorithm it runs."""

    algorithm: str = text_field(
        "a-ride",
        r"[a-z0-9][a-z0-9_-]*|[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*",
        "an algorithm's name or 'module:Class'",
    )
    """The algorithm: a registered name (``a-ride``, the DistRL paper's; ``digirl``, ``filtered-bc``,
    ``ppo``, ``grpo``, ``rloo``) or ``module:Class`` for your own. Its settings: ``[learner.NAME]``."""
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, metadata={"not_a_key": True})
    """Each algorithm's settings table as written (``[learner.a_ride]``: ``tables["a_ride"]``)."""
    device: str = text_field(
        "auto", r"auto|cpu|mps|cuda(:[0-9]+)?", "'auto', 'cpu', 'mps', 'cuda' or 'cuda:N'"
    )
    """Torch device for training: ``auto`` (CUDA when present), ``cpu``, ``cuda`` or ``cuda:N``."""
    lr_actor: float = num_field(1e-4, gt=0)
    """Adam learning rate of the adapter."""
    lr_critic: float = num_field(1e-4, gt=0)
    """Adam learning rate of the algorithm's networks (its critics)."""
    batch_size: int = num_field(8, gt=0)
    """Trajectories per update."""
    kl_coef: float = num_field(1.0, ge=0)
    """κ_KL, the weight of the core's anchor: the KL(π ‖ π_ref) of each trained answer (per token, summed over
    the answer, as its log-prob is) to the starting policy π_ref (the model with its adapter disabled when
    training starts from a fresh adapter, else a frozen copy of the adapter the learner started from). 0 turns
    it off (no reference pass). It keeps the greedy policy, which users deploy, from drifting away from its
    start while training at temperature 1 (docs/results/benchmarks.md, "The anchor": without it greedy train
    success fell 10 points in 80 updates; with 1 it held). ``decision`` advantages need it: with an anchor
    about 500 times weaker they unlearned the start (greedy train success 43% → 15%). It also bounds success
    when sampling: from ``tiny-weak``, binary advantages with ``kl_coef = 0.1`` gained 7.5 points more on
    train at temperature 1 than with 1, and 9.6 fewer on train greedily (docs/results/paper-table.md)."""
    priority_alpha: float = num_field(0.5, ge=0)
    """Sampling ∝ priority^α (0 is uniform)."""
    priority_beta: float = num_field(0.4, ge=0, le=1)
    """Initial importance-sampling exponent, annealed to 1."""
    priority_beta_updates: int = num_field(1000, gt=0)
    """Updates over which the importance-sampling exponent rises linearly to 1."""
    replay_capacity: int = num_field(10_000, gt=0)
    """Replay buffer size in steps."""
    grad_clip: float = num_field(1.0, gt=0)
    """Global gradient-norm clip."""
    critic_warmup_updates: int = num_field(20, ge=0)
    """The first updates train only the algorithm's networks where it has some (``a-ride``, ``digirl``,
    ``ppo`` with a value baseline), so that the actor's first advantages come from a critic that has learnt
    something."""
    lr_warmup_updates: int = num_field(0, ge=0)
    """The actor's learning rate rises linearly to ``lr_actor`` over its first this many updates (those
    after the critic warm-up): ``lr_actor``·k/N at its k-th; 0 starts at ``lr_actor``."""
    min_new_trajectories: int = num_field(4, ge=0)
    """An update waits until this many new trajectories have reached the learner since the last one (0:
    update continuously); it keeps the learner from overfitting a buffer that refills slowly."""
    ranks: int = num_field(1, gt=0)
    """Learner processes training each update together (data parallelism on ``torch.distributed``): the
    batch's steps are split across them and their gradients summed. Rank 0 is the learner that runs the
    fleet, the replay buffer and the checkpoints; the others only train, started as its child processes
    (under ``torchrun`` they are the processes it starts, on any machine: docs/guides/several-gpus.md)."""
    devices: tuple[str, ...] = ()
    """The torch device of each rank (``["cuda:0", "cuda:1"]``), as many as ``ranks``; empty: every rank
    on ``device``'s CPU, or rank r on ``cuda:r``. NCCL links CUDA ranks, gloo CPU ones."""
    collective_timeout_s: float = num_field(300.0, gt=0)
    """How long a rank waits for the others in any exchange before the run ends with an error naming
    the rank at fault (a rank that dies is noticed at once; this bounds a rank that hangs)."""
    micro_batch: int = num_field(16, gt=0)
    """Steps per forward pass in an update (gradients accumulate over the passes; bounds memory)."""
    gradient_checkpointing: bool = False
    """Recompute the model's activations in the actor's backward pass instead of keeping them: more
    compute, far less memory (a 2B policy keeps about 20 GB of activations per 1080×2400 step without
    it, so only a micro-batch of 1 or 2 fits an 80 GB GPU)."""


MOVED_KEYS: Mapping[str, str] = {
    **{
        key: f"learner.a_ride.{key}"
        for key in (
            "gamma",
            "retrace_lambda",
            "advantage_lambda",
            "rho_clip",
            "push_down_floor",
            "entropy_coef",
            "invalid_penalty",
            "advantages",
            "priority_weights",
            "step_cost",
            "repeat_penalty",
            "invalid_reward",
            "trajectory_filter",
            "trajectory_top",
        )
    },
    "digirl_lambda": "learner.digirl.step_lambda",
    "digirl_top": "learner.digirl.top",
}
"""Keys that ``[learner]`` held before each algorithm had its own table, and where each is now."""


_TABLE_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")
"""The name of an algorithm's table under ``[learner]``: its name with ``_`` for ``-``."""


def misplaced_table(plain: Mapping[str, object], tables: Mapping[str, object]) -> tuple[str, str] | None:
    """The first of ``[learner]``'s keys that is an algorithm's table written wrongly, and what is wrong
    with it: a registered algorithm's name given a value (``a-ride = 0.5``), or a table whose name is not
    an algorithm table's (``[learner.a-ride]``, spelled ``[learner.a_ride]``); None when there is none."""
    registered = {point.name.replace("-", "_") for point in entry_points(group="distrl.algorithms")}
    unknown = plain.keys() - {f.name for f in dataclasses.fields(LearnerSettings)}
    if clash := sorted(key for key in unknown if key.replace("-", "_") in registered):
        return clash[0], f"an algorithm's settings are a table, [learner.{clash[0].replace('-', '_')}]"
    for key in tables:
        if not _TABLE_NAME.fullmatch(key):
            if key.replace("-", "_") in registered:
                return key, f"is spelled [learner.{key.replace('-', '_')}] (a table's name has no '-')"
            return key, "is not an algorithm's name (its table is [learner.NAME])"
    return None
