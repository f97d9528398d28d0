"""What an algorithm is to the learner core: ``Algorithm``, the ``Batch`` it reads and what it answers.

The core (``distrl.learner.core``) samples a batch, scores it under the current weights and hands it to
the algorithm as a ``Batch``. The algorithm answers in two steps, so that its actor filters read
critics that have just trained:

1. ``plan(batch)`` → ``Plan``: its critics' loss (the core takes the step), the advantages it reports
   and the replay priorities it sets (None: it leaves them).
2. ``actor_targets(batch, plan)`` → ``ActorTargets``: each step's weight on the log-likelihood of its
   decision tokens and of its format tokens, its sample weight and the entropy bonus. A step whose two
   weights are 0 is not trained. The core turns them into the actor loss (``losses.actor_loss``) with
   the KL anchor, runs the micro-batches and takes the step.

An algorithm owns no optimiser and no model; it reads the critics the core holds. The core builds the
one ``LearnerSettings.algorithm`` names.

Shapes: B trajectories, N steps in all (trajectory i's steps are ``spans[i]``), H the hidden size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

import torch

from distrl.learner.critics import Critics
from distrl.records import Trajectory

__all__ = ["ActorTargets", "Algorithm", "Batch", "Plan", "imitation"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    """A sampled batch, scored under the current weights without gradients."""

    trajectories: Sequence[Trajectory]
    spans: Sequence[tuple[int, int]]
    """Each trajectory's steps in the flat ``(N,)`` tensors: ``[start, end)``."""
    logprob: torch.Tensor
    """log π(a_t|s_t) at temperature 1, ``(N,)``."""
    entropy: torch.Tensor
    """Mean per-token entropy of each answer, ``(N,)``."""
    state: torch.Tensor
    """The policy's last hidden state at the last prompt token, ``(N, H)``."""
    answer_state: torch.Tensor
    """The same at the answer's last token, ``(N, H)``."""
    values: torch.Tensor
    """The step critic's V(s_t) before this update, ``(N,)``."""
    rhos: torch.Tensor
    """ρ_t = π(a_t|s_t) / μ(a_t|s_t), ``(N,)``."""
    weights: torch.Tensor
    """Prioritised replay's importance-sampling weight of each step's trajectory, ``(N,)``."""
    invalid: torch.Tensor
    """1.0 where the answer is not an action, else 0.0, ``(N,)``."""
    outcome: torch.Tensor
    """1.0 for a successful trajectory, else 0.0, ``(B,)``."""
    critics: Critics

    def firsts(self, states: torch.Tensor) -> torch.Tensor:
        """Each trajectory's first row of ``states`` ``(N, ...)``: ``(B, ...)``."""
        return torch.stack([states[start] for start, _ in self.spans])

    def lasts(self, states: torch.Tensor) -> torch.Tensor:
        """Each trajectory's last row of ``states`` ``(N, ...)``: ``(B, ...)``."""
        return torch.stack([states[end - 1] for _, end in self.spans])


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """An algorithm's first answer to a batch."""

    critic_loss: torch.Tensor | None
    """Its critics' loss, with gradients to the critic heads only; None: it has no critic."""
    advantages: torch.Tensor | None
    """A_t, ``(N,)``, as reported; None where the algorithm has no advantages."""
    priorities: list[float] | None = None
    """The new replay priority of each trajectory, ``(B,)``; None leaves them."""


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class ActorTargets:
    """Each step's part in the actor loss (``losses.actor_loss``), all ``(N,)`` constants."""

    decision: torch.Tensor
    """Weight on Σ log π over the answer's decision tokens (the action type, points, typed text)."""
    shared: torch.Tensor
    """Weight on Σ log π over its other tokens: the format every answer shares."""
    sample_weights: torch.Tensor
    entropy_coef: float = 0.0

    @property
    def trained(self) -> torch.Tensor:
        """``(N,)`` booleans: the steps the actor loss reads."""
        return (self.decision != 0) | (self.shared != 0)

    def dropping(self, steps: torch.Tensor) -> ActorTargets:
        """These targets with the ``steps`` (``(N,)`` booleans) left out."""
        return dataclasses.replace(
            self,
            decision=self.decision.masked_fill(steps, 0.0),
            shared=self.shared.masked_fill(steps, 0.0),
        )


def imitation(keep: torch.Tensor) -> ActorTargets:
    """Imitation of the ``keep`` steps (``(N,)`` booleans): weight 1 on every token, no bonus."""
    ones = keep.float()
    return ActorTargets(decision=ones, shared=ones, sample_weights=torch.ones_like(ones))


class Algorithm(Protocol):
    """One RL algorithm behind the learner core (module docstring)."""

    name: str
    prioritised: bool
    """The replay samples ∝ priority^α (with importance-sampling weights); else uniformly."""
    critics: bool
    """It trains critics, so its actor waits for ``critic_warmup_updates``."""

    def plan(self, batch: Batch) -> Plan: ...

    def actor_targets(self, batch: Batch, plan: Plan) -> ActorTargets: ...
