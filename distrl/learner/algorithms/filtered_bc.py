"""Filtered BC as a loss module: no networks; the actor imitates every step of the batch's successful
trajectories. It samples the replay uniformly and leaves its priorities as they are. It has no settings
(``[learner.filtered_bc]`` stays empty)."""

from __future__ import annotations

import dataclasses

import torch

from distrl.learner.algorithm import ActorTargets, Batch, Chunk, Plan, imitation, likelihood_loss
from distrl.learner.losses import filtered_bc_keep

__all__ = ["FilteredBC", "FilteredBCSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FilteredBCSettings:
    """``[learner.filtered_bc]``: none."""


class FilteredBC:
    """Filtered BC as a loss module (module docstring)."""

    name = "filtered-bc"
    Settings = FilteredBCSettings
    prioritised = False
    networks = None

    def __init__(self, settings: FilteredBCSettings, *, features: int) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        return Plan(network_loss=None, advantages=None)

    def targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        device = batch.logprob.device
        keep = torch.cat(
            [
                filtered_bc_keep(bool(success), end - start, device)
                for success, (start, end) in zip(batch.outcome.tolist(), batch.spans, strict=True)
            ]
        )
        return imitation(keep)

    def loss(self, batch: Batch, targets: ActorTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
        return {"imitation": likelihood_loss(targets, chunk)}
