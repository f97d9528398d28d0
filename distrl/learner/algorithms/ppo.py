"""PPO-clip (Schulman et al. 2017) as a loss module, for stale asynchronous data; its settings are
``[learner.ppo]``.

The actor minimises the clipped surrogate (``losses.clipped_surrogate``) over every step of the batch.
With ``decoupled`` (default) the ratio is taken against the policy the update starts from, π_prox (the
batch's own scores), and the staleness of the data apart, by the importance weight min(π_prox/μ, c) to
the behaviour policy μ whose log-prob each step stored: the proximal-policy form (Hilton et al. 2022)
that AReaL trains stale rollouts with. Without it the ratio is π_θ/μ, the classic objective.

Ratios are over whole answers (the sum of the tokens' log-probs), because the behaviour log-prob is
stored per answer. The learner takes one optimiser step per update, so with ``decoupled`` π_θ = π_prox
at that step and the clip does not bind: the ratio's work is then the capped weight to μ. Without
``decoupled`` the clip bounds how far one update moves an answer away from a stale behaviour policy.

Advantages, ``baseline``:

- ``value`` (default): A_t = G_t − V(s_t), G_t = γ^(T−1−t)·R the discounted outcome, V a value head
  on the policy's features trained by binary cross-entropy on G_t (its only network);
- ``group``: A_t = R − mean R over the batch's plays of the same task group (``group_keys``), no network.

``normalise`` scales them to mean 0 and deviation 1 over the batch's steps, as CleanRL's PPO does.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch

from distrl.config.fields import num_field
from distrl.learner.algorithm import (
    AdvantageTargets,
    Batch,
    Chunk,
    Plan,
    SurrogateSettings,
    group_keys,
    surrogate_loss,
)
from distrl.learner.heads import Heads
from distrl.learner.losses import group_advantages

__all__ = ["PPO", "PPOSettings"]

_BCE = torch.nn.functional.binary_cross_entropy_with_logits


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOSettings(SurrogateSettings):
    """``[learner.ppo]``: PPO's hyper-parameters: the clipped surrogate's (``clip``, ``decoupled``,
    ``behaviour_cap``, ``entropy_coef``) and its advantages'."""

    baseline: Literal["value", "group"] = "value"
    """``value``: a learnt V(s_t); ``group``: the mean outcome of the same task's plays in the batch."""
    gamma: float = num_field(0.95, ge=0, le=1)
    """γ of the discounted outcome G_t = γ^(T−1−t)·R that the value baseline is trained on."""
    normalise: bool = True
    """Advantages shifted and scaled to mean 0 and deviation 1 over the batch's steps."""


class PPO:
    """PPO-clip as a loss module (module docstring)."""

    name = "ppo"
    Settings = PPOSettings
    prioritised = False

    def __init__(self, settings: PPOSettings, *, features: int) -> None:
        self.settings = settings
        self.grouped = settings.baseline == "group"
        """The replay draws whole task groups for the group baseline."""
        self.networks = Heads(features, "step") if settings.baseline == "value" else None

    def plan(self, batch: Batch) -> Plan:
        settings = self.settings
        if self.networks is None:
            advantages, _ = group_advantages(batch.outcome, group_keys(batch), scale=False)
            return self._plan(batch, batch.per_step(advantages), None, None)
        returns = torch.cat(
            [
                float(batch.outcome[i]) * settings.gamma ** torch.arange(end - start - 1, -1, -1.0)
                for i, (start, end) in enumerate(batch.spans)
            ]
        ).to(batch.state.device)
        values = self.networks.value("step", batch.state)
        loss = _BCE(self.networks.logit("step", batch.state), returns)
        return self._plan(batch, returns - values, values, loss)

    def _plan(
        self, batch: Batch, advantages: torch.Tensor, values: torch.Tensor | None, loss: torch.Tensor | None
    ) -> Plan:
        if self.settings.normalise and len(advantages) > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std(unbiased=False) + 1e-8)
        capped = torch.exp(batch.logprob - batch.behaviour) > self.settings.behaviour_cap
        return Plan(
            network_loss=loss,
            advantages=advantages,
            values=values,
            stats={"capped_share": float(capped.float().mean())},
        )

    def targets(self, batch: Batch, plan: Plan) -> AdvantageTargets:
        assert plan.advantages is not None
        return self.settings.targets(plan.advantages, torch.ones_like(plan.advantages, dtype=torch.bool))

    def loss(self, batch: Batch, targets: AdvantageTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
        return surrogate_loss(batch, targets, chunk)
