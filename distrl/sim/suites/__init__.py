"""Task suites: templates with parameters, three splits, start states, success checks, an expert.

A ``Template`` turns parameters into a goal sentence, the Android shell commands that set up its start
state (``settings put global wifi_on 0``; the same commands run on the sim and on a real emulator), a
success check over the phone's state (``Phone.state()``, AndroidWorld style) and an expert that picks
the next action from the phone as it is. Every suite has three splits (``SPLITS``):

- ``train``: what pretraining and training play;
- ``test``: the paper's AitW protocol, the same templates as ``train`` with held-out parameter values
  (an alarm time, a city, a product, a search query never in ``train``) and held-out wordings (goal
  phrasings never in ``train``), on the screens ``train`` shows. A train template's ``held_out``
  (``HeldOut``) names them: its parameter sets holding a held-out value or wording are ``test`` tasks,
  the others ``train`` tasks. Fixed lists, so the splits are the same on every machine;
- ``unseen``: held-out templates (and, in ``web_shopping``, a held-out site): new kinds of task, which
  mostly need screens ``train`` never shows.

Task ids (``<suite>/<template>/<index>``) number a template's parameter sets and do not depend on the
split.

Pretraining can also play *drawn* tasks (``drawn_task``): a train template's ``draw`` makes fresh
parameter sets (a random alarm time, operands, a search word from a pool, a wording only draws use)
that are never held out, so a policy cloned on them learns to copy values from the goal instead of
memorising the fixed train tasks. The splits stay the fixed lists; drawn tasks belong to none of them.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from distrl.records import Action, ParamValue, Task
from distrl.sim.app import Json

if TYPE_CHECKING:
    from distrl.device.protocol import Device
    from distrl.sim.phone import Phone

__all__ = [
    "SPLITS",
    "SUITES",
    "HeldOut",
    "Params",
    "Suite",
    "Template",
    "drawn_task",
    "expert_action",
    "held_out",
    "is_successful",
    "setup_commands",
    "judge",
    "score",
    "suite",
    "tasks",
    "template_of",
]

Params = Mapping[str, ParamValue]

SPLITS = ("train", "test", "unseen")
"""Every suite's splits: ``train``, ``test`` (held-out values and wordings of the train templates) and
``unseen`` (held-out templates)."""


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """The parameter sets of a ``train`` template that make the ``test`` split instead.

    A parameter set is held out when the values of ``keys`` are one of ``values`` (a held-out time, city,
    product), or when its ``phrase`` (the index of its goal's wording) is one of ``phrases``.
    """

    keys: tuple[str, ...] = ()
    """The parameters whose values are held out together (``("hour", "minute")``, ``("city",)``)."""
    values: frozenset[tuple[ParamValue, ...]] = frozenset()
    """The held-out values of ``keys``: no ``train`` task of the template has one."""
    phrases: frozenset[int] = frozenset()
    """Held-out wordings: values of the ``phrase`` parameter that no ``train`` task has."""

    def holds(self, params: Params) -> bool:
        """Whether ``params`` is a held-out (``test``) parameter set."""
        if self.keys and tuple(params[key] for key in self.keys) in self.values:
            return True
        phrase = params.get("phrase")
        return isinstance(phrase, int) and phrase in self.phrases


def held_out(
    key: str | tuple[str, ...] = (),
    values: Iterable[ParamValue | tuple[ParamValue, ...]] = (),
    phrases: Iterable[int] = (),
) -> HeldOut:
    """``HeldOut`` from plain lists: one key's values (``held_out("city", ["Paris"])``), or tuples of
    several keys' values, and wording indices."""
    keys = (key,) if isinstance(key, str) else tuple(key)
    rows = frozenset(tuple(v) if isinstance(v, tuple) else (v,) for v in values)
    return HeldOut(keys=keys, values=rows, phrases=frozenset(phrases))


@dataclass(frozen=True, kw_only=True)
class Template:
    """A family of tasks that differ in their parameters."""

    name: str
    """Unique in its suite (``alarm``); part of every task id."""
    split: str
    """``train`` (its ``held_out`` parameter sets are ``test``) or ``unseen`` (a held-out template)."""
    params: Callable[[], Sequence[Params]]
    """Every parameter set of this template (deterministic, in a fixed order)."""
    goal: Callable[[Params], str]
    """The instruction for one parameter set."""
    setup: Callable[[Params], list[str]]
    """Android shell commands run after the clean-state reset, before the first observation."""
    check: Callable[[Params, Json], bool]
    """Success from the phone's state."""
    expert: Callable[[Params, Phone], Action]
    """The next action towards the goal, from the phone as it is now (state and screen)."""
    held_out: HeldOut = HeldOut()
    """For a ``train`` template: its parameter sets that make the ``test`` split."""
    draw: Callable[[random.Random], Params] | None = None
    """For a ``train`` template: a fresh parameter set from ``rng`` (values and wordings drawn from
    ranges and pools that leave out the held-out ones), for pretraining; None where it has nothing to
    vary beyond its fixed list."""

    def split_of(self, params: Params) -> str:
        """The split of the task made from ``params``."""
        if self.split == "train" and self.held_out.holds(params):
            return "test"
        return self.split

    def drawn(self, rng: random.Random) -> Params:
        """A parameter set from ``draw`` that is not held out (draws again when one is: a safety net,
        since a ``draw`` leaves held-out values out). ValueError for a template without a ``draw`` or
        not of the ``train`` split."""
        if self.draw is None or self.split != "train":
            raise ValueError(f"template {self.name!r} draws no parameters")
        for _ in range(1000):
            params = self.draw(rng)
            if not self.held_out.holds(params):
                return params
        raise RuntimeError(f"template {self.name!r} keeps drawing held-out parameters")


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A task suite: its templates and its step limit."""

    name: str
    max_steps: int
    templates: tuple[Template, ...]

    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task of the suite (or of one split: ``SPLITS``; none for another name), in a stable order."""
        return [task for task in _all_tasks(self.name) if split is None or task.split == split]

    def drawn(self, task: Task, rng: random.Random) -> Task:
        """A task of ``task``'s template with fresh values and wordings (``drawn_task``)."""
        return drawn_task(task, rng)


def _suites() -> dict[str, Suite]:
    from distrl.sim.suites.general import GENERAL
    from distrl.sim.suites.web_shopping import WEB_SHOPPING

    return {s.name: s for s in (GENERAL, WEB_SHOPPING)}


class _Registry(Mapping[str, Suite]):
    """The suites by name, loaded on first use."""

    def __getitem__(self, name: str) -> Suite:
        return _loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_loaded())

    def __len__(self) -> int:
        return len(_loaded())


@cache
def _loaded() -> dict[str, Suite]:
    return _suites()


SUITES: Mapping[str, Suite] = _Registry()
"""``general`` and ``web_shopping``."""


def suite(name: str) -> Suite:
    """The suite called ``name``; ValueError naming the known ones otherwise."""
    try:
        return SUITES[name]
    except KeyError:
        raise ValueError(f"unknown task suite {name!r}: use one of {', '.join(sorted(SUITES))}") from None


@cache
def _all_tasks(name: str) -> tuple[Task, ...]:
    found = suite(name)
    out: list[Task] = []
    for template in found.templates:
        for index, params in enumerate(template.params()):
            out.append(
                Task(
                    id=f"{found.name}/{template.name}/{index:04d}",
                    suite=found.name,
                    goal=template.goal(params),
                    split=template.split_of(params),
                    max_steps=found.max_steps,
                    params={"template": template.name, **params},
                    setup=tuple(template.setup(params)),
                    evaluator="sim",
                )
            )
    return tuple(out)


def drawn_task(task: Task, rng: random.Random) -> Task:
    """A task of ``task``'s template with freshly drawn parameters (``Template.drawn``), or ``task``
    itself when its template draws none. Its split is ``train`` and its id
    ``<suite>/<template>/draw-<hash of the parameters>``, so the same parameters give the same id."""
    template = template_of(task)
    if template.draw is None or template.split != "train":
        return task
    params = template.drawn(rng)
    digest = hashlib.sha1(json.dumps(dict(params), sort_keys=True).encode()).hexdigest()[:10]
    found = suite(task.suite)
    return Task(
        id=f"{found.name}/{template.name}/draw-{digest}",
        suite=found.name,
        goal=template.goal(params),
        split="train",
        max_steps=found.max_steps,
        params={"template": template.name, **params},
        setup=tuple(template.setup(params)),
        evaluator="sim",
    )


def tasks(suite_name: str, split: str | None = None) -> list[Task]:
    """Every task of ``suite_name`` (optionally one split)."""
    return suite(suite_name).tasks(split)


def template_of(task: Task) -> Template:
    """The template ``task`` came from; ValueError for a task no sim suite made."""
    name = task.params.get("template")
    for template in suite(task.suite).templates:
        if template.name == name:
            return template
    raise ValueError(f"task {task.id!r} names no template of suite {task.suite!r}")


def _params(task: Task) -> Params:
    return {k: v for k, v in task.params.items() if k != "template"}


def setup_commands(task: Task) -> list[str]:
    """The shell commands that put a clean phone into ``task``'s start state."""
    return template_of(task).setup(_params(task))


def is_successful(task: Task, state: Json) -> bool:
    """Whether ``state`` (``Phone.state()``, or ``dumpsys distrl`` over adb) completes ``task``."""
    return template_of(task).check(_params(task), state)


def judge(task: Task, state: Json | None) -> bool | None:
    """``is_successful`` as an episode loop scores: None where the device gave no state (a real device)
    or no sim suite made the task (something else has to score it)."""
    if state is None:
        return None
    try:
        return is_successful(task, state)
    except ValueError:
        return None


async def score(task: Task, device: Device) -> bool | None:
    """``judge`` on the device's state at the end of an episode (``play_episode``'s ``score``)."""
    return judge(task, await device.state())


def expert_action(task: Task, phone: Phone) -> Action:
    """The expert's next action for ``task`` on ``phone``."""
    return template_of(task).expert(_params(task), phone)
