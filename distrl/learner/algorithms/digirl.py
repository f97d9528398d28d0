"""DigiRL as a loss module (``reference/paper.md`` §5); its settings are ``[learner.digirl]``.

Its critics, L(V) = E[BCE(V(s_t), r)] and L(V_instr) = E[BCE(V_instr(c), r)], both trained on
the final reward; its actor imitates (−E[log π(a_t|s_t)]) the steps its hard filters keep: the
doubly robust step advantage A_step > 1/H (``retrace.digirl_step_advantages``) in trajectories whose
instruction-level advantage r − V_instr(c) is positive (with a 0/1 reward: the successes, hardest
first in value), and among the batch's top ``top`` by it (its paper's curriculum keeps the top p%).
It samples the replay uniformly and leaves its priorities as they are.
"""

from __future__ import annotations

import dataclasses

import torch

from distrl.config.fields import num_field
from distrl.learner.algorithm import ActorTargets, Batch, Chunk, Plan, imitation, likelihood_loss
from distrl.learner.heads import Heads
from distrl.learner.losses import digirl_keep, top_trajectories
from distrl.learner.retrace import digirl_step_advantages
from distrl.learner.rewards import outcome_rewards

__all__ = ["DigiRL", "DigiRLSettings"]

_BCE = torch.nn.functional.binary_cross_entropy_with_logits


@dataclasses.dataclass(frozen=True, kw_only=True)
class DigiRLSettings:
    """``[learner.digirl]``: DigiRL's hyper-parameters."""

    step_lambda: float = num_field(0.5, ge=0, le=1)
    """λ of the doubly robust step advantage."""
    top: float = num_field(1.0, gt=0, le=1)
    """The curriculum: the share of each batch's trajectories its actor may learn from, the highest by
    instruction-level advantage r − V_instr(c) (and only those above 0). Its paper keeps the top p% of
    the replay data (its code: 10%); 1 keeps every trajectory above 0."""


class DigiRL:
    """DigiRL as a loss module (module docstring): a step critic V(s_t) and an instruction critic
    V_instr(c) as its networks."""

    name = "digirl"
    Settings = DigiRLSettings
    prioritised = False

    def __init__(self, settings: DigiRLSettings, *, features: int) -> None:
        self.settings = settings
        self.networks = Heads(features, "step", "instruction")

    def plan(self, batch: Batch) -> Plan:
        heads = self.networks
        labels = batch.per_step(batch.outcome)
        step = _BCE(heads.logit("step", batch.state), labels)
        instruction = _BCE(heads.logit("instruction", batch.firsts(batch.state)), batch.outcome)
        return Plan(network_loss=step + instruction, advantages=None, values=heads.value("step", batch.state))

    def targets(self, batch: Batch, plan: Plan) -> ActorTargets:
        assert plan.values is not None
        instruction = self.networks.value("instruction", batch.firsts(batch.state))
        curriculum = top_trajectories(batch.outcome - instruction, self.settings.top, above=0.0)
        keep = torch.zeros_like(plan.values, dtype=torch.bool)
        for i, (trajectory, (start, end)) in enumerate(zip(batch.trajectories, batch.spans, strict=True)):
            if not curriculum[i]:
                continue
            reward = float(batch.outcome[i])
            rewards = torch.tensor(outcome_rewards(trajectory), device=plan.values.device)
            step_advantage = digirl_step_advantages(
                rewards, plan.values[start:end], reward, self.settings.step_lambda
            )
            keep[start:end] = digirl_keep(
                step_advantage,
                final_reward=reward,
                instruction_value=float(instruction[i]),
                max_steps=trajectory.task.max_steps,
            )
        return imitation(keep)

    def loss(self, batch: Batch, targets: ActorTargets, chunk: Chunk) -> dict[str, torch.Tensor]:
        return {"imitation": likelihood_loss(targets, chunk)}
