"""The one episode loop: a task played on a ``Device`` by anything that chooses actions.

``play_episode`` resets the device to the task, then observe → choose → act until the chooser ends the
episode (a STATUS action) or the step limit. An invalid answer is a step that does nothing. Every step
goes to ``on_step`` as soon as it is chosen. The worker plays its episodes with it (the batched policy,
or the sim's expert), and so do local evaluation and rollouts (``distrl.local.play``) and the demonstrations
behind pretraining (``distrl.local.demos``).

Failures end the episode, never the caller: a device that fails gives ``end_reason = device_error``, a
chooser that times out or fails ``policy_error``, each with the steps taken so far.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import anyio

from distrl.actions import format_action
from distrl.device.protocol import Device
from distrl.errors import DeviceError, PolicyError
from distrl.records import Action, EndReason, InvalidAction, Observation, Step, Task, Trajectory

__all__ = ["Chooser", "play_episode", "scripted_step"]

log = logging.getLogger(__name__)


class Chooser(Protocol):
    """What chooses each step: a policy (batched or not), a scripted expert, a test's stand-in."""

    async def __call__(
        self, observation: Observation, history: Sequence[Action | InvalidAction], index: int
    ) -> Step: ...


def scripted_step(action: Action, observation: Observation, index: int, asked: float) -> Step:
    """A step chosen by a script (the expert): its text is the action's, its log-prob 0, version 0."""
    return Step(
        index=index,
        observation=observation,
        output=format_action(action),
        action=action,
        policy_version=0,
        behaviour_logprob=0.0,
        duration_s=time.perf_counter() - asked,
    )


async def play_episode(
    device: Device,
    task: Task,
    choose: Chooser,
    *,
    episode_id: str,
    host: str,
    step_timeout_s: float,
    max_steps: int | None = None,
    on_step: Callable[[Step], Awaitable[None]] | None = None,
    score: Callable[[Task, Device], Awaitable[bool | None]] | None = None,
    keep_final: bool = False,
) -> Trajectory:
    """One episode of ``task`` on ``device``, chosen by ``choose``.

    ``max_steps`` (default the task's) bounds the steps; ``step_timeout_s`` each choice. ``score`` scores
    the episode on the device as it ended (its state, or its evaluator's checks), where it ended without a
    failure; None is no score (the device cannot tell: something else scores it). With
    ``keep_final`` the screen after the last action is the trajectory's ``final_observation``."""
    started_at, started = time.time(), time.perf_counter()
    limit = task.max_steps if max_steps is None else max_steps
    steps: list[Step] = []
    history: list[Action | InvalidAction] = []
    reason = EndReason.STEP_LIMIT
    observation: Observation | None = None
    success: bool | None = None
    try:
        observation = await device.reset(task)
        for index in range(limit):
            with anyio.fail_after(step_timeout_s):
                step = await choose(observation, tuple(history), index)
            steps.append(step)
            history.append(step.action)
            if on_step is not None:
                await on_step(step)
            if isinstance(step.action, Action):
                if step.action.type.ends_episode:
                    reason = EndReason.chosen(step.action)
                    break
                await device.act(step.action)
            observation = await device.observe()
        if score is not None:
            success = await score(task, device)
    except DeviceError as exc:
        log.info("host %s: %s failed during %s: %s", host, device.name, task.id, exc)
        reason, observation = EndReason.DEVICE_ERROR, None
    except TimeoutError:
        log.warning("host %s: no answer from the policy within %g s", host, step_timeout_s)
        reason = EndReason.POLICY_ERROR
    except (PolicyError, RuntimeError) as exc:  # the model failed on this batch (e.g. out of memory)
        log.error("host %s: the policy failed: %s", host, exc)
        reason = EndReason.POLICY_ERROR
    return Trajectory(
        id=episode_id,
        task=task,
        host=host,
        device=device.name,
        steps=tuple(steps),
        final_observation=observation if keep_final else None,
        end_reason=reason,
        success=success,
        started_at_s=started_at,
        duration_s=time.perf_counter() - started,
    )
