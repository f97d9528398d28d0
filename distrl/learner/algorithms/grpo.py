"""GRPO (Shao et al. 2024) as a loss module, with DAPO's dynamic sampling; its settings are
``[learner.grpo]``.

No critic. Each trajectory's advantage is its outcome against the other plays of the same task in the
batch, its group (``[tasks] group_size`` plays one task on K devices; ``group_keys``):
A_i = (R_i − mean_g R) / std_g R, or R_i − mean_g R without ``scale`` (Dr. GRPO), the same for every
step of the trajectory. A group whose plays all scored alike (all successes, all failures, or a group
of one) carries no contrast: its steps are dropped, and ``Plan.stats`` counts them (``uniform_groups``,
the share of the batch's groups), as DAPO's dynamic sampling does. The actor minimises the clipped
surrogate over the remaining steps (``losses.clipped_surrogate``), decoupled from the behaviour
policy as PPO's is (``distrl.learner.algorithms.ppo``), so that members played by different policy
versions are each corrected by their own behaviour log-probs.
"""

from __future__ import annotations

import dataclasses

import torch

from distrl.learner.algorithm import (
    AdvantageTargets,
    Batch,
    Chunk,
    Plan,
    SurrogateSettings,
    group_keys,
    surrogate_loss,
)
from distrl.learner.losses import group_advantages

__all__ = ["GRPO", "GRPOSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GRPOSettings(SurrogateSettings):
    """``[learner.grpo]``: GRPO's hyper-parameters: the clipped surrogate's (``clip``, ``decoupled``,
    ``behaviour_cap``, ``entropy_coef``) and ``scale``."""

    scale: bool = True
    """Divide by the group's standard deviation (GRPO); false: only centre (Dr. GRPO)."""


class GRPO:
    """GRPO as a loss module (module docstring)."""

    name = "grpo"
    Settings = GRPOSettings
    prioritised = False
    networks = None
    grouped = True
    """The replay draws whole task groups for it."""
    leave_one_out = False
    """RLOO's baseline instead of the group's mean and deviation (``distrl.learner.algorithms.rloo``)."""

    def __init__(self, settings: GRPOSettings, *, features: int) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        groups = group_keys(batch)
        advantages, informative = group_advantages(
            batch.outcome,
            groups,
            scale=self.settings.scale,
            leave_one_out=self.leave_one_out,
        )
        uniform = {key for key, keep in zip(groups, informative.tolist(), strict=True) if not keep}
        return Plan(
            network_loss=None,
            advantages=batch.per_step(advantages),
            stats={"uniform_groups": len(uniform) / len(set(groups)), "groups": float(len(set(groups)))},
        )

    def targets(self, batch: Batch, plan: Plan) -> AdvantageTargets:
        assert plan.advantages is not None
        # a non-uniform group's members never sit at its mean: the steps trained are those not at 0
        return self.settings.targets(plan.advantages, plan.advantages != 0)

    def loss(self, batch: Batch, targets: AdvantageTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
        return surrogate_loss(batch, targets, chunk)
