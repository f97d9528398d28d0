"""The Gymnasium environment (``distrl.env``): its contract (gymnasium's own checker), the expert solving
tasks through it, seeds, invalid actions, device faults, a closed env, vector envs, and the env over
``AdbDevice`` against ``python -m distrl sim`` through the real adb server.

Phones here are 540 × 1200 and screens 135 × 300 so that the tests stay quick; the env's defaults are
the sim's 1080 × 2400 and 540 × 1200.
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import random
import re
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.utils.env_checker import check_env

from distrl.actions import format_action, to_gesture
from distrl.config import Timeouts
from distrl.device import AdbDevice, open_device
from distrl.env import ENV_ID, FLAT_ENV_ID, PhoneEnv
from distrl.env.flat import GESTURES, typing_words
from distrl.env.spaces import ACTION_TYPES, action_space, to_action
from distrl.errors import DeviceOffline, DistrlError
from distrl.records import Action, ActionType, InvalidAction
from distrl.sim.device import SimDevice
from distrl.sim.phone import PhoneConfig
from distrl.sim.suites import expert_action, tasks
from distrl.tasks.registry import evaluator, source_names, task_source

if TYPE_CHECKING:
    from conftest import AdbServer

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parent.parent
SMALL: dict[str, Any] = {"screen_width": 135, "screen_height": 300, "sim": {"width": 540, "height": 1200}}
HOME = format_action(Action(type=ActionType.PRESS_HOME))
COMPLETE = format_action(Action(type=ActionType.STATUS_TASK_COMPLETE))


@pytest.fixture
def env() -> Iterator[PhoneEnv]:
    env = PhoneEnv(**SMALL)
    yield env
    env.close()


def _play_expert(env: PhoneEnv, task_id: str) -> tuple[float, bool, dict[str, Any]]:
    """The sim's expert on ``task_id`` through ``env``: the return, whether it terminated, the last info."""
    env.reset(options={"task_id": task_id})
    total, done, terminated = 0.0, False, False
    info: dict[str, Any] = {}
    while not done:
        assert env.task is not None
        action = expert_action(env.task, env.device.phone)  # type: ignore[union-attr]
        _, reward, terminated, truncated, info = env.step(format_action(action))
        total += float(reward)
        done = terminated or truncated
    return total, terminated, info


# -- the contract ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["text", "structured"])
def test_check_env_passes_without_a_warning(mode: str) -> None:
    env = gymnasium.make(ENV_ID, action_mode=mode, render_mode="rgb_array", **SMALL)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped, skip_render_check=False)
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


def test_gymnasiums_own_wrappers_count_and_cut_episodes() -> None:
    env = gymnasium.wrappers.RecordEpisodeStatistics(
        gymnasium.wrappers.TimeLimit(gymnasium.make(ENV_ID, **SMALL), max_episode_steps=2)
    )
    try:
        env.reset(seed=0)
        _, _, terminated, truncated, info = env.step(HOME)
        assert (terminated, truncated) == (False, False)
        _, _, terminated, truncated, info = env.step(HOME)
        assert (terminated, truncated) == (False, True)  # the TimeLimit's cut, before the task's own limit
        assert info["episode"]["l"] == 2
        assert info["episode"]["r"] == 0.0
    finally:
        env.close()


def test_make_gives_the_spaces_the_options_ask_for() -> None:
    env = gymnasium.make(ENV_ID, suite="web_shopping", split="test", render_mode="rgb_array", **SMALL)
    try:
        observation, info = env.reset(seed=3)
        assert observation["screen"].shape == (300, 135, 3)
        assert observation["screen"].dtype == np.uint8
        assert observation["screen"].std() > 0  # a real screen, not a blank one
        assert observation["step"] == 0
        phone_env = env.unwrapped
        assert isinstance(phone_env, PhoneEnv)
        assert info["task_id"].startswith("web_shopping/")
        assert phone_env.task is not None
        assert phone_env.task.split == "test"
        assert observation["goal"] == phone_env.task.goal
        assert observation in env.observation_space
        assert env.observation_space["step"].n == 21  # type: ignore[index]  # web_shopping: 20 steps
        assert np.array_equal(env.render(), observation["screen"])  # type: ignore[arg-type]
    finally:
        env.close()


def test_the_expert_solves_a_sample_of_the_train_split_through_the_env(env: PhoneEnv) -> None:
    rng = random.Random(34)
    sample = rng.sample(tasks("general", "train"), 8) + rng.sample(tasks("web_shopping", "train"), 4)
    shopping = PhoneEnv("web_shopping", **SMALL)
    try:
        for task in sample:
            played = env if task.suite == "general" else shopping
            total, terminated, info = _play_expert(played, task.id)
            assert (total, terminated, info["success"]) == (1.0, True, True), task.id
    finally:
        shopping.close()


def test_status_complete_ends_the_episode_with_the_evaluators_verdict(env: PhoneEnv) -> None:
    env.reset(seed=0, options={"task_id": "general/airplane_mode/0000"})
    _, reward, terminated, truncated, info = env.step(COMPLETE)
    assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, False)
    with pytest.raises(ResetNeeded):
        env.step(HOME)


def test_structured_actions_are_the_text_actions_fields() -> None:
    tap = {"action_type": ACTION_TYPES.index(ActionType.DUAL_POINT), "touch_point": [0.25, 0.5]}
    tap["lift_point"] = np.array([0.25, 0.5], np.float32)
    assert to_action({**tap, "typed_text": ""}, "structured") == Action(
        type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)
    )
    typed = {"action_type": 0, "touch_point": [0, 0], "lift_point": [0, 0], "typed_text": "hi"}
    assert to_action(typed, "structured") == Action(type=ActionType.TYPE, text="hi")
    # a 0-d array (torch's argmax(...).numpy() gives one), which the space's own contains takes, was an
    # invalid step
    index = np.array(ACTION_TYPES.index(ActionType.DUAL_POINT))
    assert action_space("structured")["action_type"].contains(index)  # type: ignore[index]
    assert to_action({**tap, "typed_text": "", "action_type": index}, "structured") == Action(
        type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)
    )
    assert isinstance(to_action({**tap, "action_type": np.array(0.0)}, "structured"), InvalidAction)
    for bad in ({**typed, "typed_text": ""}, {**tap, "touch_point": [1.5, 0.0]}, {"action_type": 99}, 7):
        assert isinstance(to_action(bad, "structured"), InvalidAction), bad
    assert isinstance(to_action(b"\xff", "text"), InvalidAction)


def test_an_action_type_member_means_itself_and_dual_point_is_never_press_enter() -> None:
    fields = {"touch_point": [0.25, 0.5], "lift_point": [0.75, 0.5], "typed_text": "hi"}
    for kind in ActionType:
        assert to_action({**fields, "action_type": kind}, "structured").type is kind  # type: ignore[union-attr]
    assert ACTION_TYPES.index(ActionType.PRESS_ENTER) == ActionType.DUAL_POINT  # the trap, as integers
    env = PhoneEnv(action_mode="structured", **SMALL)
    try:
        env.reset(seed=0, options={"task_id": "general/airplane_mode/0000"})
        _, _, _, _, info = env.step({**fields, "action_type": ActionType.DUAL_POINT})
        assert info["invalid"] is False
        assert '"action_type": "DUAL_POINT"' in info["action"]
        assert "PRESS_ENTER" not in info["action"]
        _, _, _, _, info = env.step({**fields, "action_type": np.int64(4)})  # an index, as sampled
        assert '"action_type": "PRESS_ENTER"' in info["action"]
    finally:
        env.close()


def test_text_spaces_hold_no_control_characters() -> None:
    env = PhoneEnv(action_mode="structured", **SMALL)
    text = PhoneEnv(**SMALL)
    try:
        spaces = [env.observation_space["goal"], env.action_space["typed_text"], text.action_space]  # type: ignore[index]
        env.action_space.seed(0)
        typed = [env.action_space.sample()["typed_text"] for _ in range(50)]
        for space in spaces:
            assert not set(space.character_set) & set("\t\n\r\x0b\x0c"), space
            space.seed(0)
            typed += [space.sample() for _ in range(20)]
        assert all(sample.isprintable() for sample in typed)
        assert " " in env.observation_space["goal"].character_set  # type: ignore[index]
    finally:
        env.close()
        text.close()


def test_typed_text_past_its_space_is_an_invalid_step() -> None:
    env = PhoneEnv(action_mode="structured", **SMALL)
    typed = {"action_type": ActionType.TYPE, "touch_point": [0, 0], "lift_point": [0, 0]}
    try:
        env.reset(seed=0, options={"task_id": "general/airplane_mode/0000"})
        longest = "a" * env.action_space["typed_text"].max_length  # type: ignore[index]
        for text, reason in (
            (longest + "a", f"typed_text has {len(longest) + 1} characters, more than {len(longest)}"),
            ("line\nbreak", r"typed_text holds the control character '\\n'"),
        ):
            _, reward, _, _, info = env.step({**typed, "typed_text": text})
            assert (info["invalid"], reward) == (True, -1.0)
            assert re.fullmatch(reason, info["reason"]), info["reason"]
        _, _, _, _, info = env.step({**typed, "typed_text": longest})
        assert info["invalid"] is False
    finally:
        env.close()


# -- seeds -----------------------------------------------------------------------------------------------


def _episode(env: PhoneEnv, seed: int, steps: int) -> list[tuple[str, bytes, float]]:
    """Taps at points the action space draws from ``seed``."""
    observation, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    out = [(info["task_id"], observation["screen"].tobytes(), 0.0)]
    for _ in range(steps):
        tap = env.action_space.sample()
        tap.update(action_type=ACTION_TYPES.index(ActionType.DUAL_POINT), lift_point=tap["touch_point"])
        observation, reward, terminated, truncated, info = env.step(tap)
        out.append((info["task_id"], observation["screen"].tobytes(), float(reward)))
        if terminated or truncated:
            break
    return out


def test_a_seed_boots_the_same_phone_whether_its_task_is_drawn_or_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A logged (seed, task id) pair replayed with ``options={"task_id": ...}`` booted another phone (other
    pop-ups): the phone's seed was drawn after the task, whose draw a named task skipped."""
    import distrl.env.phone as phone_module

    seeds: list[int] = []
    opened = phone_module.open_device  # type: ignore[attr-defined]  # its import, replaced here

    def recording(*args: Any, seed: int, **kwargs: Any) -> Any:
        seeds.append(seed)
        return opened(*args, seed=seed, **kwargs)

    monkeypatch.setattr(phone_module, "open_device", recording)
    drawn, named = PhoneEnv(**SMALL), PhoneEnv(**SMALL)
    try:
        _, info = drawn.reset(seed=5)
        named.reset(seed=5, options={"task_id": info["task_id"]})
        assert seeds[0] == seeds[1]
        with pytest.raises(
            TypeError, match=r"^reset option task_id must be a task.s id \(a str\), not list$"
        ):
            named.reset(options={"task_id": [info["task_id"]]})  # was "unhashable type: 'list'"
    finally:
        drawn.close()
        named.close()


def test_a_seed_replays_an_episode_and_another_seed_does_not() -> None:
    first = PhoneEnv(action_mode="structured", **SMALL)
    second = PhoneEnv(action_mode="structured", **SMALL)
    try:
        played = _episode(first, 11, 8)
        assert len({screen for _, screen, _ in played}) > 1  # the actions did change the screen
        assert _episode(second, 11, 8) == played  # another env, the same seed
        assert _episode(first, 11, 8) == played  # the same env after an episode: a fresh phone
        assert _episode(first, 12, 8) != played
    finally:
        first.close()
        second.close()


# -- what goes wrong -------------------------------------------------------------------------------------


def test_an_invalid_answer_is_a_penalised_step_that_changes_nothing() -> None:
    env = PhoneEnv(max_steps=3, invalid_penalty=0.5, **SMALL)
    try:
        observation, _ = env.reset(seed=1)
        for step in (1, 2, 3):
            after, reward, terminated, truncated, info = env.step("Action Decision: nothing I can do")
            assert info["invalid"] is True
            assert "action_type" in info["reason"]
            assert (reward, terminated, after["step"]) == (-0.5, False, step)
            assert np.array_equal(after["screen"], observation["screen"])
        assert truncated  # at the step limit
        with pytest.raises(ResetNeeded):
            env.step(HOME)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("fault", "error"), [("crash_rate", "DeviceCrashed"), ("hang_rate", "DeviceTimeout")]
)
def test_a_device_fault_ends_the_episode_and_reset_brings_the_phone_back(fault: str, error: str) -> None:
    limits = {"device_act_s": 0.3, "device_observe_s": 0.3}
    env = PhoneEnv(screen_width=135, screen_height=300, sim={**SMALL["sim"], fault: 1.0}, timeouts=limits)
    try:
        env.reset(seed=0)
        started = time.monotonic()
        observation, reward, terminated, truncated, info = env.step(HOME)
        assert time.monotonic() - started < 5
        assert (reward, terminated, truncated, info["success"]) == (0.0, False, True, None)
        assert info["device_error"].startswith(error)
        assert observation["step"] == 1
        with pytest.raises(ResetNeeded):
            env.step(HOME)
        again, _ = env.reset()  # the fault model strikes act and observe, never reset
        assert again["step"] == 0
        assert again["screen"].std() > 0
    finally:
        env.close()


def test_a_closed_env_says_so_and_leaves_no_thread(env: PhoneEnv) -> None:
    env.reset(seed=0)
    assert any(t.name.startswith("distrl-env-") for t in threading.enumerate())
    env.close()
    env.close()  # idempotent
    for call in (lambda: env.step(HOME), lambda: env.reset(), env.render):
        with pytest.raises(ClosedEnvironmentError, match="closed"):
            call()
    assert not any(t.name.startswith("distrl-env-") for t in threading.enumerate())


def test_bad_settings_are_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no task source 'nowhere'.*general"):
        PhoneEnv("nowhere")
    with pytest.raises(ValueError, match="no tasks in split 'nope'"):
        PhoneEnv("general", "nope")
    with pytest.raises(ValueError, match="action_mode 'voice'"):
        PhoneEnv(action_mode="voice")
    with pytest.raises(ValueError, match="cannot score the tasks on this device"):
        PhoneEnv(device="emulator-5554")  # sim tasks on adb: the sim evaluator must be asked for
    env = PhoneEnv()
    with pytest.raises(ValueError, match="not one of this env's"):
        env.reset(options={"task_id": "general/none/0"})
    with pytest.raises(
        TypeError, match=r"^reset options must be a dict such as \{'task_id': \.\.\.\}, not str"
    ):
        env.reset(options="general/alarm/0001")  # type: ignore[arg-type]
    env.close()


@pytest.mark.parametrize(
    ("arguments", "message", "error"),
    [
        ({"screen_width": 0}, "screen_width: must be at least 1 and at most 4096, got 0", ValueError),
        ({"screen_height": 100_000}, "screen_height: must be at least 1 and at most 4096", ValueError),
        ({"screen_width": "wide"}, "screen_width: expected an integer, got str 'wide'", TypeError),
        ({"screen_height": 30.5}, "screen_height: expected an integer, got float", TypeError),
        ({"max_steps": 0}, "max_steps: must be at least 1", ValueError),
        ({"max_steps": True}, "max_steps: expected an integer, got bool", TypeError),
        ({"timeouts": {"device_act_s": -1}}, "timeouts.device_act_s: must be greater than 0", ValueError),
        ({"timeouts": {"device_act_s": "soon"}}, "timeouts.device_act_s: expected a number", ValueError),
        ({"timeouts": {"device_act_s": float("inf")}}, "timeouts.device_act_s: must be finite", ValueError),
        (
            {"timeouts": {"devce_act_s": 1.0}},
            r"timeouts.devce_act_s: unknown key \(did you mean 'device_act_s'",
            ValueError,
        ),
        ({"timeouts": 30}, "timeouts: expected a dict of settings by name, got int", TypeError),
        ({"sim": {"colour": "red"}}, "sim.colour: unknown key", ValueError),
        (
            {"screen": {"image_format": "gif"}},
            "screen.image_format: expected one of 'jpeg', 'png'",
            ValueError,
        ),
        ({"screen": {"jpeg_quality": 0}}, "screen.jpeg_quality: must be at least 1, got 0", ValueError),
        ({"screen": 5}, "screen: expected a dict of settings by name, got int", TypeError),
        ({"sim": {"width": 10}}, "sim.width: must be at least", ValueError),
        (
            {"sim": {"latency": object()}},
            "sim.latency: expected a number, a string or a boolean, got object",
            ValueError,
        ),
        (
            {"invalid_penalty": float("nan")},
            "invalid_penalty: must be a finite number at least 0, got nan",
            ValueError,
        ),
        ({"invalid_penalty": -1}, "invalid_penalty: must be a finite number at least 0", ValueError),
        ({"invalid_penalty": "1"}, "invalid_penalty: expected a number, got str", TypeError),
        ({"score_every_step": "no"}, "score_every_step: expected True or False", TypeError),
        (
            {"tasks": ["general/airplane_mode/0000"]},
            r"tasks\[0\]: expected a distrl.Task, got str",
            TypeError,
        ),
        ({"tasks": []}, "tasks: the list is empty", ValueError),
        ({"tasks": "general"}, "tasks: expected a list of distrl.Task", TypeError),
        ({"suite": 3}, "suite: expected a task source's name or a list of task files, got int", TypeError),
        ({"split": 0}, "split: expected a string or None, got int", TypeError),
        ({"evaluator": None}, "evaluator: expected a string", TypeError),
        ({"render_mode": "human"}, "render_mode: 'human' is not one of", ValueError),
        ({"device": True}, "device: expected an adb serial, a console port or None, got bool", TypeError),
        ({"device": 1.5}, "device: expected an adb serial, a console port or None, got float", TypeError),
        ({"device": 70000}, "device: an emulator console port is between 1 and 65535", ValueError),
        ({"device": "emulator 5554"}, "device: an adb serial is one word", ValueError),
        (
            {"device": 5554, "adb": {"adb_port": "5037"}},
            "adb.adb_port: expected int or None, got str",
            TypeError,
        ),
        (
            {"device": 5554, "adb": {"adb_port": 0}},
            "adb.adb_port: must be at least 1 and at most 65535",
            ValueError,
        ),
        ({"device": 5554, "adb": {"reboot": 1}}, "adb.reboot: expected bool, got int", TypeError),
        ({"device": 5554, "adb": {"speed": 2}}, r"adb.speed: unknown setting \(known: adb_host", ValueError),
        (
            {"device": 5554, "adb": {"image_format": "gif"}},
            "adb: image_format 'gif' is not one of png",
            ValueError,
        ),
    ],
)
def test_a_wrong_argument_is_refused_at_construction_in_one_sentence(
    arguments: dict[str, Any], message: str, error: type[Exception]
) -> None:
    if "device" in arguments:
        arguments = {"evaluator": "sim", **arguments}
    with pytest.raises(error, match=f"^PhoneEnv {message}") as caught:
        PhoneEnv(**{**SMALL, **arguments})
    assert type(caught.value) is error or isinstance(caught.value, DistrlError)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("screen", "magic"), [(None, b"\xff\xd8\xff"), ({"image_format": "png"}, b"\x89PNG")]
)
def test_the_phone_sends_its_screens_in_the_screen_format_given(
    screen: dict[str, Any] | None, magic: bytes
) -> None:
    env = PhoneEnv(**SMALL, screen=screen)
    try:
        observation, _ = env.reset(seed=0)
        assert env._shown.startswith(magic)  # the screen as the phone sent it: JPEG by default
        observation, *_ = env.step(HOME)
        assert env._shown.startswith(magic)
        assert observation["screen"].shape == (300, 135, 3)
    finally:
        env.close()


def test_numpy_numbers_are_arguments_like_any_other() -> None:
    env = PhoneEnv(
        screen_width=np.int64(135),  # type: ignore[arg-type]
        screen_height=300,
        timeouts={"device_act_s": np.float32(2.5)},  # type: ignore[dict-item]
        invalid_penalty=np.float64(0.5),
        sim=SMALL["sim"],
    )
    try:
        observation, _ = env.reset(seed=0)
        assert observation["screen"].shape == (300, 135, 3)
        _, reward, _, _, _ = env.step("no action here")
        assert type(reward) is float
        assert reward == -0.5
    finally:
        env.close()


def test_an_env_pickles_until_its_first_reset_then_refuses_in_one_sentence(env: PhoneEnv) -> None:
    copied = pickle.loads(pickle.dumps(env))
    assert isinstance(copied, PhoneEnv)
    assert [task.id for task in copied.tasks] == [task.id for task in env.tasks]
    copy.deepcopy(env).close()
    env.reset(seed=0)
    for attempt in (lambda: pickle.dumps(env), lambda: copy.deepcopy(env)):
        with pytest.raises(TypeError, match=r"^phone-\d+: a PhoneEnv that has been reset holds a live phone"):
            attempt()
    _, reward, *_ = env.step(HOME)  # the refusal left the env as it was
    assert reward == 0.0


def test_the_registries_find_the_sims_parts_by_name() -> None:
    assert {"general", "web_shopping"} <= set(source_names())
    assert task_source("general").tasks("train") == tasks("general", "train")
    with pytest.raises(ValueError, match="no evaluator 'oracle'"):
        evaluator("oracle")
    assert isinstance(open_device(seed=3, sim={"width": 540, "height": 1200}), SimDevice)
    adb = open_device(5556, timeouts={"device_act_s": 2.0})
    assert isinstance(adb, AdbDevice)
    assert (adb.name, adb.console_port, adb.timeouts.device_act_s) == ("emulator-5556", 5556, 2.0)


def test_the_adb_evaluator_scores_a_tasks_shell_checks(tmp_path: Path) -> None:
    check = '{"command": "settings get global wifi_on", "equals": "%s"}'
    lines = [
        '{"id": "wifi-on", "goal": "Turn wifi on", "setup": ["settings put global wifi_on 0"], "check": %s}'
        % (check % 1),
        '{"id": "wifi-off", "goal": "Turn wifi off", "setup": ["settings put global wifi_on 0"], "check": %s}'
        % (check % 0),
    ]
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    env = PhoneEnv(str(tmp_path / "tasks.jsonl"), None, **SMALL)
    try:
        assert {task.evaluator for task in env.tasks} == {"adb"}
        for task_id, success in (("wifi-off", True), ("wifi-on", False)):
            env.reset(options={"task_id": task_id})
            _, reward, terminated, _, info = env.step(COMPLETE)
            assert (reward, terminated, info["success"]) == (float(success), True, success), task_id
    finally:
        env.close()


# -- vector envs -----------------------------------------------------------------------------------------


def _vector_run(kind: type[gymnasium.vector.VectorEnv], **options: Any) -> list[Any]:
    make = [lambda: gymnasium.make(ENV_ID, max_steps=2, action_mode="structured", **SMALL)] * 3
    vector = kind(make, **options)  # type: ignore[call-arg]
    try:
        observation, info = vector.reset(seed=5)
        vector.action_space.seed(5)
        goals = {task.id: task.goal for task in PhoneEnv(**SMALL).tasks}
        out = []
        for _ in range(4):  # two episodes each: the autoreset draws new tasks
            assert tuple(observation["goal"]) == tuple(goals[i] for i in info["task_id"])
            out.append((tuple(info["task_id"]), observation["screen"].copy(), tuple(observation["goal"])))
            observation, reward, _terminated, _truncated, info = vector.step(vector.action_space.sample())
            out.append(reward.tolist())
        return out
    finally:
        vector.close()


def test_async_and_sync_vector_envs_play_the_same_episodes() -> None:
    played = _vector_run(gymnasium.vector.SyncVectorEnv)
    assert len({ids for ids, *_ in played[::2]}) > 1  # autoreset drew new tasks
    for options in ({}, {"copy": False}, {"shared_memory": False}):
        again = _vector_run(gymnasium.vector.AsyncVectorEnv, **options)
        for mine, theirs in zip(again, played, strict=True):
            if isinstance(mine, tuple):
                assert mine[0] == theirs[0]
                assert mine[2] == theirs[2]
                assert np.array_equal(mine[1], theirs[1])
            else:
                assert mine == theirs


# -- PhoneFlat-v0: the spaces every RL library takes ---------------------------------------------------

FLAT: dict[str, Any] = {"screen_width": 48, "screen_height": 96, "sim": SMALL["sim"]}


def test_stable_baselines3_check_env_passes_on_the_flat_variant_without_a_warning() -> None:
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env = gymnasium.make(FLAT_ENV_ID, **FLAT)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sb3_checker.check_env(env)
        assert [str(w.message) for w in caught] == []
        assert isinstance(env.action_space, gymnasium.spaces.MultiDiscrete)
        assert env.action_space.nvec.tolist() == [len(ACTION_TYPES), 8, 4, len(GESTURES), 8]
    finally:
        env.close()


def test_a_flat_action_is_the_structured_action_it_names() -> None:
    env = gymnasium.make(FLAT_ENV_ID, suite="web_shopping", grid=(4, 2), **FLAT)
    try:
        env.reset(seed=0)
        goal = env.unwrapped.task.goal  # type: ignore[attr-defined]
        phrase = re.search(r'"([^"]+)"', goal)
        assert phrase is not None, goal  # every web_shopping goal quotes what to search for
        grid = env.get_wrapper_attr("action")
        swipe = grid([ACTION_TYPES.index(ActionType.DUAL_POINT), 3, 1, GESTURES.index("up"), 0])
        assert swipe["touch_point"].tolist() == pytest.approx([0.875, 0.75])
        assert swipe["lift_point"].tolist() == pytest.approx([0.475, 0.75])
        tap = grid([ACTION_TYPES.index(ActionType.DUAL_POINT), 0, 0, GESTURES.index("tap"), 0])
        assert tap["lift_point"].tolist() == tap["touch_point"].tolist() == [0.125, 0.25]
        assert grid([0, 0, 0, 0, 0])["typed_text"] == phrase[1]  # the quoted phrase comes first
        assert grid([0, 0, 0, 0, 1])["typed_text"] == typing_words(goal)[1]
        _, _, _, _, info = env.step(np.array([ACTION_TYPES.index(ActionType.TYPE), 0, 0, 0, 0]))
        assert info["action"].endswith(f'"typed_text": "{phrase[1]}"')
    finally:
        env.close()


def test_a_flat_action_outside_its_space_is_an_invalid_step_saying_why() -> None:
    env = gymnasium.make(FLAT_ENV_ID, max_steps=20, invalid_penalty=0.5, **FLAT)
    tap = [ACTION_TYPES.index(ActionType.DUAL_POINT), 0, 0, GESTURES.index("tap"), 0]
    try:
        observation, _ = env.reset(seed=0)
        for action, reason in (
            ([*tap[:3], len(GESTURES), 0], rf"gesture is {len(GESTURES)}, not from 0 to {len(GESTURES) - 1}"),
            ([*tap[:3], -1, 0], rf"gesture is -1, not from 0 to {len(GESTURES) - 1}"),
            ([len(ACTION_TYPES), 0, 0, 0, 0], rf"action_type is {len(ACTION_TYPES)}, not from 0 to 6"),
            ([*tap[:1], 8, 0, 0, 0], r"row is 8, not from 0 to 7"),
            ([*tap[:4], -3], r"typing_choice is -3, not from 0 to 7"),
            (tap[:3], r"a flat action is 5 integers \(action_type, row, .*\), not an array of shape \(3,\)"),
            ([tap, tap], r"a flat action is 5 integers .*, not an array of shape \(2, 5\)"),
            (
                np.array(tap, np.float64) + 0.9,
                r"a flat action is 5 integers .*, not float64 numbers \(\[1\.9, 0\.9, 0\.9, 0\.9, 0\.9\]\)",
            ),
            ([[1, 2], [3]], r"a flat action is 5 integers .*, not \[\[1, 2\], \[3\]\]"),
            ("tap", r"a flat action is 5 integers .*, not 'tap'"),
        ):
            after, reward, terminated, truncated, info = env.step(action)
            assert (info["invalid"], info["action"], reward, terminated, truncated) == (
                True,
                "",
                -0.5,
                False,
                False,
            )
            assert re.fullmatch(reason, info["reason"]), info["reason"]
            assert np.array_equal(after["screen"], observation["screen"])  # nothing was done
        _, reward, _, _, info = env.step(np.array(tap, np.uint8))  # any integers within the space
        assert (info["invalid"], reward) == (False, 0.0)
    finally:
        env.close()


def test_the_flat_goal_is_the_same_token_ids_in_every_env() -> None:
    first = gymnasium.make(FLAT_ENV_ID, goal_tokens=6, **FLAT)
    second = gymnasium.make(FLAT_ENV_ID, goal_tokens=6, **FLAT)
    try:
        one, _ = first.reset(seed=4)
        two, _ = second.reset(seed=4)
        assert one["goal"].dtype == np.int64
        assert one["goal"].shape == (6,)
        assert np.array_equal(one["goal"], two["goal"])
        assert one in first.observation_space
        encode = first.get_wrapper_attr("encode")
        assert encode("open zzzunknownzzz").tolist() == [
            first.get_wrapper_attr("vocabulary")["open"],
            1,
            0,
            0,
            0,
            0,
        ]
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(
    ("arguments", "message", "error"),
    [
        ({"grid": 0}, r"grid\[0\]: must be at least 1 and at most 256, got 0", ValueError),
        ({"grid": (4, 2, 1)}, "grid: expected rows and columns, or one number", TypeError),
        ({"grid": "4x4"}, "grid: expected rows and columns, or one number, got str", TypeError),
        ({"goal_tokens": 0}, "goal_tokens: must be at least 1", ValueError),
        ({"typing_choices": 2.0}, "typing_choices: expected an integer, got float", TypeError),
        ({"action_mode": "text"}, "action_mode: PhoneFlat-v0 sets it", TypeError),
    ],
)
def test_a_wrong_flat_argument_is_one_sentence(
    arguments: dict[str, Any], message: str, error: type[Exception]
) -> None:
    with pytest.raises(error, match=f"^PhoneEnv {message}"):
        gymnasium.make(FLAT_ENV_ID, **{**FLAT, **arguments})


def test_stable_baselines3_ppo_trains_on_the_flat_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CleanRL-style smoke test: a few hundred steps of SB3's PPO with its MultiInputPolicy."""
    sb3 = pytest.importorskip("stable_baselines3")
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's logger makes a folder there, else in /tmp
    env = gymnasium.make(FLAT_ENV_ID, grid=4, max_steps=8, **FLAT)
    try:
        model = sb3.PPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=2, seed=0, device="cpu")
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(total_timesteps=384)
        assert model.num_timesteps == 384
        assert len(model.ep_info_buffer) >= 384 // 8  # episodes ended, each at most 8 steps
        assert all(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))
        observation, _ = env.reset(seed=1)
        action, _ = model.predict(observation, deterministic=True)
        assert action in env.action_space
        _, _, _, _, info = env.step(action)
        assert info["task_id"] == env.unwrapped.task.id  # type: ignore[attr-defined]
    finally:
        env.close()


# -- over adb, against python -m distrl sim ------------------------------------------------------------


@contextlib.contextmanager
def _served_sim(adb: AdbServer, workdir: Path) -> Iterator[tuple[int, Path]]:
    """``python -m distrl sim``: one 540 × 1200 phone, registered with ``adb``; yields its console port
    and its console token file. Tries a few free-looking ports; every wait is bounded."""
    token, errors = workdir / "token", workdir / "sim.err"
    for _ in range(5):
        base = 20000 + 2 * random.randrange(4000)
        command = [sys.executable, "-m", "distrl", "sim", "--base-port", str(base), "--size", "540x1200"]
        command += ["--token-file", str(token), "--adb-server-port", str(adb.port)]
        with errors.open("w") as stderr:
            process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr)
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 20)
        line = process.stdout.readline().decode() if ready else ""
        if line.startswith(f"emulator-{base} "):
            break
        process.kill()
        process.wait(timeout=10)
        assert "in use" in errors.read_text(), (line, errors.read_text())  # else: try other ports
    else:
        pytest.fail("no free ports for python -m distrl sim")
    try:
        deadline = time.monotonic() + 15
        while adb.devices().get(f"emulator-{base}") != "device":
            assert time.monotonic() < deadline, adb.devices()
            time.sleep(0.05)
        yield base, token
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()


def test_the_env_plays_an_adb_device_through_the_real_adb_server(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    """The expert plays a mirror of the served phone (same seed and size) in this process; its actions go
    to the env as text, through adb, and the served phone's own state scores the episode."""
    task = next(t for t in tasks("general", "train") if t.id.startswith("general/open_app/"))
    mirror = SimDevice(
        "mirror", phone_config=PhoneConfig(width=540, height=1200, seed=0), timeouts=Timeouts()
    )
    phone = mirror.prepare(task)
    with _served_sim(adb_server, tmp_path) as (port, token):
        env = PhoneEnv(
            tasks=[task],
            device=port,
            evaluator="sim",
            screen_width=135,
            screen_height=300,
            adb={"adb_port": adb_server.port, "console_token_file": str(token)},
            timeouts={"device_reset_s": 20.0, "device_act_s": 10.0, "device_observe_s": 10.0},
        )
        try:
            observation, info = env.reset(seed=0)
            assert info == {"task_id": task.id, "evaluator": "sim"}
            assert observation["screen"].std() > 0
            total, terminated = 0.0, False
            for _ in range(task.max_steps):
                action = expert_action(task, phone)
                _, reward, terminated, truncated, info = env.step(format_action(action))
                total += float(reward)
                if terminated or truncated:
                    break
                phone.perform(to_gesture(action, phone.width, phone.height))
            assert (total, terminated, info["success"]) == (1.0, True, True)
        finally:
            env.close()


@pytest.mark.parametrize("device", ["emulator-5998", 5998, "R58M12ABCDE"])
def test_an_adb_device_with_nothing_behind_it_fails_fast_with_adbs_answer(
    adb_server: AdbServer, device: str | int
) -> None:
    """Without the check, ``reset`` waits ``device_boot_s`` for a reboot of a device that is not there."""
    env = PhoneEnv(
        tasks=tasks("general", "train")[:1],
        device=device,
        evaluator="sim",
        adb={"adb_port": adb_server.port},
        timeouts={"device_boot_s": 30.0},
        **{k: v for k, v in SMALL.items() if k != "sim"},
    )
    serial = f"emulator-{device}" if isinstance(device, int) else device
    try:
        started = time.monotonic()
        with pytest.raises(DeviceOffline) as caught:
            env.reset(seed=0)
        assert time.monotonic() - started < 10
        message = str(caught.value)
        assert message.startswith(f"{serial}: no device behind this ")
        assert f"adb says \"device '{serial}' not found\"" in message
        assert "\n" not in message
        assert (caught.value.device, caught.value.operation) == (serial, "reset")
    finally:
        env.close()
