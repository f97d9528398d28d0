"""What an algorithm is to the learner core: ``Algorithm``, the ``Batch`` and ``Chunk`` it reads, and
what it answers. The algorithms themselves are ``distrl.learner.algorithms``, one module each.

The core (``distrl.learner.core``) samples a batch, scores it under the current weights without
gradients and hands it to the algorithm as a ``Batch``. The algorithm answers in three steps, so that
what its actor reads comes from networks that have just trained:

1. ``plan(batch)`` → ``Plan``: its networks' loss (the core takes that step, Adam at ``lr_critic``),
   the advantages and values it reports and the replay priorities it sets (None: it leaves them).
2. ``targets(batch, plan)`` → its ``Targets``: whatever constants its actor loss reads, and ``trained``,
   the steps that loss reads. The core skips this during the networks' warm-up.
3. ``loss(batch, targets, chunk)`` → named losses, for each micro-batch (``Chunk``) of the trained steps,
   computed from the chunk's differentiable per-token log-probs. The core sums them, adds the anchor
   (``losses.kl_anchor``), takes the gradients and, after the last chunk, the step. The names go to
   TensorBoard.

An algorithm owns its networks (``networks``: critic heads, or None) and its settings (``Settings``,
read from ``[learner.NAME]``), never an optimiser or the model. ``distrl.learner.algorithms`` finds it by
name; ``examples/my_algorithm.py`` is a whole one.

Shapes: B trajectories, N steps in all (trajectory i's steps are ``spans[i]``), H the hidden size, n the
chunk's steps and W its window (the longest answer's tokens).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

import torch

from distrl.config.fields import num_field
from distrl.learner.losses import clipped_surrogate, weighted_likelihood
from distrl.records import Trajectory

__all__ = [
    "ActorTargets",
    "AdvantageTargets",
    "Algorithm",
    "Batch",
    "Chunk",
    "Plan",
    "SurrogateSettings",
    "Targets",
    "group_keys",
    "imitation",
    "likelihood_loss",
    "surrogate_loss",
]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    """A sampled batch, scored under the current weights without gradients."""

    trajectories: Sequence[Trajectory]
    spans: Sequence[tuple[int, int]]
    """Each trajectory's steps in the flat ``(N,)`` tensors: ``[start, end)``."""
    logprob: torch.Tensor
    """log π(a_t|s_t) at temperature 1 under the weights the update starts from (PPO's proximal
    policy), ``(N,)``."""
    behaviour: torch.Tensor
    """log μ(a_t|s_t): the stored log-prob of the policy that chose the action, ``(N,)``."""
    entropy: torch.Tensor
    """Mean per-token entropy of each answer, ``(N,)``."""
    state: torch.Tensor
    """The policy's last hidden state at the last prompt token, ``(N, H)``."""
    answer_state: torch.Tensor
    """The same at the answer's last token, ``(N, H)``."""
    rhos: torch.Tensor
    """ρ_t = π(a_t|s_t) / μ(a_t|s_t), ``(N,)``."""
    weights: torch.Tensor
    """Prioritised replay's importance-sampling weight of each step's trajectory, ``(N,)``."""
    invalid: torch.Tensor
    """1.0 where the answer is not an action, else 0.0, ``(N,)``."""
    outcome: torch.Tensor
    """1.0 for a successful trajectory, else 0.0, ``(B,)``."""

    def firsts(self, states: torch.Tensor) -> torch.Tensor:
        """Each trajectory's first row of ``states`` ``(N, ...)``: ``(B, ...)``."""
        return torch.stack([states[start] for start, _ in self.spans])

    def lasts(self, states: torch.Tensor) -> torch.Tensor:
        """Each trajectory's last row of ``states`` ``(N, ...)``: ``(B, ...)``."""
        return torch.stack([states[end - 1] for _, end in self.spans])

    def per_step(self, values: torch.Tensor) -> torch.Tensor:
        """A value per trajectory ``(B,)`` repeated over its steps: ``(N,)``."""
        lengths = torch.tensor([end - start for start, end in self.spans], device=values.device)
        return values.repeat_interleave(lengths)


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """An algorithm's first answer to a batch."""

    network_loss: torch.Tensor | None
    """Its networks' loss, with gradients to them only; None: it has no networks."""
    advantages: torch.Tensor | None
    """A_t, ``(N,)``, as reported; None where the algorithm has no advantages."""
    values: torch.Tensor | None = None
    """V(s_t) before this update, ``(N,)``, as reported; None without a value network."""
    priorities: list[float] | None = None
    """The new replay priority of each trajectory, ``(B,)``; None leaves them."""
    stats: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """Anything else it reports (``clipped_share``, ``dropped_groups``, ...), for TensorBoard."""


class Targets(Protocol):
    """What ``Algorithm.targets`` answers: anything its ``loss`` reads, with ``trained``."""

    @property
    def trained(self) -> torch.Tensor:
        """``(N,)`` booleans: the steps the actor loss reads."""
        ...


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    """One micro-batch of the trained steps, scored with gradients (training mode)."""

    rows: torch.Tensor
    """The chunk's steps as indices into the batch's N, ``(n,)`` longs: ``batch.logprob[chunk.rows]``."""
    token_logprob: torch.Tensor
    """log π of each answer token, ``(n, W)``, differentiable; 0 outside the answer."""
    answer: torch.Tensor
    """``(n, W)`` booleans: the position holds an answer token."""
    decision: torch.Tensor
    """``(n, W)`` booleans: the token is part of the decision (action type, points, typed text)."""
    entropy: torch.Tensor
    """Mean per-token entropy of each answer, ``(n,)``, differentiable."""
    steps: int
    """Steps trained in the whole update (on every rank): a loss that is a mean over them divides its sum
    over the chunk by this, so that the chunks' losses add up to the mean."""

    @property
    def logprob(self) -> torch.Tensor:
        """log π(a_t|s_t), the answer's tokens summed, ``(n,)``, differentiable."""
        return self.token_logprob.sum(dim=-1)


class Algorithm(Protocol):
    """One RL algorithm behind the learner core (module docstring). It is built as
    ``cls(settings, features=H)`` with ``settings`` its ``Settings`` read from ``[learner.NAME]``."""

    name: ClassVar[str]
    """Its name in ``[learner] algorithm``; its settings table is ``[learner.<name with _ for ->]``.
    Lower-case letters, digits, ``-`` and ``_``, and none that a registered algorithm has."""
    Settings: ClassVar[type[Any]]
    """Its settings: a frozen, keyword-only dataclass whose fields all have defaults."""
    prioritised: ClassVar[bool]
    """The replay samples ∝ priority^α (with importance-sampling weights); else uniformly."""
    networks: torch.nn.Module | None
    """Its trainable networks besides the policy (critic heads), or None. Where it has some, its actor
    waits for ``critic_warmup_updates``."""
    # optional: ``grouped = True`` makes the replay draw whole task groups for it (``ReplayBuffer.sample``)

    def __init__(self, settings: Any, *, features: int) -> None: ...

    def plan(self, batch: Batch) -> Plan: ...

    def targets(self, batch: Batch, plan: Plan) -> Targets: ...

    def loss(self, batch: Batch, targets: Any, chunk: Chunk) -> dict[str, torch.Tensor]: ...


# --- what several algorithms share ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class ActorTargets:
    """Weights on the log-likelihood of each step's tokens (``losses.weighted_likelihood``), ``(N,)``
    constants: the targets of the algorithms whose actor loss is a weighted log-likelihood."""

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


def likelihood_loss(targets: ActorTargets, chunk: Chunk) -> torch.Tensor:
    """``losses.weighted_likelihood`` of ``targets`` over ``chunk``: the actor loss of every algorithm
    whose targets are weights on log-likelihoods."""
    rows = chunk.rows
    return weighted_likelihood(
        (chunk.token_logprob * chunk.decision).sum(dim=-1),
        (chunk.token_logprob * (chunk.answer & ~chunk.decision)).sum(dim=-1),
        chunk.entropy,
        targets.decision[rows],
        targets.shared[rows],
        targets.sample_weights[rows],
        entropy_coef=targets.entropy_coef,
        steps=chunk.steps,
    )


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class AdvantageTargets:
    """Each step's advantage for a clipped surrogate (``surrogate_loss``), ``(N,)`` constants, and the
    steps trained."""

    advantages: torch.Tensor
    trained: torch.Tensor
    """``(N,)`` booleans."""
    clip: float
    """ε of the clip."""
    behaviour_cap: float
    """c, the cap of the decoupled importance weight π_prox/μ."""
    decoupled: bool
    entropy_coef: float = 0.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class SurrogateSettings:
    """The settings of a clipped surrogate (``surrogate_loss``), which the algorithms that train with one
    take into their own tables."""

    clip: float = num_field(0.2, gt=0, le=1)
    """ε: the ratio is clipped to [1 − ε, 1 + ε]."""
    decoupled: bool = True
    """The ratio against the update's starting policy and a capped importance weight to the behaviour
    policy (AReaL's form for stale data); false: the ratio against the behaviour policy."""
    behaviour_cap: float = num_field(5.0, gt=0)
    """c, the cap of the decoupled importance weight π_prox/μ."""
    entropy_coef: float = num_field(0.0, ge=0)
    """β of an entropy bonus −β·H (0: none)."""

    def targets(self, advantages: torch.Tensor, trained: torch.Tensor) -> AdvantageTargets:
        """``advantages`` and the ``trained`` steps, with these settings."""
        return AdvantageTargets(
            advantages=advantages,
            trained=trained,
            clip=self.clip,
            behaviour_cap=self.behaviour_cap,
            decoupled=self.decoupled,
            entropy_coef=self.entropy_coef,
        )


def surrogate_loss(batch: Batch, targets: AdvantageTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
    """``losses.clipped_surrogate`` of ``targets`` over ``chunk`` (the batch's scores as the proximal
    policy, its stored log-probs as the behaviour), with its entropy bonus where it has one."""
    rows = chunk.rows
    surrogate, _ = clipped_surrogate(
        chunk.logprob,
        batch.logprob[rows],
        batch.behaviour[rows],
        targets.advantages[rows],
        clip=targets.clip,
        behaviour_cap=targets.behaviour_cap,
        decoupled=targets.decoupled,
        steps=chunk.steps,
    )
    losses = {"surrogate": surrogate}
    if targets.entropy_coef:
        losses["entropy"] = -targets.entropy_coef * chunk.entropy.sum() / chunk.steps
    return losses


def group_keys(batch: Batch) -> list[str]:
    """Each trajectory's group, ``(B,)``: its ``group`` (a task group played across the fleet, ``[tasks]
    group_size``), else its task's id, so that plays of one task in a batch form a group either way."""
    return [t.group or f"task:{t.task.id}" for t in batch.trajectories]
