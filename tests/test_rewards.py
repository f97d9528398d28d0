"""A fleet of adb devices: simulated phones served as emulators and driven through the real adb server.
Their rewards come from a task file's ``adb`` checks or from the judge over real HTTP; the probe says
which devices are not there."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SimFleet
from support import small_run
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import distrl.sim.shell
from distrl.cli import main
from distrl.config import Inventory, ScreenSettings, parse_inventory
from distrl.device.screen import decode, encode
from distrl.fleet import collect, probe_fleet
from distrl.records import Task
from distrl.sim.phone import Phone
from distrl.sim.suites import is_successful, tasks
from distrl.testing.judge_server import JudgeServer, serve_judge

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

KEY = "sk-distrl-test-key-3f9a1c"
KEY_ENV = "DISTRL_TEST_JUDGE_KEY"
MARK = "judge_test_task"
"""A global setting each test task's setup writes: the phone's state says which task it plays."""


def _inventory(
    tmp_path: Path, fleet: SimFleet, extra: str = "", run: str = "", more_ports: tuple[int, ...] = ()
) -> Inventory:
    """A local worker driving the served phones through adb; the console's token in its home. ``extra``
    is more tables, ``run`` more lines for ``[run]``; written to ``hosts.toml`` too."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".emulator_console_auth_token").write_text(fleet.token + "\n")
    ports = ", ".join(str(port) for port in (*(phone.console_port for phone in fleet.phones), *more_ports))
    text = f"""{small_run(tmp_path / "runs", run=run)}
[[hosts]]
name = "phones"
address = "localhost"
env = {{ HOME = "{home}" }}
devices = {{ emulator_ports = [{ports}] }}
{extra}
"""
    (tmp_path / "hosts.toml").write_text(text)
    return parse_inventory(text, source=str(tmp_path / "hosts.toml"))


def _jsonl(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


async def test_probe_names_the_adb_devices_that_are_not_there(tmp_path: Path, sim_fleet: SimFleet) -> None:
    ready = await probe_fleet(_inventory(tmp_path, sim_fleet))
    assert [report.error for report in ready] == [""]
    absent = 5680  # no phone has this console port
    (report,) = await probe_fleet(_inventory(tmp_path, sim_fleet, more_ports=(absent,)))
    assert not report.ok
    assert f"emulator-{absent}: not attached" in report.error
    assert all(phone.serial not in report.error for phone in sim_fleet.phones)


async def test_a_task_files_adb_checks_score_episodes_on_adb_devices(
    tmp_path: Path, sim_fleet: SimFleet
) -> None:
    airplane = {"command": "settings get global airplane_mode_on", "equals": "1"}
    _jsonl(
        tmp_path / "mine.jsonl",
        # already done by its setup: one step of an untrained policy cannot undo it
        {
            "goal": "Turn on airplane mode",
            "setup": ["settings put global airplane_mode_on 1"],
            "check": airplane,
            "max_steps": 1,
        },
        # not done, and not doable in one step
        {
            "goal": "Turn on dark mode",
            "setup": ["settings put secure dark_mode 0"],
            "check": [{"command": "settings get secure dark_mode", "ge": 1}],
            "max_steps": 1,
        },
    )
    inventory = _inventory(tmp_path, sim_fleet, '[tasks]\nfiles = ["mine.jsonl"]\n')
    result = await collect(inventory, split="train", episodes=4)
    assert len(result.trajectories) == 4
    for trajectory in result.trajectories:
        assert trajectory.task.evaluator == "adb"
        assert not trajectory.cut_short, trajectory.end_reason
        assert trajectory.success is (trajectory.task.goal == "Turn on airplane mode"), trajectory.task.goal
    assert result.stats.unscored == 0


@dataclasses.dataclass
class _Truth:
    """The sim's truth for each screen the phones showed: every screencap is recorded with the state
    the phone was in, and that state names the test task it was playing (``MARK``). A screen is known
    by its bytes as captured (PNG) and as the worker re-encodes them (JPEG, ``[screen]``'s quality)."""

    by_goal: dict[str, tuple[int, Task]]
    seen: dict[tuple[str, str], bool] = dataclasses.field(default_factory=dict)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def record(self, phone: Phone, png: bytes) -> None:
        mark = phone.get_setting("global", MARK)
        for number, task in self.by_goal.values():
            if str(number) == mark:
                success = is_successful(task, phone.state())
                sent = encode(decode(png), "jpeg", ScreenSettings().jpeg_quality)
                with self.lock:
                    for screen in (png, sent):
                        self.seen[(task.goal, hashlib.sha256(screen).hexdigest())] = success

    def __call__(self, goal: str, final: bytes) -> bool | None:
        with self.lock:
            return self.seen.get((goal, hashlib.sha256(final).hexdigest()))


def _judged_tasks() -> list[Task]:
    """Sim tasks in two steps or fewer; two of them done by their setup already, two not."""
    chosen = []
    for name, done in (("wifi", "settings put global wifi_on 1"), ("dark_theme", ""), ("airplane_mode", "")):
        task = next(t for t in tasks("general", "train") if t.params["template"] == name)
        setup = (*task.setup, *([done] if done else []))
        chosen.append(dataclasses.replace(task, setup=setup, max_steps=2))
    done_dnd = next(t for t in tasks("general", "train") if t.params["template"] == "do_not_disturb")
    chosen.append(dataclasses.replace(done_dnd, setup=("settings put global zen_mode 1",), max_steps=2))
    return [
        dataclasses.replace(task, setup=(*task.setup, f"settings put global {MARK} {number}"))
        for number, task in enumerate(chosen)
    ]


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Task], JudgeServer]]:
    chosen = _judged_tasks()
    truth = _Truth({task.goal: (number, task) for number, task in enumerate(chosen)})
    screencap = distrl.sim.shell._COMMANDS["screencap"]

    def recording(phone: Phone, args: list[str]) -> distrl.sim.shell.ShellResult:
        result = screencap(phone, args)
        truth.record(phone, result.output)
        return result

    monkeypatch.setitem(distrl.sim.shell._COMMANDS, "screencap", recording)
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve_judge(truth) as server:
        yield chosen, server


def _judge_table(server: JudgeServer, extra: str = "") -> str:
    return (
        f'[judge]\nbase_url = "{server.url}"\nmodel = "test-judge"\napi_key_env = "{KEY_ENV}"\n{extra}\n'
        '[tasks]\nevaluator = "judge"\n'
    )


async def test_every_reward_through_the_judge_matches_the_sims_truth(
    tmp_path: Path, sim_fleet: SimFleet, judged: tuple[list[Task], JudgeServer]
) -> None:
    chosen, server = judged
    inventory = _inventory(tmp_path, sim_fleet, _judge_table(server))
    result = await collect(inventory, tasks=chosen, episodes=8)
    assert len(result.trajectories) == 8
    outcomes = set()
    for trajectory in result.trajectories:
        assert trajectory.task.evaluator == "judge"
        assert not trajectory.cut_short, trajectory.end_reason
        assert trajectory.final_observation is not None  # the judge saw the screen it ended on
        truth = server.oracle(trajectory.task.goal, trajectory.final_observation.screenshot)
        assert truth is not None
        assert trajectory.success is truth, (trajectory.task.goal, trajectory.verdict)
        assert trajectory.verdict.startswith("the final screen")
        outcomes.add(truth)
    assert outcomes == {True, False}
    assert len(server.asked) == 8
    assert {asked.authorization for asked in server.asked} == {f"Bearer {KEY}"}
    assert result.stats.judge["verdicts"] == 8


def test_run_trains_on_a_task_file_judged_over_http_and_keeps_its_key_out_of_everything(
    tmp_path: Path,
    sim_fleet: SimFleet,
    judged: tuple[list[Task], JudgeServer],
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The user's path: a task file, an OpenAI-compatible judge, adb devices, ``python -m distrl run``."""
    chosen, server = judged
    server.script.extend(["429", "drop", "500"])  # the first asks are retried
    _jsonl(
        tmp_path / "goals.jsonl",
        *({"goal": task.goal, "setup": list(task.setup), "max_steps": 2} for task in chosen),
    )
    extra = _judge_table(server, "timeout_s = 1.0") + 'files = ["goals.jsonl"]\n'
    _inventory(tmp_path, sim_fleet, extra, run="max_trajectories = 6")
    assert main(["-vv", "run", str(tmp_path / "hosts.toml")]) == 0
    out, err = capfd.readouterr()
    assert "6 episodes (" in out, out
    assert "judge: " in err  # the progress line counts the episodes waiting for the judge
    successes = {asked.goal for asked in server.asked if "Status: success" in asked.answer}
    assert successes  # both outcomes came back
    assert successes < {task.goal for task in chosen}
    assert KEY not in out + err
    board = EventAccumulator(str(tmp_path / "runs" / "t" / "tensorboard"))
    board.Reload()  # TensorBoard's own reader
    judged_tags = {"judge/verdicts", "judge/requests", "judge/latency_p50_s", "judge/prompt_tokens"}
    assert judged_tags <= set(board.Tags()["scalars"])
    judge = {tag: board.Scalars(f"judge/{tag}")[-1].value for tag in ("verdicts", "cache_hits")}
    assert judge["verdicts"] >= 6  # every episode judged
    assert not server.script  # the three failures were answered, and the run went on past them
    # episodes that end on the same screen after the same actions share one cached verdict
    assert server.requests >= judge["verdicts"] - judge["cache_hits"] + 3
    files = [path for path in (tmp_path / "runs").rglob("*") if path.is_file()]
    assert any(path.suffix == ".safetensors" for path in files)  # a checkpoint was written
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
