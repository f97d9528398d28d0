"""REINFORCE with a group baseline, as a distrl algorithm: the whole of one, in one file.

Train with it by naming it in the inventory (the folder that holds ``examples/`` on the path, as it is
when you run from the repository's root):

    [learner]
    algorithm = "examples.my_algorithm:Reinforce"

    [learner.reinforce]           # its own settings: the table named after its ``name``
    baseline = "group"

    [tasks]
    group_size = 4                # each task played on 4 devices at once: the group its baseline reads

The learner core does the rest: sampling, scoring, micro-batches, the optimiser, the KL anchor to the
starting policy, guards and checkpoints (``distrl.learner.algorithm`` says what it hands over).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch

from distrl.learner.algorithm import Batch, Chunk, Plan, group_keys
from distrl.learner.losses import group_advantages


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReinforceSettings:
    """``[learner.reinforce]``."""

    baseline: Literal["group", "none"] = "group"
    """``group``: subtract the mean outcome of the other plays of the same task; ``none``: the outcome."""


@dataclasses.dataclass(frozen=True)
class Weights:
    """Each step's advantage, ``(N,)``, and the steps trained."""

    advantages: torch.Tensor
    trained: torch.Tensor


class Reinforce:
    """L = −(1/N)·Σ_t A·log π(a_t|s_t), A the trajectory's outcome less its group's mean (Williams 1992)."""

    name = "reinforce"
    Settings = ReinforceSettings
    prioritised = False  # the replay samples uniformly
    networks = None  # no critic
    grouped = True  # the replay draws whole task groups

    def __init__(self, settings: ReinforceSettings, *, features: int) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        """Advantages per trajectory, spread over its steps (no networks, no new priorities)."""
        if self.settings.baseline == "group":
            advantages, _ = group_advantages(batch.outcome, group_keys(batch), scale=False)
        else:
            advantages = batch.outcome
        steps = batch.per_step(advantages)
        # what else it reports goes to TensorBoard as learner/NAME
        return Plan(
            network_loss=None, advantages=steps, stats={"trained_share": float((steps != 0).float().mean())}
        )

    def targets(self, batch: Batch, plan: Plan) -> Weights:
        """Train the steps whose advantage is not 0 (a group whose plays all scored alike teaches nothing)."""
        assert plan.advantages is not None
        return Weights(plan.advantages, plan.advantages != 0)

    def loss(self, batch: Batch, targets: Weights, chunk: Chunk) -> dict[str, torch.Tensor]:
        """The policy gradient's share of this micro-batch: its sum over the steps trained, divided by
        their count in the whole update, so that the chunks add up to the mean."""
        advantages = targets.advantages[chunk.rows]
        return {"reinforce": -(advantages * chunk.logprob).sum() / chunk.steps}
