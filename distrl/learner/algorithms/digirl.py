"""DigiRL behind the learner core (``reference/paper.md`` §5).

Its critics, L(V) = E[BCE(V(s_t), r)] and L(V_instr) = E[BCE(V_instr(c), r)], both trained on
the final reward; its actor imitates (−E[log π(a_t|s_t)]) the steps its hard filters keep: the
doubly robust step advantage A_step > 1/H (``retrace.digirl_step_advantages``) in trajectories whose
instruction-level advantage r − V_instr(c) is positive (with a 0/1 reward: the successes, hardest
first in value), and among the batch's top ``digirl_top`` by it (its paper's curriculum keeps the
top p%). It samples the replay uniformly and leaves its priorities as they are.
"""

from __future__ import annotations

import torch

from distrl.config import LearnerSettings
from distrl.learner.algorithm import ActorTargets, Batch, Plan, imitation
from distrl.learner.critics import Critics
from distrl.learner.losses import digirl_keep, top_trajectories
from distrl.learner.retrace import digirl_step_advantages
from distrl.learner.rewards import outcome_rewards

__all__ = ["DigiRL"]

_BCE = torch.nn.functional.binary_cross_entropy_with_logits


class DigiRL:
    """DigiRL behind the learner core's ``Algorithm`` interface (module docstring)."""

    name = "digirl"
    prioritised = False
    critics = True

    def __init__(self, settings: LearnerSettings) -> None:
        self.settings = settings

    def plan(self, batch: Batch) -> Plan:
        labels = torch.cat(
            [
                torch.full((end - start,), float(r), device=batch.values.device)
                for (start, end), r in zip(batch.spans, batch.outcome.tolist(), strict=True)
            ]
        )
        step = _BCE(Critics.logit(batch.critics.step, batch.state), labels)
        instruction = _BCE(Critics.logit(batch.critics.instruction, batch.firsts(batch.state)), batch.outcome)
        return Plan(critic_loss=step + instruction, advantages=None)

    def actor_targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        with torch.no_grad():
            instruction = torch.sigmoid(Critics.logit(batch.critics.instruction, batch.firsts(batch.state)))
        curriculum = top_trajectories(batch.outcome - instruction, self.settings.digirl_top, above=0.0)
        keep = torch.zeros_like(batch.values, dtype=torch.bool)
        for i, (trajectory, (start, end)) in enumerate(zip(batch.trajectories, batch.spans, strict=True)):
            if not curriculum[i]:
                continue
            reward = float(batch.outcome[i])
            rewards = torch.tensor(outcome_rewards(trajectory), device=batch.values.device)
            step_advantage = digirl_step_advantages(
                rewards, batch.values[start:end], reward, self.settings.digirl_lambda
            )
            keep[start:end] = digirl_keep(
                step_advantage,
                final_reward=reward,
                instruction_value=float(instruction[i]),
                max_steps=trajectory.task.max_steps,
            )
        return imitation(keep)
