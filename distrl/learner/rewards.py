"""The reward, decided here once (``docs/concepts/algorithms.md``, "Rewards").

- ``outcome_rewards``: the outcome as a reward per step, 1 on the last step of a successful episode and
  0 elsewhere (DigiRL's, and what runs record with each episode through ``rewarded``).
- ``shaped_rewards``: A-RIDE's r, the outcome shaped per step,

  r_t = 1{the episode succeeded and t is its last step} − c − 1{a_t invalid}·ι − 1{a_t repeats}·n_t·η,

  with c ``step_cost``, ι ``invalid_reward`` and η ``repeat_penalty``, where a_t repeats when it equals
  the last valid action before it, and n_t counts the repeats in a row so far (1 for the first repeat):
  the paper's released code takes 0.05 off every step, 1 off an invalid answer and a growing 0.4 off
  each repeat. The Retrace targets and advantages read these rewards; the step critic's targets are
  then clipped to [0, 1] for its binary cross-entropy, so the penalties reach the actor through the
  advantages.

The outcome is ``Trajectory.success`` (what the task's evaluator said); a step's stored ``reward`` is
only a record of it, never read back here.
"""

from __future__ import annotations

import dataclasses

from distrl.records import Action, InvalidAction, Trajectory

__all__ = ["outcome_rewards", "rewarded", "shaped_rewards"]


def outcome_rewards(trajectory: Trajectory) -> list[float]:
    """1.0 on the last step of a successful ``trajectory``, 0.0 on every other step."""
    count = len(trajectory.steps)
    return [1.0 if trajectory.success and i == count - 1 else 0.0 for i in range(count)]


def rewarded(trajectory: Trajectory) -> Trajectory:
    """``trajectory`` with ``outcome_rewards`` recorded in its steps' ``reward`` (itself where they are)."""
    rewards = outcome_rewards(trajectory)
    if all(step.reward == reward for step, reward in zip(trajectory.steps, rewards, strict=True)):
        return trajectory
    steps = tuple(
        dataclasses.replace(step, reward=reward)
        for step, reward in zip(trajectory.steps, rewards, strict=True)
    )
    return dataclasses.replace(trajectory, steps=steps)


def shaped_rewards(
    trajectory: Trajectory, *, step_cost: float, invalid_reward: float, repeat_penalty: float
) -> list[float]:
    """Each of ``trajectory``'s steps' r_t, in order (module docstring)."""
    rewards = []
    last: Action | None = None
    repeats = 0
    for step, outcome in zip(trajectory.steps, outcome_rewards(trajectory), strict=True):
        reward = outcome - step_cost
        if isinstance(step.action, InvalidAction):
            reward -= invalid_reward
        else:
            repeats = repeats + 1 if step.action == last else 0
            reward -= repeat_penalty * repeats
            last = step.action
        rewards.append(reward)
    return rewards
