"""A-RIDE (``reference/paper.md`` §3): Retrace critics, prioritised replay and a ρ-weighted actor.

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
+ κ·E[w·min(ρ_t, ρ̄)·1{a_t invalid}·log π(a_t|s_t)], with A_t as ``advantages`` says
(``LearnerSettings.advantages``):

- ``decision`` (default): A_t signed, scaled by its weighted mean magnitude over the batch, on the
  answer's decision tokens (action type, points, typed text): a failed episode's choices are pushed down
  as a successful one's are pushed up. The format tokens every answer shares get only the positive
  part, so the shared format is never pushed down (what made signed advantages drift into answers that
  do not parse).
- ``positive``: max(A_t, 0) on the whole answer, scaled to mean 1 over the steps it keeps: only
  successes teach (the paper's released code clamps A the same way).
- ``normalised`` and ``signed`` on the whole answer, as ``retrace.actor_advantages`` says.

The invalid-answer penalty is an advantage of −κ on answers that did not parse (every token of such an
answer counts as a decision), weighted by the same clipped ρ so that its push fades once such answers
have become unlikely; with ``push_down_floor`` a push down stops once ρ is below it, as PPO's clip
does. With ``trajectory_filter``, only the batch's top ``trajectory_top`` trajectories
by V_traj(s_H, a_H) (``value``) or r − V_traj (``advantage``) train the actor, as the paper filters its
buffer to high-value trajectories. The loss is the mean over the steps trained (see
``losses.actor_loss``).
"""

from __future__ import annotations

import torch

from distrl.config import LearnerSettings
from distrl.learner.algorithm import ActorTargets, Batch, Plan
from distrl.learner.critics import Critics
from distrl.learner.losses import a_ride_weights, top_trajectories
from distrl.learner.retrace import actor_advantages, priority, retrace, td_errors, traces
from distrl.learner.rewards import shaped_rewards

__all__ = ["ARide"]

_BCE = torch.nn.functional.binary_cross_entropy_with_logits


class ARide:
    """A-RIDE behind the learner core's ``Algorithm`` interface (module docstring)."""

    name = "a-ride"
    prioritised = True
    critics = True

    def __init__(self, settings: LearnerSettings) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        settings = self.settings
        device = batch.values.device
        targets = torch.zeros_like(batch.values)
        advantages = torch.zeros_like(batch.values)
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
                device=device,
            )
            rho, value = batch.rhos[start:end], batch.values[start:end]
            target, advantage = retrace(rewards, value, traces(rho, settings.retrace_lambda), settings.gamma)
            if settings.advantage_lambda != settings.retrace_lambda:
                _, advantage = retrace(rewards, value, traces(rho, settings.advantage_lambda), settings.gamma)
            delta = td_errors(rewards, value, settings.gamma)
            priorities.append(priority(delta, rho, batch.logprob[start:end], settings.priority_weights))
            targets[start:end] = target
            advantages[start:end] = advantage
        step = batch.weights * _BCE(
            Critics.logit(batch.critics.step, batch.state), targets.clamp(0.0, 1.0), reduction="none"
        )
        terminal = Critics.logit(batch.critics.trajectory, batch.lasts(batch.answer_state))
        last = batch.firsts(batch.weights) * _BCE(terminal, batch.outcome, reduction="none")
        return Plan(critic_loss=step.mean() + last.mean(), advantages=advantages, priorities=priorities)

    def actor_targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        settings = self.settings
        assert plan.advantages is not None
        mode = settings.advantages
        shaped = actor_advantages(plan.advantages, batch.weights, mode)
        weigh = dict(rho_clip=settings.rho_clip, invalid_penalty=settings.invalid_penalty)
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
        with torch.no_grad():
            value = torch.sigmoid(Critics.logit(batch.critics.trajectory, batch.lasts(batch.answer_state)))
        score = value if settings.trajectory_filter == "value" else batch.outcome - value
        chosen = top_trajectories(score, settings.trajectory_top)
        left_out = torch.zeros_like(batch.values, dtype=torch.bool)
        for i, (start, end) in enumerate(batch.spans):
            left_out[start:end] = not bool(chosen[i])
        return targets.dropping(left_out)
