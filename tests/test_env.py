"""The Gymnasium environment (``distrl.env``): its contract (gymnasium's own checker), the expert solving
tasks through it, seeds, invalid actions, device faults, a closed env, vector envs, and the env over
``AdbDevice`` against ``python -m distrl sim`` through the real adb server.

Phones here are 540 × 1200 and screens 135 × 300 so that the tests stay quick; the env's defaults are
the sim's 1080 × 2400 and 540 × 1200.
"""

from __future__ import annotations

import contextlib
import random
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
from distrl.env import ENV_ID, PhoneEnv
from distrl.env.spaces import ACTION_TYPES, to_action
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
    for bad in ({**typed, "typed_text": ""}, {**tap, "touch_point": [1.5, 0.0]}, {"action_type": 99}, 7):
        assert isinstance(to_action(bad, "structured"), InvalidAction), bad
    assert isinstance(to_action(b"\xff", "text"), InvalidAction)


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
    env = PhoneEnv(sim={"colour": "red"})
    with pytest.raises(ValueError, match="sim: unknown setting 'colour'"):
        env.reset()
    with pytest.raises(ValueError, match="not one of this env's"):
        env.reset(options={"task_id": "general/none/0"})
    env.close()


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
