"""The sim expert's demonstrations, what ``tiny`` is behaviour-cloned on (``distrl.local.pretrain``).

``demonstrations``: expert episodes with deliberate mistakes. The paper starts RL from AutoUI, a policy
fine-tuned on human demonstrations that succeeds sometimes and fails often. distrl's built-in ``tiny``
policy starts the same way: it is trained to imitate the sim's expert, but a share (``mistake_rate``)
of the expert's actions is replaced by plausible mistakes before they are taken (a tap on another
element, BACK or HOME at the wrong time, a typo, giving up too early). The mistakes are both done and
recorded, and the expert carries on from wherever they led, so the data also shows how to recover. A
policy cloned from it is imperfect the way real ones are. A share of the episodes (``randomise``) can
play *drawn* tasks instead of the fixed train tasks: the same templates with fresh parameter values
and wordings that are never held out (``distrl.sim.suites.drawn_task``), so the policy learns to copy
an alarm time, a number or a search word from the goal rather than memorise the train tasks.

Drills and contrasts add examples at a demonstration's steps without playing more: the same screen and
history with the goal of another task of the template, and the expert's action for it there.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import anyio

from distrl.actions import tap_action
from distrl.config import Timeouts
from distrl.device.episode import play_episode, scripted_step
from distrl.records import Action, ActionType, InvalidAction, Observation, Step, Task, Trajectory
from distrl.sim.device import SimDevice
from distrl.sim.phone import Phone, PhoneConfig
from distrl.sim.suites import drawn_task, expert_action, score
from distrl.tasks.draw import TaskDraw, split_tasks

__all__ = ["Demo", "DemoEpisode", "demonstrations", "expert_trajectory"]

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
    drills: tuple[Demo, ...] = ()
    """Typing drills (``demonstrations``' ``drills``): the screen of each typing step again, with the goal
    of a task drawn from the same template and what the expert types for it there."""
    contrasts: tuple[Demo, ...] = ()
    """Contrasts (``demonstrations``' ``contrasts``): the screen of a step again, with the goal of another
    task of the same template whose expert action first parts from the demonstration's there."""


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
    randomise: float = 0.0,
    drills: int = 0,
    contrasts: int = 0,
) -> Iterator[DemoEpisode]:
    """``episodes`` demonstrations on ``suite``'s ``split``, tasks in a seeded shuffled order.

    Each step's observation is the phone's screenshot (``width`` × ``height``, ``image_format``) before
    the action. ``mistake_rate`` is the chance that a step's action is a mistake instead of the expert's.
    ``randomise`` is the chance that an episode of the ``train`` split plays, instead of its task, one
    drawn from the same template (``drawn_task``: fresh values and wordings, never held-out ones; the
    task itself where its template draws nothing). With 0 (the default) every episode plays a task of
    the split, as before. ``drills`` adds, at each step where the expert types, that many drills
    (``DemoEpisode.drills``): the same screen and history with the goal of a task drawn from the same
    template, and the expert's typing for it on that screen. Typing copies words from the goal; a drill
    costs no play, so drills give the many varied copies that learning to copy (and not to memorise what
    was typed) needs. ``contrasts`` draws that many other tasks of the episode's template (train tasks of
    it, or drawn ones) and adds, for each, one contrast (``DemoEpisode.contrasts``): at the step where the
    expert's action for it would first part from the demonstration's, the same screen and history with its
    goal and that action. A screen where two goals part lies on both goals' paths, and only the goal tells
    them apart (which level, which app, which page); without contrasts a small model learns each template's
    usual action and ignores the goal's words. Typing steps part with none (the drills vary typing), nor
    does a goal the phone's hidden state already meets, nor any after a mistake.
    """
    if not 0.0 <= mistake_rate <= 1.0:
        raise ValueError(f"mistake_rate must be between 0 and 1, got {mistake_rate}")
    if not 0.0 <= randomise <= 1.0:
        raise ValueError(f"randomise must be between 0 and 1, got {randomise}")
    if randomise and split != "train":
        raise ValueError(f"randomise draws train tasks only; the {split!r} split cannot be randomised")
    if episodes < 0:
        raise ValueError(f"episodes must be ≥ 0, got {episodes}")
    if drills < 0 or contrasts < 0:
        raise ValueError(f"drills and contrasts must be ≥ 0, got {drills} and {contrasts}")
    rng = random.Random(f"demonstrations/{suite}/{split}/{seed}")
    order = TaskDraw(split_tasks(suite, split), rng)
    # one phone for every episode: each reset restores its boot snapshot, its chance goes on
    device = SimDevice(
        "demonstrations",
        phone_config=PhoneConfig(width=width, height=height, seed=seed),
        timeouts=Timeouts(),
        image_format=image_format,
    )
    draws = random.Random(f"draws/{suite}/{seed}")
    siblings: dict[str, list[Task]] = {}  # the train tasks of each template, for contrasts
    for train_task in split_tasks(suite, "train") if contrasts else ():
        siblings.setdefault(_template_name(train_task), []).append(train_task)
    for _ in range(episodes):
        task = order.next()
        if randomise and draws.random() < randomise:
            task = drawn_task(task, draws)
        partners = _Partners(siblings.get(_template_name(task), []), draws)
        yield _episode(device, task, rng, mistake_rate, drills, contrasts, partners)


def _template_name(task: Task) -> str:
    return str(task.params.get("template", ""))


@dataclass(frozen=True, slots=True)
class _Partners:
    """Other tasks of one template: its train tasks, and drawn ones where it draws."""

    tasks: Sequence[Task]
    draws: random.Random

    def drawn(self, task: Task) -> Task | None:
        """A drawn task of ``task``'s template, None where it draws nothing."""
        other = drawn_task(task, self.draws)
        return None if other is task else other

    def any(self, task: Task) -> Task | None:
        """A drawn task or a train task of ``task``'s template (half each where it draws)."""
        if self.draws.random() < 0.5 and (other := self.drawn(task)) is not None:
            return other
        return self.draws.choice(self.tasks) if self.tasks else self.drawn(task)


class _Branches:
    """Other tasks of an episode's template that the expert would have played alike so far. Each gives
    one contrast, at the step where its action parts from the demonstration's: a screen on its own path,
    where only the goal tells the two apart (past that step the screens are off its path, and what the
    expert would do there, go home or undo, is no lesson)."""

    def __init__(self, others: Sequence[Task]) -> None:
        self._along = list(others)
        self._next = 0

    def parting(self, index: int, phone: Phone, expert: Action) -> list[tuple[Task, Action]]:
        """The tasks whose action on ``phone`` at step ``index`` parts from ``expert``, each with its
        action; a typing step, or one that ends the other task (its hidden state met), parts with none."""
        if index != self._next:
            self._along = []  # a mistake came between: the screens are off every path
        self._next = index + 1
        parted, along = [], []
        for other in self._along:
            action = expert_action(other, phone)
            if action == expert:
                along.append(other)
            elif expert.type is not ActionType.TYPE and not action.type.ends_episode:
                parted.append((other, action))
        self._along = along
        return parted


def _episode(
    device: SimDevice,
    task: Task,
    rng: random.Random,
    mistake_rate: float,
    drills: int,
    contrasts: int,
    partners: _Partners,
) -> DemoEpisode:
    """One demonstration, played by the one episode loop with the expert (and its mistakes) choosing."""
    drilled: dict[int, list[tuple[Task, Action]]] = {}
    contrasted: dict[int, list[tuple[Task, Action]]] = {}
    others = (partners.any(task) for _ in range(contrasts))
    branches = _Branches([other for other in others if other is not None and other.goal != task.goal])

    def drill(index: int, phone: Phone, expert: Action) -> None:
        for _ in range(drills if expert.type is ActionType.TYPE else 0):
            other = partners.drawn(task)
            if other is None:
                break
            action = expert_action(other, phone)
            if action.type is ActionType.TYPE:
                drilled.setdefault(index, []).append((other, action))
        if parted := branches.parting(index, phone, expert):
            contrasted[index] = parted

    trajectory, mistakes = expert_trajectory(
        device, task, rng, mistake_rate, on_step=drill if drills or contrasts else None
    )
    if trajectory.cut_short:
        raise RuntimeError(f"{task.id}: the demonstration ended by a {trajectory.end_reason}")
    actions = [step.action for step in trajectory.steps if isinstance(step.action, Action)]
    steps = tuple(
        Demo(
            task=task,
            observation=step.observation,
            history=tuple(actions[:i]),
            action=actions[i],
            mistake=mistake,
        )
        for i, (step, mistake) in enumerate(zip(trajectory.steps, mistakes, strict=True))
    )

    def again(found: dict[int, list[tuple[Task, Action]]]) -> tuple[Demo, ...]:
        return tuple(
            dataclasses.replace(steps[i], task=other, action=action, mistake=False)
            for i, pairs in found.items()
            for other, action in pairs
        )

    return DemoEpisode(
        task=task,
        steps=steps,
        success=bool(trajectory.success),
        drills=again(drilled),
        contrasts=again(contrasted),
    )


def expert_trajectory(
    device: SimDevice,
    task: Task,
    rng: random.Random,
    mistake_rate: float,
    on_step: Callable[[int, Phone, Action], None] | None = None,
) -> tuple[Trajectory, list[bool]]:
    """One episode of ``task`` on ``device`` chosen by the expert, each step a mistake with chance
    ``mistake_rate``; its final screen kept, its success from the phone's state. Also says which steps
    were mistakes. ``on_step(step, phone, action)`` is called at each step the expert chooses (no
    mistake), before its action goes in."""
    mistakes: list[bool] = []

    async def choose(observation: Observation, history: Sequence[Action | InvalidAction], index: int) -> Step:
        asked = time.perf_counter()
        action = expert_action(task, device.phone)
        mistakes.append(rng.random() < mistake_rate)
        if mistakes[-1]:
            action = _mistake(device.phone, action, rng)
        elif on_step is not None:
            on_step(index, device.phone, action)
        return scripted_step(action, observation, index, asked)

    trajectory = anyio.run(
        functools.partial(
            play_episode,
            device,
            task,
            choose,
            episode_id=task.id,
            host="local",
            step_timeout_s=math.inf,
            score=score,
            keep_final=True,
        )
    )
    return trajectory, mistakes


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


# -- behaviour cloning -------------------------------------------------------------------------------------
