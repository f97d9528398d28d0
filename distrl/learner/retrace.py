"""The numbers A-RIDE and DigiRL compute over one trajectory, as plain functions of tensors.

Notation (``docs/concepts/algorithms.md``): a trajectory has steps t = 0 … T−1 with rewards r_t, behaviour
log-probs log μ(a_t|s_t) stored at collection and current log-probs log π(a_t|s_t); V(s_t) is the step
critic. An episode's end is terminal, so V(s_T) = 0 unless a ``bootstrap`` value is given.

- importance ratio ρ_t = π(a_t|s_t) / μ(a_t|s_t) = exp(log π − log μ);
- truncated trace c_t = λ·min(1, ρ_t);
- TD error δ_t = r_t + γ·V(s_{t+1}) − V(s_t);
- Retrace target (paper: "V(s_t) ← V(s_t) + δ_t" with the sum below):
  v_t = V(s_t) + Σ_{k=t}^{T−1} γ^{k−t} (Π_{i=t+1}^{k} c_i) δ_k, computed backwards as
  v_t = V(s_t) + δ_t + γ·c_{t+1}·(v_{t+1} − V(s_{t+1})). On-policy (ρ = 1) it is the λ-return; with
  λ = 1 the Monte-Carlo return.
- advantage A_t = r_t + γ·v_{t+1} − V(s_t): the Retrace estimate of Q(s_t, a_t) minus V(s_t), over the
  whole rest of the trajectory. (The paper writes the one-step TD error; its released code used three-step
  windows. The whole-trajectory form uses every later reward, corrected by the traces.)

Nothing here takes gradients: the targets and advantages are constants for the losses that use them.
"""

from __future__ import annotations

import torch

__all__ = [
    "actor_advantages",
    "digirl_step_advantages",
    "importance_ratios",
    "normalise",
    "priority",
    "retrace",
    "td_errors",
    "traces",
]


def importance_ratios(logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor) -> torch.Tensor:
    """ρ_t = exp(log π − log μ), detached; ``(T,)``."""
    return torch.exp(logprobs.detach() - behaviour_logprobs)


def traces(rho: torch.Tensor, lam: float) -> torch.Tensor:
    """c_t = λ·min(1, ρ_t); ``(T,)``."""
    return lam * torch.clamp(rho, max=1.0)


def td_errors(
    rewards: torch.Tensor, values: torch.Tensor, gamma: float, bootstrap: float = 0.0
) -> torch.Tensor:
    """δ_t = r_t + γ·V(s_{t+1}) − V(s_t), with V(s_T) = ``bootstrap``; ``(T,)``."""
    values = values.detach()
    following = torch.cat([values[1:], values.new_tensor([bootstrap])])
    return rewards + gamma * following - values


def retrace(
    rewards: torch.Tensor,
    values: torch.Tensor,
    c: torch.Tensor,
    gamma: float,
    bootstrap: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Retrace targets v_t and advantages A_t = r_t + γ·v_{t+1} − V(s_t) (module docstring); both ``(T,)``.

    ``c`` are the traces c_t (``traces``); c_0 is not used, since a target starts from its own step.
    """
    values = values.detach()
    if not rewards.shape == values.shape == c.shape or rewards.dim() != 1:
        raise ValueError(
            f"rewards, values and c must be (T,) alike, got {rewards.shape}, {values.shape}, {c.shape}"
        )
    deltas = td_errors(rewards, values, gamma, bootstrap)
    steps = rewards.shape[0]
    targets = torch.empty_like(values)
    correction = values.new_tensor(0.0)  # v_{t+1} − V(s_{t+1}); 0 past the end
    for t in reversed(range(steps)):
        trace = c[t + 1] if t + 1 < steps else values.new_tensor(0.0)
        correction = deltas[t] + gamma * trace * correction
        targets[t] = values[t] + correction
    following = torch.cat([targets[1:], values.new_tensor([bootstrap])])
    advantages = rewards + gamma * following - values
    return targets, advantages


def digirl_step_advantages(
    rewards: torch.Tensor, values: torch.Tensor, final_reward: float, lam: float
) -> torch.Tensor:
    """DigiRL's doubly robust step advantage (``docs/concepts/algorithms.md``), ``(T,)``:

    A_h = λ^{H−h}·r_H + (1 − λ^{H−h}·r_H)·(V(s_{h+1}) + r_h − V(s_h)), with h = 1 … H the step's position,
    r_H the episode's final reward and V(s_{H+1}) = 0.
    """
    values = values.detach()
    steps = rewards.shape[0]
    following = torch.cat([values[1:], values.new_tensor([0.0])])
    to_go = torch.arange(steps - 1, -1, -1, dtype=values.dtype, device=values.device)  # H − h
    weight = (lam**to_go) * final_reward
    return weight + (1.0 - weight) * (following + rewards - values)


def normalise(advantages: torch.Tensor, weights: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``advantages`` shifted and scaled to weighted mean 0 and weighted standard deviation 1 over the
    batch (``weights``: the importance-sampling weights the loss applies); a batch of equal advantages
    becomes all zeros."""
    total = weights.sum().clamp_min(eps)
    mean = (weights * advantages).sum() / total
    std = ((weights * (advantages - mean) ** 2).sum() / total).sqrt()
    return (advantages - mean) / (std + eps)


def actor_advantages(advantages: torch.Tensor, weights: torch.Tensor, mode: str) -> torch.Tensor:
    """The advantages A-RIDE's actor loss weighs −log π with (``LearnerSettings.advantages``):

    - ``positive``: max(A_t, 0), scaled so that the steps it keeps have weighted mean 1 (a batch with no
      positive advantage is all zeros). Only actions better than the critic expected are raised, each
      in proportion to how much better, and on average as strongly as an imitation loss raises its own
      (so that the entropy bonus and the invalid-output penalty keep their weight beside it);
    - ``binary``: 1 where A_t > 0, else 0: the steps ``positive`` keeps, each raised as an imitation loss
      raises its own whatever its size (the paper's released code binarises its clamped advantages so;
      DigiRL's actor weighs each step it keeps 1);
    - ``normalised`` and ``decision``: ``normalise(A, weights)``, so that a batch pushes up as much as it
      pushes down whatever the critic's bias (A-RIDE puts the ``decision`` ones on the decision tokens
      only, and their positive part on the format);
    - ``signed``: A as it is (Eq. 1 as written).
    """
    if mode == "signed":
        return advantages
    if mode in ("normalised", "decision"):
        return normalise(advantages, weights)
    if mode == "binary":
        return (advantages > 0).to(advantages.dtype)
    if mode != "positive":
        raise ValueError(f"advantages mode {mode!r} is not decision, positive, binary, normalised or signed")
    positive = advantages.clamp(min=0.0)
    kept = positive > 0
    if not bool(kept.any()):
        return positive
    return positive / ((weights * positive)[kept].sum() / weights[kept].sum())


def priority(
    deltas: torch.Tensor,
    rho: torch.Tensor,
    logprobs: torch.Tensor,
    weights: tuple[float, float, float],
    rho_cap: float = 10.0,
) -> float:
    """DPER's trajectory priority p = w1·mean|δ_t| + w2·mean ρ_t + w3·mean H_t, with H_t = −log π(a_t|s_t)
    (paper §3). ρ is capped at ``rho_cap`` here, so that one wild ratio cannot own the buffer."""
    w1, w2, w3 = weights
    value = (
        w1 * deltas.detach().abs().mean()
        + w2 * rho.detach().clamp(max=rho_cap).mean()
        + w3 * (-logprobs.detach()).mean()
    )
    return float(value)
