"""Filtered BC behind the learner core: no critic; the actor imitates every step of the batch's
successful trajectories. It samples the replay uniformly and leaves its priorities as they are."""

from __future__ import annotations

import torch

from distrl.config import LearnerSettings
from distrl.learner.algorithm import ActorTargets, Batch, Plan, imitation
from distrl.learner.losses import filtered_bc_keep

__all__ = ["FilteredBC"]


class FilteredBC:
    """Filtered BC behind the learner core's ``Algorithm`` interface (module docstring)."""

    name = "filtered-bc"
    prioritised = False
    critics = False

    def __init__(self, settings: LearnerSettings) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        return Plan(critic_loss=None, advantages=None)

    def actor_targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        keep = torch.cat(
            [
                filtered_bc_keep(bool(success), end - start, batch.values.device)
                for success, (start, end) in zip(batch.outcome.tolist(), batch.spans, strict=True)
            ]
        )
        return imitation(keep)
