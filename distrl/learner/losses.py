"""The actor's losses and filters, as plain functions of tensors (``reference/paper.md`` §3 and §5).
The algorithms (``distrl.learner.algorithms``) compose them; the tests work each out by hand.

- A-RIDE (Eq. 1): each step's weight on −log π(a_t|s_t) is min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid}),
  and the loss over the N steps trained is
  L_π = −(1/N)·Σ_t w_t·[min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid})·log π(a_t|s_t) + β·H(π(·|s_t))],
  with w_t the importance-sampling weights of prioritised replay, ρ̄ ``rho_clip``, κ
  ``invalid_penalty`` and β ``entropy_coef``. Minimising it raises the log-likelihood of actions with
  a positive weight, lowers that of invalid answers, and raises the entropy.
  Its signed form weighs only the decision tokens with A_t and the shared format with max(A_t, 0);
  ``weighted_likelihood`` takes the two weights apart.
- The anchor, the core's own regulariser: + κ_KL·(1/N)·Σ_t w_t·KL_t, the KL(π ‖ π_ref) of each answer
  (its tokens' summed, ``kl_to_reference``) to the starting policy, so that the deployed (greedy)
  policy cannot drift from its start for free (``kl_anchor``).
- DigiRL: imitation (−(1/N)·Σ log π) of the steps its two hard filters keep: trajectories whose
  instruction-level advantage r − V_instr(c) is positive, and in them the steps whose doubly robust
  step advantage exceeds 1/H.
- filtered BC: imitation of every step of the successful trajectories.
- PPO: ``clipped_surrogate``, the clipped ratio objective, decoupled from the behaviour policy for
  stale data.
- GRPO and RLOO: ``group_advantages``, outcome advantages relative to the other plays of the same task.
- ``top_trajectories``: the curricula's filter over a batch's trajectories, the highest-scoring share
  (DigiRL's by r − V_instr(c); A-RIDE's, optionally, by V_traj or r − V_traj).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "a_ride_weights",
    "clipped_surrogate",
    "digirl_keep",
    "filtered_bc_keep",
    "group_advantages",
    "kl_anchor",
    "kl_to_reference",
    "top_trajectories",
    "weighted_likelihood",
]


def a_ride_weights(
    rho: torch.Tensor,
    advantages: torch.Tensor,
    invalid: torch.Tensor,
    *,
    rho_clip: float,
    invalid_penalty: float,
    rho_floor: float = 0.0,
) -> torch.Tensor:
    """Each step's weight on −log π in Eq. 1, ``(N,)``: min(ρ_t, ρ̄)·(A_t − κ·1{a_t invalid}), with ρ_t
    raised to ``rho_floor`` first (0: as it is). ``invalid`` is 1.0 where the answer did not parse, else
    0.0."""
    return rho.clamp(min=rho_floor, max=rho_clip) * (advantages - invalid_penalty * invalid)


def weighted_likelihood(
    decision_logprob: torch.Tensor,
    shared_logprob: torch.Tensor,
    entropy: torch.Tensor,
    decision_weights: torch.Tensor,
    shared_weights: torch.Tensor,
    sample_weights: torch.Tensor,
    *,
    entropy_coef: float,
    steps: int,
) -> torch.Tensor:
    """The actor loss of weighted log-likelihoods over these steps, as their share of the mean over the
    ``steps`` steps trained:

    −(1/steps)·Σ w·(d·log π_decision + s·log π_shared + β·H),

    with log π_decision and log π_shared the sums of log π over an answer's decision and format tokens
    (together its log π), d and s their weights (``a_ride_weights``, or 1 and 1 for imitation), w the
    sample weights and H the mean per-token entropy. Weights are constants; the log-probs and H carry the
    gradients."""
    inner = decision_weights * decision_logprob + shared_weights * shared_logprob + entropy_coef * entropy
    return -(sample_weights * inner).sum() / steps


def kl_to_reference(log_probs: torch.Tensor, reference: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """KL(π ‖ π_ref) of each answer, its tokens' summed, ``(n,)``: Σ_t Σ_v π(v)·(log π(v) − log π_ref(v))
    over the answer's positions (``answer``, ``(n, W)`` booleans), from the two distributions over the
    vocabulary at each position, ``(n, W, V)``. A token both forbid (log-prob −inf in both) adds 0."""
    if reference.shape != log_probs.shape:
        raise ValueError(f"the reference is {tuple(reference.shape)}, the answers {tuple(log_probs.shape)}")
    forbidden = torch.isneginf(log_probs) & torch.isneginf(reference)
    difference = (log_probs - reference).masked_fill(forbidden, 0.0)
    token_kl = (log_probs.exp() * difference).sum(dim=-1)
    return torch.where(answer, token_kl, 0.0).sum(dim=-1)


def kl_anchor(kl: torch.Tensor, sample_weights: torch.Tensor, *, kl_coef: float, steps: int) -> torch.Tensor:
    """The core's anchor over these steps, as their share of the mean over the ``steps`` steps trained:
    κ_KL·(1/steps)·Σ w·KL(π ‖ π_ref), with ``kl`` from ``kl_to_reference``."""
    return kl_coef * (sample_weights * kl).sum() / steps


def clipped_surrogate(
    logprob: torch.Tensor,
    proximal: torch.Tensor,
    behaviour: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip: float,
    behaviour_cap: float,
    decoupled: bool,
    steps: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped objective over these steps (Schulman et al. 2017, Eq. 7), as their share of the
    mean over the ``steps`` steps trained, and each step's clipped flag ``(n,)``.

    With ``decoupled`` (the proximal-policy form of Hilton et al. 2022 that AReaL trains stale rollouts
    with), the ratio is r = π_θ/π_prox against the policy the update started from (``proximal``), and the
    staleness is corrected apart by the importance weight min(π_prox/μ, ``behaviour_cap``) to the
    behaviour policy μ that played the step:

    L = −(1/steps)·Σ min(π_prox/μ, c)·min(r·A, clip(r, 1 − ε, 1 + ε)·A).

    Without it, r = π_θ/μ and no weight: the classic objective, whose clip then also bounds the step
    away from a stale behaviour policy. Log-probs are ``(n,)`` answer sums; only ``logprob`` carries
    gradients."""
    anchor = proximal if decoupled else behaviour
    ratio = torch.exp(logprob - anchor)
    clipped_ratio = ratio.clamp(1.0 - clip, 1.0 + clip)
    surrogate = torch.minimum(ratio * advantages, clipped_ratio * advantages)
    weight = torch.exp(proximal - behaviour).clamp(max=behaviour_cap) if decoupled else torch.ones_like(ratio)
    clipped = (ratio.detach() - clipped_ratio.detach()).abs() > 0
    return -(weight.detach() * surrogate).sum() / steps, clipped


def group_advantages(
    rewards: torch.Tensor, groups: list[str], *, scale: bool, leave_one_out: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Group-relative outcome advantages of ``rewards`` ``(B,)``, the trajectories of one ``groups`` key
    a group, and ``(B,)`` booleans: the trajectories in a group whose rewards are not all equal (the
    others get advantage 0; a group of one is uniform).

    - GRPO (Shao et al. 2024): A_i = (R_i − mean_g R) / std_g R with ``scale``, R_i − mean_g R without
      (Dr. GRPO); the standard deviation is the population one, over the group's K.
    - RLOO (Ahmadian et al. 2024) with ``leave_one_out``: A_i = R_i − mean of the group's others'
      rewards = K/(K − 1)·(R_i − mean_g R)."""
    advantages = torch.zeros_like(rewards)
    informative = torch.zeros(len(rewards), dtype=torch.bool, device=rewards.device)
    for key in dict.fromkeys(groups):
        members = torch.tensor([g == key for g in groups], device=rewards.device)
        values = rewards[members]
        if len(values) < 2 or bool((values == values[0]).all()):
            continue
        centred = values - values.mean()
        if leave_one_out:
            centred = centred * len(values) / (len(values) - 1)
        elif scale:
            centred = centred / values.std(unbiased=False)
        advantages[members] = centred
        informative |= members
    return advantages, informative


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
