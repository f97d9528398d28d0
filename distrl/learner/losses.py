"""The actor's losses and filters, as plain functions of tensors (``reference/paper.md`` §3 and §5).

- A-RIDE (Eq. 1): each step's weight on −log π(a_t|s_t) is min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid}),
  and the loss over the N steps trained is
  L_π = −(1/N)·Σ_t w_t·[min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid})·log π(a_t|s_t) + β·H(π(·|s_t))],
  with w_t the importance-sampling weights of prioritised replay, ρ̄ ``rho_clip``, κ
  ``invalid_penalty`` and β ``entropy_coef``. Minimising it raises the log-likelihood of actions with
  a positive weight, lowers that of invalid answers, and raises the entropy.
  Its signed form weighs only the decision tokens with A_t and the shared format with max(A_t, 0)
  (``distrl.learner.a_ride``); ``actor_loss`` takes the two weights apart.
- The anchor: + κ_KL·(1/N)·Σ_t w_t·KL_t, the KL(π ‖ π_ref) of each answer (its tokens' summed) to the
  starting policy, so that the deployed (greedy) policy cannot drift from its start for free.
- DigiRL: imitation (−(1/N)·Σ log π) of the steps its two hard filters keep: trajectories whose
  instruction-level advantage r − V_instr(c) is positive, and in them the steps whose doubly robust
  step advantage exceeds 1/H.
- filtered BC: imitation of every step of the successful trajectories.
- ``top_trajectories``: the curricula's filter over a batch's trajectories, the highest-scoring share
  (DigiRL's by r − V_instr(c); A-RIDE's, optionally, by V_traj or r − V_traj).

The learner core computes log π, H and the KL with gradients and calls these; the tests work them out by hand.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "a_ride_weights",
    "actor_loss",
    "digirl_keep",
    "filtered_bc_keep",
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


def actor_loss(
    decision_logprob: torch.Tensor,
    shared_logprob: torch.Tensor,
    entropy: torch.Tensor,
    kl: torch.Tensor | None,
    decision_weights: torch.Tensor,
    shared_weights: torch.Tensor,
    sample_weights: torch.Tensor,
    *,
    entropy_coef: float,
    kl_coef: float,
    steps: int,
) -> torch.Tensor:
    """The actor loss over these steps, as their share of the mean over the ``steps`` steps trained:

    −(1/steps)·Σ w·(d·log π_decision + s·log π_shared + β·H − κ_KL·KL),

    with log π_decision and log π_shared the sums of log π over an answer's decision and format tokens
    (together its log π), d and s their weights (``a_ride_weights``, or 1 and 1 for imitation), w the
    sample weights, H the mean per-token entropy and KL the answer's KL(π ‖ π_ref) (summed over its
    tokens) to the starting policy (None: no anchor). Weights are constants; the log-probs, H and KL
    carry the gradients."""
    inner = decision_weights * decision_logprob + shared_weights * shared_logprob + entropy_coef * entropy
    if kl is not None and kl_coef:
        inner = inner - kl_coef * kl
    return -(sample_weights * inner).sum() / steps


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
