"""A-RIDE's reward r (``reference/paper.md`` §3 and §8): the episode's outcome, shaped per step.

r_t = 1{the episode succeeded and t is its last step} − c − 1{a_t invalid}·ι − 1{a_t repeats}·n_t·η,

with c ``step_cost``, ι ``invalid_reward`` and η ``repeat_penalty``, where a_t repeats when it equals the
last valid action before it, and n_t counts the repeats in a row so far (1 for the first repeat): the
paper's released code takes 0.05 off every step, 1 off an invalid answer and a growing 0.4 off each
repeat. The Retrace targets and advantages read these rewards; the step critic's targets are then
clipped to [0, 1] for its binary cross-entropy, so the penalties reach the actor through the advantages.
"""

from __future__ import annotations

from collections.abc import Sequence

from distrl.records import Action, InvalidAction, Step

__all__ = ["shaped_rewards"]


def shaped_rewards(
    steps: Sequence[Step], *, step_cost: float, invalid_reward: float, repeat_penalty: float
) -> list[float]:
    """Each of a trajectory's ``steps``' r_t, in order (module docstring)."""
    rewards = []
    last: Action | None = None
    repeats = 0
    for step in steps:
        reward = step.reward - step_cost
        if isinstance(step.action, InvalidAction):
            reward -= invalid_reward
        else:
            repeats = repeats + 1 if step.action == last else 0
            reward -= repeat_penalty * repeats
            last = step.action
        rewards.append(reward)
    return rewards
