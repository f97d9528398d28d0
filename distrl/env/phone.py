"""``PhoneEnv``: a phone and a task source as a Gymnasium environment (``distrl/Phone-v0``).

Each episode is one task on one device, stepped as the one episode loop steps it
(``distrl.device.episode``): the agent sees the screen, sends an action, the device does it and is
observed again; an invalid answer is a step that does nothing.

- ``reset(seed=...)`` draws a task from the source's split with the env's generator (``options``, a
  dict: ``{"task_id": ...}`` plays that task instead) and resets the device to it. On a simulated phone a
  seed also boots a fresh phone seeded from it, so that a seed replays an episode exactly (a phone's
  pop-ups follow its own random stream, which a reset does not rewind).
- ``step(action)``: the AutoUI action text (``action_mode="text"``) or a ``Dict`` of its fields
  (``"structured"``, ``distrl.env.spaces``). Reward 1 when the task's evaluator finds it done, else
  0; ``-invalid_penalty`` for an invalid answer (``info["invalid"]``, ``info["reason"]``). Terminated
  on success or on a STATUS action, truncated at the task's step limit (or ``max_steps``).
- A device that fails during a step (it hung past its timeout, crashed, went offline, sent white
  frames) ends the episode: truncated, reward 0, ``info["device_error"]`` says what happened, and the
  next ``reset`` brings the phone back (a simulated phone reboots). A reset that fails raises the
  device's error (``distrl.device.DeviceError``).
- After ``close``, every call raises ``gymnasium.error.ClosedEnvironmentError``.
- Arguments are checked when the env is made (``distrl.env.arguments``): a wrong type is a TypeError, an
  impossible value a ValueError, each one sentence naming the argument.
- An env pickles and copies until its first ``reset``; after it, it holds a phone and an event loop's
  thread, and ``pickle``/``copy.deepcopy`` raise a TypeError that says so.

The device: None for a simulated phone (``sim``: ``config.SimSettings`` fields, default 1080 × 2400 and
no latency), an adb serial (``"emulator-5554"``) or an emulator console port (``5554``), which each ``reset``
first asks adb about: a device adb does not know fails at once with adb's own answer
(``DeviceOffline``), rather than after ``device_boot_s``. Its operations run under ``timeouts``
(``config.Timeouts`` fields). The screen is scaled to ``screen_width`` ×
``screen_height``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError, ResetNeeded

from distrl.actions import format_action
from distrl.device import Device, DeviceError
from distrl.device.registry import open_device
from distrl.env.arguments import (
    MAX_SCREEN,
    check_adb,
    check_count,
    check_device,
    check_flag,
    check_penalty,
    check_settings,
    check_source,
    check_tasks,
    check_text,
    refuse,
)
from distrl.env.loop import EventLoop
from distrl.env.spaces import action_space, observation_space, screen_array, to_action
from distrl.records import Action, InvalidAction, Observation, Task
from distrl.tasks import AUTO, registry, resolve_evaluators

__all__ = ["PhoneEnv"]

CLOSE_S = 10.0
"""Longest wait for the device to close and the event loop to end in ``close``."""
SIM_DEFAULTS: Mapping[str, Any] = {"latency": "off"}
"""A simulated phone's settings unless ``sim`` says otherwise: it answers at once."""

_names = itertools.count()


class PhoneEnv(gymnasium.Env[dict[str, Any], Any]):
    """A phone playing tasks (module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}  # noqa: RUF012 (gymnasium's own shape)

    def __init__(
        self,
        suite: str | Sequence[str] = "general",
        split: str | None = "train",
        *,
        tasks: Sequence[Task] | None = None,
        device: str | int | None = None,
        action_mode: str = "text",
        screen_width: int = 540,
        screen_height: int = 1200,
        max_steps: int | None = None,
        evaluator: str = AUTO,
        score_every_step: bool = True,
        invalid_penalty: float = 1.0,
        sim: Mapping[str, Any] | None = None,
        screen: Mapping[str, Any] | None = None,
        timeouts: Mapping[str, float] | None = None,
        adb: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        """``suite``: a registered task source (``general``, ``web_shopping``) or task files, of which
        ``split`` (None: every task) is played; or the ``tasks`` themselves. ``evaluator`` scores the
        tasks that do not choose (``auto``: ``sim`` on a simulated phone; ``sim`` for ``python -m distrl
        sim`` over adb; ``adb`` for the tasks' shell checks). ``score_every_step`` False scores at the
        end of the episode only (for costly checks). ``invalid_penalty``: what an invalid answer costs
        (the paper's code takes 1 off). ``sim``, ``screen`` and ``timeouts``: the inventory's ``[sim]``,
        ``[screen]`` (the format the phone sends its screens in) and ``[timeouts]`` settings by name."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise refuse("render_mode", f"{render_mode!r} is not one of {self.metadata['render_modes']}")
        screen_width = check_count("screen_width", screen_width, high=MAX_SCREEN)
        screen_height = check_count("screen_height", screen_height, high=MAX_SCREEN)
        if max_steps is not None:
            max_steps = check_count("max_steps", max_steps)
        device = check_device(device)
        evaluator = str(check_text("evaluator", evaluator))
        check_text("action_mode", action_mode)
        score_every_step = check_flag("score_every_step", score_every_step)
        invalid_penalty = check_penalty(invalid_penalty)
        sim_settings, limits, screen_format = check_settings(sim, timeouts, screen, SIM_DEFAULTS)
        adb_options = check_adb(adb)
        if device is not None:
            try:  # what AdbDevice itself refuses (an unknown image format, a snapshot name of two words)
                open_device(device, timeouts=limits, screen=screen_format, adb=adb_options)
            except ValueError as exc:
                raise refuse("adb", str(exc)) from None
        if tasks is not None:
            pool = check_tasks(tasks)
        else:
            source, split = check_source(suite, split)
            pool = registry.task_source(source).tasks(split)
        if not pool:
            raise ValueError(f"no tasks in split {split!r} of {suite!r}")
        if evaluator == "judge":
            raise ValueError(
                "the env scores with the 'sim' or 'adb' evaluator; the judge scores on a learner"
            )
        try:
            self._pool = resolve_evaluators(
                pool, default=evaluator, sim_phones_only=device is None, judge=False
            )
        except ValueError as exc:
            raise ValueError(
                "cannot score the tasks on this device: pass evaluator='sim' if it is a `python -m distrl"
                f" sim` phone, or play task files with adb checks ({exc})"
            ) from None
        self._scorers: dict[str, registry.Evaluator] = {
            name: registry.evaluator(name) for name in {task.evaluator for task in self._pool}
        }
        self._ids = {task.id: task for task in self._pool}
        self.render_mode = render_mode
        self._target = device
        self._mode = action_mode
        self._size = (screen_width, screen_height)
        self._max_steps = max_steps
        self._score_every_step = score_every_step
        self._invalid_reward = -float(invalid_penalty)
        self._options = {"sim": sim_settings, "screen": screen_format, "timeouts": limits, "adb": adb_options}
        self._name = f"phone-{next(_names)}"
        limit = max_steps if max_steps is not None else max(task.max_steps for task in self._pool)
        self.action_space = action_space(action_mode)
        self.observation_space = observation_space(
            screen_width, screen_height, (task.goal for task in self._pool), limit
        )
        self._loop: EventLoop | None = None
        self._device: Device | None = None
        self._task: Task | None = None
        self._screen: np.ndarray[Any, np.dtype[np.uint8]] | None = None
        self._shown = b""  # the encoded screenshot ``_screen`` was decoded from
        self._index = 0
        self._over = True
        self._closed = False

    # ------------------------------------------------------------------ what an agent's loop reads
    @property
    def task(self) -> Task | None:
        """The task of the current episode (None before the first ``reset``)."""
        return self._task

    @property
    def device(self) -> Device | None:
        """The device (None before the first ``reset``); a simulated phone's ``phone`` is its state."""
        return self._device

    @property
    def tasks(self) -> list[Task]:
        """The tasks ``reset`` draws from, each with the evaluator that scores it."""
        return list(self._pool)

    # ------------------------------------------------------------------ gymnasium.Env
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self._check_open()
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(
                f"reset options must be a dict such as {{'task_id': ...}}, not {type(options).__name__}"
                f" {options!r:.60}"
            )
        super().reset(seed=seed)
        task = self._choose(options or {})
        loop = self._loop = self._loop or EventLoop(f"distrl-env-{self._name}")
        if self._device is None or (seed is not None and self._target is None):
            phone_seed = int(self.np_random.integers(2**31))
            if self._device is not None:
                loop.call(self._device.aclose)
                self._device = None
            self._device = loop.call(self._open, phone_seed)
        self._task, self._over = None, True  # until the device is back
        observation = loop.call(self._reset, self._device, task)
        self._show(observation)
        self._task, self._index, self._over = task, 0, False
        return self._observation(), {"task_id": task.id, "evaluator": task.evaluator}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        self._check_open()
        task, device, loop = self._task, self._device, self._loop
        if self._over or task is None or device is None or loop is None:
            raise ResetNeeded("call reset() first: the episode has ended, or none has begun")
        parsed = to_action(action, self._mode)
        self._index += 1
        last = self._index >= (self._max_steps or task.max_steps)
        info: dict[str, Any] = {"task_id": task.id, "invalid": isinstance(parsed, InvalidAction)}
        if isinstance(parsed, InvalidAction):
            info["reason"] = parsed.reason
            info["action"] = ""
            todo: Action | None = None
            score = last and not self._score_every_step
        else:
            info["action"] = format_action(parsed)
            todo = parsed
            score = self._score_every_step or last or parsed.type.ends_episode
        try:
            observation, success = loop.call(self._advance, device, task, todo, score)
        except DeviceError as exc:
            self._over = True
            info.update(success=None, device_error=f"{type(exc).__name__}: {exc}")
            return self._observation(), 0.0, False, True, info
        if observation is not None:
            self._show(observation)
        info["success"] = success
        terminated = success is True or (todo is not None and todo.type.ends_episode)
        truncated = not terminated and last
        self._over = terminated or truncated
        reward = self._invalid_reward if todo is None else float(success is True)
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> np.ndarray[Any, np.dtype[np.uint8]] | None:
        """The screen the agent sees now, as an RGB array (``render_mode="rgb_array"``)."""
        self._check_open()
        if self.render_mode != "rgb_array" or self._screen is None:
            return None
        return self._screen.copy()

    def close(self) -> None:
        """Close the device and end the event loop. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._over = True
        loop, device = self._loop, self._device
        self._loop = None
        if loop is None:
            return
        try:
            if device is not None:
                loop.call(device.aclose)
        finally:
            loop.stop(CLOSE_S)

    # ------------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise ClosedEnvironmentError(f"{self._name}: the environment is closed")

    def _choose(self, options: Mapping[str, Any]) -> Task:
        """The task ``options`` names (``task_id``), or one drawn with the env's generator."""
        unknown = sorted(set(options) - {"task_id"})
        if unknown:
            raise ValueError(f"unknown reset option {unknown[0]!r} (known: task_id)")
        task_id = options.get("task_id")
        # drawn whether or not one is named: the phone a seed boots is then the same for the same task
        drawn = self._pool[int(self.np_random.integers(len(self._pool)))]
        if task_id is None:
            return drawn
        if not isinstance(task_id, str):
            raise TypeError(f"reset option task_id must be a task's id (a str), not {type(task_id).__name__}")
        try:
            return self._ids[task_id]
        except KeyError:
            raise ValueError(f"task {task_id!r} is not one of this env's {len(self._pool)} tasks") from None

    async def _open(self, seed: int) -> Device:
        """The env's device, opened in its event loop's thread."""
        return open_device(self._target, name=self._name, seed=seed, **self._options)

    async def _reset(self, device: Device, task: Task) -> Observation:
        """``device.reset(task)``; first, on an adb device, whether adb knows it at all: a device that is
        not there fails now with adb's own answer (``DeviceOffline``), not after ``device_boot_s``."""
        if self._target is not None:
            await self._attached(device)
        return await device.reset(task)

    async def _attached(self, device: Device) -> None:
        """Ask the device's shell a trivial command; ``DeviceOffline`` when adb answers "not found".
        Any other failure is left to ``reset``, which reboots a device that does not answer."""
        try:
            await device.shell("true")
        except DeviceError as exc:
            answer = str(exc.__cause__ or exc)
            if not isinstance(exc, ConnectionError) or "not found" not in answer:
                raise
            where = f"console port {self._target}" if isinstance(self._target, int) else "adb serial"
            raise type(exc)(
                f"{device.name}: no device behind this {where}: adb says {answer!r} (is it started?"
                " `adb devices` lists the ones adb knows)",
                host=exc.host,
                device=device.name,
                operation="reset",
            ) from exc

    def __getstate__(self) -> dict[str, Any]:
        """The env's state to pickle or copy, until its first ``reset``: after that it holds a phone and an
        event loop's thread, which neither pickling nor copying can take along."""
        if self._loop is not None or self._device is not None:
            raise TypeError(
                f"{self._name}: a PhoneEnv that has been reset holds a live phone and cannot be pickled or"
                " copied; make another with the same arguments (gymnasium.make) instead"
            )
        return self.__dict__.copy()

    async def _advance(
        self, device: Device, task: Task, action: Action | None, score: bool
    ) -> tuple[Observation | None, bool | None]:
        """Do ``action`` (None: nothing) and observe; then the evaluator's verdict where ``score``."""
        observation = None
        if action is not None and not action.type.ends_episode:
            await device.act(action)
            observation = await device.observe()
        success = await self._scorers[task.evaluator](task, device) if score else None
        return observation, success

    def _show(self, observation: Observation) -> None:
        """Decode the screenshot, unless it is the same image as the last one (a tap that hit nothing)."""
        if observation.screenshot != self._shown or self._screen is None:
            self._screen = screen_array(observation, *self._size)
            self._shown = observation.screenshot

    def _observation(self) -> dict[str, Any]:
        assert self._screen is not None
        assert self._task is not None
        # a copy: the agent keeps what it was given, and a step that changes nothing shows the same screen
        return {"screen": self._screen.copy(), "goal": self._task.goal, "step": np.int64(self._index)}
