"""A-RIDE (``reference/paper.md`` §3): Retrace critics, prioritised replay and a ρ-weighted actor. Its
settings are ``[learner.a_ride]`` (``ARideSettings``).

``plan``, per trajectory of the batch:

- the shaped reward r (``rewards.shaped_rewards``), ρ_t and the traces c_t = λ·min(1, ρ_t);
- Retrace targets v_t for the step critic (``retrace_lambda``) and advantages A_t (traces with
  ``advantage_lambda``) over the whole trajectory (``distrl.learner.retrace``);
- its DPER priority p = w1·mean|δ_t| + w2·mean ρ_t + w3·mean(−log π(a_t|s_t)) (ρ capped at 10 there so
  one wild ratio cannot own the buffer);
- the critics' loss, as the paper's total loss sums them: L(V) = E[w·BCE(V(s_t), v_t)], the step critic
  regressed on its Retrace targets, plus L(V_traj) = E[w·BCE(V_traj(s_H, a_H), r)], r = 1 for a
  successful episode.

``actor_targets``: Eq. 1, L_π = −E[w·min(ρ_t, ρ̄)·A_t·log π(a_t|s_t)] − β·E[w·H(π(·|s_t))]
+ κ·E[w·min(ρ_t, ρ̄)·1{a_t invalid}·log π(a_t|s_t)] (ρ raised to ``rho_floor`` first), with A_t as
``advantages`` says (``ARideSettings.advantages``):

- ``decision`` (default): A_t signed, scaled by its weighted mean magnitude over the batch, on the
  answer's decision tokens (action type, points, typed text): a failed episode's choices are pushed down
  as a successful one's are pushed up. The format tokens every answer shares get only the positive
  part, so the shared format is never pushed down (what made signed advantages drift into answers that
  do not parse).
- ``positive``: max(A_t, 0) on the whole answer, scaled to mean 1 over the steps it keeps: only
  successes teach (the paper's released code clamps A the same way).
- ``binary``: 1 where A_t > 0 on the whole answer, 0 elsewhere: the steps ``positive`` keeps, each
  weighed 1 as imitation weighs it (the paper's released code binarises its clamped A so).
- ``normalised`` and ``signed`` on the whole answer, as ``retrace.actor_advantages`` says.

The invalid-answer penalty is an advantage of −κ on answers that did not parse (every token of such an
answer counts as a decision), weighted by the same clipped ρ so that its push fades once such answers
have become unlikely; with ``push_down_floor`` a push down stops once ρ is below it, as PPO's clip
does. With ``trajectory_filter``, only the batch's top ``trajectory_top`` trajectories
by V_traj(s_H, a_H) (``value``) or r − V_traj (``advantage``) train the actor, as the paper filters its
buffer to high-value trajectories. The loss is the mean over the steps trained (see
``losses.weighted_likelihood``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Literal

import torch

from distrl.config.fields import num_field
from distrl.errors import ConfigError
from distrl.learner.algorithm import ActorTargets, Batch, Chunk, Plan, likelihood_loss
from distrl.learner.heads import Heads
from distrl.learner.losses import a_ride_weights, top_trajectories
from distrl.learner.retrace import actor_advantages, priority, retrace, td_errors, traces
from distrl.learner.rewards import shaped_rewards

__all__ = ["ARide", "ARideSettings"]

_BCE = torch.nn.functional.binary_cross_entropy_with_logits


@dataclasses.dataclass(frozen=True, kw_only=True)
class ARideSettings:
    """``[learner.a_ride]``: A-RIDE's hyper-parameters."""

    gamma: float = num_field(0.9, ge=0, le=1)
    """Discount factor γ."""
    retrace_lambda: float = num_field(1.0, ge=0, le=1)
    """λ in the truncated importance weight c = λ·min(1, ρ) of the step critic's Retrace targets."""
    advantage_lambda: float = num_field(0.5, ge=0, le=1)
    """λ of the traces in the actor's advantages A_t = r_t + γ·v_{t+1} − V(s_t), where v are
    Retrace targets with c = advantage_lambda·min(1, ρ) (``retrace_lambda``: the critic's own targets).
    Below 1 a step is credited more with what its action changed at once and less with the rest of its
    episode, as GAE's λ does; at 1 every step of a successful episode gets nearly the same credit, wasted
    moves included (docs/results/benchmarks.md, "A-RIDE against DigiRL, seed by seed": 0.5 trains
    better than 1 on ``tiny``)."""
    rho_clip: float = num_field(1.0, gt=0, allow_inf=True)
    """Upper clip of ρ in the actor loss; ``inf`` leaves it unclipped as in the paper's Eq. 1."""
    rho_floor: float = num_field(0.0, ge=0)
    """Lower clip of ρ in the actor loss, at most ``rho_clip``: a step weighs its advantage by
    min(max(ρ, floor), ``rho_clip``). 0 (default) leaves ρ below the clip as it is, as Eq. 1 does;
    ``rho_floor = rho_clip = 1`` takes ρ out of the actor's weights, so each step weighs its advantage
    alone (DigiRL's actor weighs each step it keeps 1, whatever its ρ)."""
    push_down_floor: float = num_field(0.0, ge=0, le=1)
    """a step whose weight is negative (a negative advantage, an invalid answer) stops pushing its
    answer down once ρ = π/μ has fallen below this, as PPO's clip at 1 − ε stops a push down; 0 never
    stops (the push then fades only with ρ itself)."""
    entropy_coef: float = num_field(0.0, ge=0)
    """β, the entropy bonus coefficient. 0: no bonus, as the paper's released code defaults (β = 0.05
    when it is on). Measured on ``tiny-bc``: its answers' entropy is 0.01-0.02 nats per token, so the bonus
    buys no exploration, and β = 0.05 cost test success at temperature 1 in each of three paired fleet
    seeds (docs/results/learning.md, "A-RIDE against DigiRL in the fleet")."""
    invalid_penalty: float = num_field(1.0, ge=0)
    """Weight of the invalid-action penalty term."""
    advantages: Literal["decision", "positive", "binary", "normalised", "signed"] = "decision"
    """which advantages weigh −log π in the actor loss.

    - ``decision`` (default): A_t signed, scaled to weighted mean magnitude 1 over the batch, on the
      answer's decision tokens (action type, points, typed text), and only its positive part on the
      format tokens every answer shares: failures teach too, and the shared format is never pushed down.
    - ``positive``: max(A_t, 0) on the whole answer, so the actor raises only the actions that did better
      than the step critic expected; scaled to mean 1 over the steps it keeps. The paper's released code
      clamps A the same way (then binarises it, losing the size). Only successes teach.
    - ``binary``: 1 where A_t > 0, else 0, on the whole answer: the steps ``positive`` keeps, each weighed
      1 whatever its size, as the paper's released code binarises them and DigiRL's actor weighs each
      step it keeps.
    - ``normalised``: A_t shifted and scaled to weighted mean 0 and deviation 1 over the batch, on the
      whole answer.
    - ``signed``: A_t as it is on the whole answer, Eq. 1 as written.

    Why not ``signed`` on the whole answer: an answer's log-prob sums over all its tokens, most of them
    the action format every answer shares. When most episodes fail most advantages are negative, and
    pushing those answers down pushes the shared format down on every update, so a small policy drifts
    into answers that do not parse (docs/concepts/algorithms.md, "The built-in algorithms")."""
    priority_weights: tuple[float, float, float] = field(default=(50.0, 1.0, 0.01), metadata={"ge": 0})
    """w1, w2, w3 of the replay priority w1·mean|δ| + w2·mean ρ + w3·mean H."""
    step_cost: float = num_field(0.0, ge=0)
    """The reward r: taken off every step (the paper's code: 0.05), so shorter successes score
    higher."""
    repeat_penalty: float = num_field(0.0, ge=0)
    """The reward r: taken off a step that repeats the previous valid action, times how many times
    in a row it has been repeated (the paper's code: 0.4)."""
    invalid_reward: float = num_field(0.0, ge=0)
    """The reward r: taken off a step whose answer is not an action (the paper's code: 1). Beside
    ``invalid_penalty``, the actor loss's own term for such answers."""
    trajectory_filter: Literal["off", "value", "advantage"] = "off"
    """A-RIDE's use of the trajectory critic V_traj(s_H, a_H): ``value`` trains the actor on the
    trajectories it values highest, ``advantage`` on the highest r − V_traj (the paper's released code),
    ``off`` on all (the critics always train on all)."""
    trajectory_top: float = num_field(0.5, gt=0, le=1)
    """The share of each batch's trajectories ``trajectory_filter`` keeps (rounded up)."""

    def __post_init__(self) -> None:
        if self.rho_floor > self.rho_clip:
            raise ConfigError.at(
                "learner.a_ride.rho_floor",
                f"must be at most rho_clip ({self.rho_clip:g}), got {self.rho_floor:g}",
            )


class ARide:
    """A-RIDE as a loss module (module docstring): a step critic V(s_t) and a trajectory critic
    V_traj(s_H, a_H) as its networks."""

    name = "a-ride"
    Settings = ARideSettings
    prioritised = True

    def __init__(self, settings: ARideSettings, *, features: int) -> None:
        self.settings = settings
        self.networks = Heads(features, "step", "trajectory")

    def plan(self, batch: Batch) -> Plan:
        settings = self.settings
        heads = self.networks
        values = heads.value("step", batch.state)
        targets = torch.zeros_like(values)
        advantages = torch.zeros_like(values)
        priorities = []
        for trajectory, (start, end) in zip(batch.trajectories, batch.spans, strict=True):
            rewards = torch.tensor(
                shaped_rewards(
                    trajectory,
                    step_cost=settings.step_cost,
                    invalid_reward=settings.invalid_reward,
                    repeat_penalty=settings.repeat_penalty,
                ),
                dtype=torch.float32,
                device=values.device,
            )
            rho, value = batch.rhos[start:end], values[start:end]
            target, advantage = retrace(rewards, value, traces(rho, settings.retrace_lambda), settings.gamma)
            if settings.advantage_lambda != settings.retrace_lambda:
                _, advantage = retrace(rewards, value, traces(rho, settings.advantage_lambda), settings.gamma)
            delta = td_errors(rewards, value, settings.gamma)
            priorities.append(priority(delta, rho, batch.logprob[start:end], settings.priority_weights))
            targets[start:end] = target
            advantages[start:end] = advantage
        step = batch.weights * _BCE(
            heads.logit("step", batch.state), targets.clamp(0.0, 1.0), reduction="none"
        )
        terminal = heads.logit("trajectory", batch.lasts(batch.answer_state))
        last = batch.firsts(batch.weights) * _BCE(terminal, batch.outcome, reduction="none")
        clip = settings.rho_clip
        return Plan(
            network_loss=step.mean() + last.mean(),
            advantages=advantages,
            values=values,
            priorities=priorities,
            stats={"clipped_share": float((batch.rhos > clip).float().mean())},
        )

    def targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        settings = self.settings
        assert plan.advantages is not None
        mode = settings.advantages
        shaped = actor_advantages(plan.advantages, batch.weights, mode)
        weigh = dict(
            rho_clip=settings.rho_clip, rho_floor=settings.rho_floor, invalid_penalty=settings.invalid_penalty
        )
        decision = a_ride_weights(batch.rhos, shaped, batch.invalid, **weigh)
        shared = (
            a_ride_weights(batch.rhos, shaped.clamp(min=0.0), batch.invalid, **weigh)
            if mode == "decision"
            else decision
        )
        if settings.push_down_floor > 0:  # a push down stops where the answer has lost enough already
            spent = batch.rhos < settings.push_down_floor
            decision = decision.masked_fill(spent & (decision < 0), 0.0)
            shared = shared.masked_fill(spent & (shared < 0), 0.0)
        targets = ActorTargets(
            decision=decision,
            shared=shared,
            sample_weights=batch.weights,
            entropy_coef=settings.entropy_coef,
        )
        if settings.trajectory_filter == "off":
            return targets
        value = self.networks.value("trajectory", batch.lasts(batch.answer_state))
        score = value if settings.trajectory_filter == "value" else batch.outcome - value
        chosen = top_trajectories(score, settings.trajectory_top)
        return targets.dropping(~batch.per_step(chosen))

    def loss(self, batch: Batch, targets: ActorTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
        return {"actor": likelihood_loss(targets, chunk)}
