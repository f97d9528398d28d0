"""The actor's losses and filters, as plain functions of tensors (``reference/paper.md`` §3 and §5).

- A-RIDE (Eq. 1): each step's weight on −log π(a_t|s_t) is min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid}),
  and the loss over the N steps trained is
  L_π = −(1/N)·Σ_t w_t·[min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid})·log π(a_t|s_t) + β·H(π(·|s_t))],
  with w_t the importance-sampling weights of prioritised replay, ρ̄ ``rho_clip``, κ
  ``invalid_penalty`` and β ``entropy_coef``. Minimising it raises the log-likelihood of actions with
  a positive weight, lowers that of invalid answers, and raises the entropy.
- DigiRL: imitation (−(1/N)·Σ log π) of the steps its two hard filters keep: trajectories whose
  instruction-level advantage r − V_instr(c) is positive, and in them the steps whose doubly robust
  step advantage exceeds 1/H.
- filtered BC: imitation of every step of the successful trajectories.
- ``top_trajectories``: the curricula's filter over a batch's trajectories, the highest-scoring share
  (DigiRL's by r − V_instr(c); A-RIDE's, optionally, by V_traj or r − V_traj).

``Learner.update`` computes log π and H with gradients and calls these; the tests work them out by hand.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "a_ride_actor_loss",
    "a_ride_weights",
    "digirl_keep",
    "filtered_bc_keep",
    "imitation_loss",
    "top_trajectories",
]


def a_ride_weights(
    rho: torch.Tensor,
    advantages: torch.Tensor,
    invalid: torch.Tensor,
    *,
    rho_clip: float,
    invalid_penalty: float,
) -> torch.Tensor:
    """Each step's weight on −log π in Eq. 1, ``(N,)``: min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid}).
    ``invalid`` is 1.0 where the answer did not parse, else 0.0."""
    return rho.clamp(max=rho_clip) * (advantages - invalid_penalty * invalid)


def a_ride_actor_loss(
    logprob: torch.Tensor,
    entropy: torch.Tensor,
    weights: torch.Tensor,
    sample_weights: torch.Tensor,
    *,
    entropy_coef: float,
    steps: int,
) -> torch.Tensor:
    """Eq. 1's actor loss over these steps, as their share of the mean over ``steps`` steps trained:
    −(1/steps)·Σ w·(weight·log π + β·H). ``weights`` from ``a_ride_weights`` (constants), ``sample_weights``
    the replay's importance-sampling weights w; ``logprob`` and ``entropy`` carry the gradients."""
    return -(sample_weights * (weights * logprob + entropy_coef * entropy)).sum() / steps


def imitation_loss(logprob: torch.Tensor, *, steps: int) -> torch.Tensor:
    """The baselines' actor loss over these steps, as their share of the mean over ``steps``:
    −(1/steps)·Σ log π."""
    return -logprob.sum() / steps


def digirl_keep(
    step_advantages: torch.Tensor, *, final_reward: float, instruction_value: float, max_steps: int
) -> torch.Tensor:
    """DigiRL's filters on one trajectory, ``(T,)`` booleans: no step unless the instruction-level
    advantage r − V_instr(c) is positive; then the steps whose step advantage exceeds 1/H."""
    if final_reward - instruction_value <= 0:
        return torch.zeros_like(step_advantages, dtype=torch.bool)
    return step_advantages > 1.0 / max_steps


def filtered_bc_keep(success: bool, steps: int, device: torch.device | None = None) -> torch.Tensor:
    """Filtered BC's filter on one trajectory of ``steps`` steps: all of them if it succeeded, else none."""
    return torch.full((steps,), success, dtype=torch.bool, device=device)


def top_trajectories(scores: torch.Tensor, share: float, *, above: float | None = None) -> torch.Tensor:
    """``(B,)`` booleans: the ⌈share·B⌉ trajectories with the highest ``scores`` (the first of equals),
    and of those only the ones scoring more than ``above`` when it is given."""
    count = min(len(scores), max(1, math.ceil(share * len(scores) - 1e-9)))
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    keep = torch.zeros(len(scores), dtype=torch.bool, device=scores.device)
    keep[order[:count]] = True
    if above is not None:
        keep &= scores > above
    return keep
