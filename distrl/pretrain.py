"""Behaviour cloning data from the simulated phone: expert demonstrations with deliberate mistakes.

The paper starts RL from AutoUI, a policy fine-tuned on human demonstrations that succeeds sometimes
and fails often. distrl's built-in ``tiny`` policy starts the same way: it is trained to imitate the
sim's expert, but a share (``mistake_rate``) of the expert's actions is replaced by plausible mistakes
before they are taken (a tap on another element, BACK or HOME at the wrong time, a typo, giving up too
early). The mistakes are both done and recorded, and the expert carries on from wherever they led, so
the data also shows how to recover. A policy cloned from it is imperfect the way real ones are.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from distrl.actions import tap_action, to_gesture
from distrl.records import Action, ActionType, Observation, Task
from distrl.sim.phone import Phone, PhoneConfig
from distrl.sim.shell import run_shell
from distrl.sim.suites import expert_action, is_successful, setup_commands, tasks

__all__ = ["Demo", "DemoEpisode", "demonstrations"]

_MISTAKE_KINDS = ("tap", "tap", "tap", "back", "home", "typo", "give_up")


@dataclass(frozen=True, kw_only=True, slots=True)
class Demo:
    """One step of a demonstration: what the phone showed, what came before, what was done."""

    task: Task
    observation: Observation
    history: tuple[Action, ...]
    """The episode's earlier actions, oldest first."""
    action: Action
    """The action taken (the expert's, or a mistake)."""
    mistake: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class DemoEpisode:
    """A whole demonstration episode and how it ended."""

    task: Task
    steps: tuple[Demo, ...]
    success: bool


def demonstrations(
    suite: str,
    *,
    episodes: int,
    split: str = "train",
    mistake_rate: float = 0.2,
    seed: int = 0,
    width: int = 540,
    height: int = 1200,
    image_format: str = "png",
) -> Iterator[DemoEpisode]:
    """``episodes`` demonstrations on ``suite``'s ``split``, tasks in a seeded shuffled order.

    Each step's observation is the phone's screenshot (``width`` × ``height``, ``image_format``) before
    the action. ``mistake_rate`` is the chance that a step's action is a mistake instead of the expert's.
    """
    if not 0.0 <= mistake_rate <= 1.0:
        raise ValueError(f"mistake_rate must be between 0 and 1, got {mistake_rate}")
    if episodes < 0:
        raise ValueError(f"episodes must be ≥ 0, got {episodes}")
    pool = tasks(suite, split)
    if not pool:
        raise ValueError(f"suite {suite!r} has no {split!r} tasks")
    rng = random.Random(f"demonstrations/{suite}/{split}/{seed}")
    order: list[Task] = []
    phone = Phone(PhoneConfig(width=width, height=height, seed=seed))
    for _ in range(episodes):
        if not order:
            order = rng.sample(pool, len(pool))
        yield _episode(phone, order.pop(), rng, mistake_rate, image_format)


def _episode(
    phone: Phone, task: Task, rng: random.Random, mistake_rate: float, image_format: str
) -> DemoEpisode:
    phone.reboot()
    for command in setup_commands(task):
        result = run_shell(phone, command)
        if result.exit_code != 0:
            raise RuntimeError(f"setup of {task.id} failed: {command!r}: {result.output!r}")
    steps: list[Demo] = []
    history: list[Action] = []
    for _ in range(task.max_steps):
        screenshot = phone.screenshot(image_format)
        observation = Observation(
            screenshot=screenshot, width=phone.width, height=phone.height, image_format=image_format
        )
        action = expert_action(task, phone)
        mistake = rng.random() < mistake_rate
        if mistake:
            action = _mistake(phone, action, rng)
        steps.append(
            Demo(task=task, observation=observation, history=tuple(history), action=action, mistake=mistake)
        )
        history.append(action)
        if action.type.ends_episode:
            break
        phone.perform(to_gesture(action, phone.width, phone.height))
    return DemoEpisode(task=task, steps=tuple(steps), success=is_successful(task, phone.state()))


def _mistake(phone: Phone, expert: Action, rng: random.Random) -> Action:
    """A plausible wrong action instead of ``expert``."""
    kind = rng.choice(_MISTAKE_KINDS)
    if kind == "typo" and expert.type is ActionType.TYPE and len(expert.text) > 1:
        i = rng.randrange(len(expert.text))
        return Action(type=ActionType.TYPE, text=expert.text[:i] + expert.text[i + 1 :])
    if kind == "back":
        return Action(type=ActionType.PRESS_BACK)
    if kind == "home":
        return Action(type=ActionType.PRESS_HOME)
    if kind == "give_up":
        return Action(type=ActionType.STATUS_TASK_COMPLETE)
    targets = [e for e in phone.elements() if e.tappable and not e.id.startswith("system/")]
    if not targets:
        return Action(type=ActionType.PRESS_BACK)
    x, y = rng.choice(targets).box.centre
    return tap_action(
        min(phone.width - 1, max(0, round(x))),
        min(phone.height - 1, max(0, round(y))),
        phone.width,
        phone.height,
    )
