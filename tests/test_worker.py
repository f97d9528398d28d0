"""The worker agent as a real subprocess, and the fleet probe that drives it; a worker of adb devices
on a host where the sim is not installed."""

from __future__ import annotations

import dataclasses
import json
import signal
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from conftest import SimFleet
from support import gone, small_run, wait_gone

from distrl import __version__
from distrl.config import Devices, devices_json, parse_inventory, worker_settings_json
from distrl.errors import ProtocolMismatch, WeightsError
from distrl.fleet import collect, probe_fleet
from distrl.records import Task
from distrl.sim.suites import tasks
from distrl.wire import (
    MAGIC,
    PROTOCOL_VERSION,
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    FrameStream,
    Heartbeat,
    Hello,
    Message,
    Setup,
    Shutdown,
    StepReport,
    Weights,
)

pytestmark = pytest.mark.anyio


TWO_SIMS = Devices(sim=2)


def _hello(protocol: int = PROTOCOL_VERSION, devices: Devices = TWO_SIMS) -> Hello:
    return Hello(
        id=1,
        role="learner",
        protocol=protocol,
        distrl_version=__version__,
        host="w",
        devices=devices.serials,
        compute={},
        device_settings=devices_json(devices),
    )


@asynccontextmanager
async def worker(*extra: str) -> AsyncIterator[tuple[Process, FrameStream]]:
    process = await anyio.open_process(
        [sys.executable, "-m", "distrl", "worker", "--host", "w", *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        yield process, FrameStream.from_pair(receive=process.stdout, send=process.stdin)
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def test_worker_handshake_heartbeat_and_shutdown() -> None:
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            await stream.send(_hello())
            reply = await stream.receive()
            assert isinstance(reply, Hello)
            assert (reply.role, reply.host, reply.devices, reply.id) == ("worker", "w", ("sim-0", "sim-1"), 1)
            assert reply.compute["pid"] == process.pid
            await stream.send(Heartbeat(id=2, seq=7, sent_at_s=123.5))
            echo = await stream.receive()
            assert echo == Heartbeat(id=2, seq=7, sent_at_s=123.5)
            await stream.send(Shutdown(id=3, reason="test"))
            assert await stream.receive() == Ack(ref=3, ok=True)
            assert await process.wait() == 0


async def test_worker_reports_unsupported_requests_and_keeps_serving() -> None:
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            task = Task(id="general/0", suite="general", goal="Open the clock")
            await stream.send(EpisodeRequest(id=5, episode_id="e1", device="sim-0", task=task))
            answer = await stream.receive()
            assert isinstance(answer, ErrorReport)
            assert answer.ref == 5
            assert "EpisodeRequest before its Setup" in answer.error.message
            await stream.send(Heartbeat(id=6, seq=1, sent_at_s=0.0))
            assert isinstance(await stream.receive(), Heartbeat)
            await stream.send_eof()
            assert await process.wait() == 0


async def test_worker_exits_when_its_input_closes() -> None:
    with anyio.fail_after(30):
        async with worker() as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            await stream.send_eof()  # what a dying learner or a dropped SSH channel looks like
            assert await process.wait() == 0


async def test_worker_refuses_another_protocol_version() -> None:
    with anyio.fail_after(30):
        async with worker() as (process, stream):
            await stream.send(_hello(protocol=PROTOCOL_VERSION + 1))
            answer = await stream.receive()
            assert isinstance(answer, ErrorReport)
            assert isinstance(answer.error, ProtocolMismatch)
            assert answer.error.theirs == PROTOCOL_VERSION + 1
            assert await process.wait() == 2


async def test_worker_exits_on_garbage_and_says_why() -> None:
    with anyio.fail_after(30):
        async with worker() as (process, _):
            assert process.stdin is not None
            assert process.stderr is not None
            await process.stdin.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert await process.wait() == 2
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            assert "bad frame from the learner" in stderr


@pytest.mark.parametrize("setup", [False, True])
async def test_worker_exits_on_a_malformed_frame_after_the_handshake_with_one_line(setup: bool) -> None:
    # what a learner that dies in the middle of sending a frame leaves behind: a prefix, then nothing
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            assert process.stdin is not None
            assert process.stderr is not None
            await stream.send(_hello())
            await stream.receive()
            if setup:
                await stream.send(Setup(id=2, settings=_settings(model='"expert"')))
                assert isinstance(await stream.receive(), Ack)
            await process.stdin.send(MAGIC + bytes([PROTOCOL_VERSION]) + struct.pack(">II", 1000, 0) + b"{")
            await process.stdin.aclose()
            assert await process.wait() == 2
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            assert "bad frame from the learner" in stderr
            assert "Traceback" not in stderr


async def test_worker_leaves_a_learner_that_says_nothing_after_hello() -> None:
    # connected, and silent from the first byte on: the watchdog does not wait for a Setup
    with anyio.fail_after(30):
        async with worker("--silence-timeout", "1") as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            shook = time.monotonic()
            assert await process.wait() == 3
            assert time.monotonic() - shook >= 1.0


async def test_worker_gives_up_without_a_hello() -> None:
    with anyio.fail_after(30):
        async with worker("--handshake-timeout", "0.3") as (process, _):
            assert process.stderr is not None
            assert await process.wait() == 2
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            assert "no hello from the learner within 0.3 s" in stderr


def test_worker_dies_with_a_killed_learner(tmp_path: Path) -> None:
    """SIGKILL the learner (no cleanup runs): its worker must still exit, on end of input."""
    learner = tmp_path / "learner.py"
    learner.write_text(
        textwrap.dedent(
            f"""
            import subprocess, sys, time
            worker = subprocess.Popen([{sys.executable!r}, "-m", "distrl", "worker", "--host", "w"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
            print(worker.pid, flush=True)
            time.sleep(60)
            """
        )
    )
    with subprocess.Popen([sys.executable, str(learner)], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        worker_pid = int(parent.stdout.readline())
        assert not gone(worker_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    assert wait_gone(worker_pid, 15), "the worker outlived its learner"


async def test_probe_fleet_runs_hosts_concurrently_and_reports_each(tmp_path: Path) -> None:
    hung = tmp_path / "hung-python"
    pid_file = tmp_path / "hung.pid"
    hung.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    hung.chmod(0o755)
    inventory = parse_inventory(
        f"""
        [timeouts]
        worker_start_s = 4
        cleanup_s = 1
        [defaults]
        devices = {{ sim = 2 }}
        [[hosts]]
        name = "a"
        address = "localhost"
        [[hosts]]
        name = "quits"
        address = "localhost"
        python = "/bin/true"
        [[hosts]]
        name = "hangs"
        address = "localhost"
        python = "{hung}"
        [[hosts]]
        name = "b"
        address = "localhost"
        devices = {{ sim = 3 }}
        """
    )
    seen: list[str] = []
    with anyio.fail_after(60):
        reports = await probe_fleet(inventory, heartbeats=3, on_report=lambda r: seen.append(r.host))
    assert [r.host for r in reports] == ["a", "quits", "hangs", "b"]
    assert sorted(seen) == ["a", "b", "hangs", "quits"]
    a, quits, hangs, b = reports
    assert a.ok
    assert b.ok
    assert b.devices == ("sim-0", "sim-1", "sim-2")
    assert len(a.rtt_ms) == 3
    assert a.rtt_p50_ms > 0
    assert "the worker exited during hello" in quits.error
    assert "no answer to hello within 4 s" in hangs.error
    # The hung worker was stopped by the cleanup, not left behind.
    assert gone(int(pid_file.read_text()))


def test_the_worker_waits_for_hello_as_long_as_the_inventory_says() -> None:
    from distrl.transport import worker_command

    inventory = parse_inventory(
        '[timeouts]\nhandshake_s = 7.5\n[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    command = worker_command(inventory.hosts[0], inventory.timeouts)
    assert command[-2:] == ["--handshake-timeout", "7.5"]
    assert command[-4:-2] == ["--silence-timeout", "30"]  # the learner's heartbeat_timeout_s


def _settings(**policy: object) -> str:
    inventory = parse_inventory(
        '[sim]\nwidth = 270\nheight = 600\nlatency = "off"\n[policy]\nmax_new_tokens = 16\n'
        + "".join(f"{key} = {value}\n" for key, value in policy.items())
        + '[[hosts]]\nname = "w"\naddress = "localhost"\ndevices = { sim = 2 }\n'
    )
    return worker_settings_json(inventory)


async def _reply(stream: FrameStream) -> Message:
    """The next message that is not a step report."""
    while True:
        message = await stream.receive()
        if not isinstance(message, StepReport):
            return message


async def test_worker_sets_up_takes_weights_and_plays_episodes() -> None:
    from distrl import weights
    from distrl.config import PolicySettings
    from distrl.policy import Policy

    adapter = Policy.load(PolicySettings(), device="cpu", seed=3).adapter.state()
    changed = {name: tensor + 0.01 for name, tensor in adapter.items()}
    with anyio.fail_after(120):
        async with worker() as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            await stream.send(Setup(id=2, settings='{"policy": {"lora_rank": 0}}'))
            refused = await stream.receive()
            assert isinstance(refused, ErrorReport)
            assert "policy.lora_rank" in refused.error.message
            await stream.send(Setup(id=3, settings=_settings()))
            assert await stream.receive() == Ack(ref=3, ok=True, detail="cpu")

            full = weights.encode_full(adapter, 1)
            await stream.send(
                Weights(id=4, version=1, base_version=None, kind="full", checksum="", blob=full)
            )
            assert await stream.receive() == Ack(ref=4, ok=True, detail="v1")
            wrong_base = weights.encode_diff(adapter, changed, 7, 8)
            await stream.send(
                Weights(id=5, version=8, base_version=7, kind="diff", checksum="", blob=wrong_base)
            )
            bad = await stream.receive()
            assert isinstance(bad, ErrorReport)
            assert isinstance(bad.error, WeightsError)
            diff = weights.encode_diff(adapter, changed, 1, 2)
            await stream.send(Weights(id=6, version=2, base_version=1, kind="diff", checksum="", blob=diff))
            assert await stream.receive() == Ack(ref=6, ok=True, detail="v2")

            task = tasks("general", "train")[0]
            for i, device in enumerate(("sim-0", "sim-1")):
                request = EpisodeRequest(id=10 + i, episode_id=f"e{i}", device=device, task=task)
                await stream.send(request)
            steps: dict[str, list[int]] = {"e0": [], "e1": []}
            finished: dict[str, EpisodeEnd] = {}
            while len(finished) < 2:
                message = await stream.receive()
                if isinstance(message, StepReport):
                    assert message.episode_id not in finished  # no step after the end
                    steps[message.episode_id].append(message.step.index)
                    assert message.step.policy_version == 2
                    assert message.step.observation.screenshot  # the screen travels with its step ...
                else:
                    assert isinstance(message, EpisodeEnd)
                    finished[message.trajectory.id] = message
            for episode_id, end in finished.items():
                # ... every step was reported as it happened, then the ending, without the steps
                assert steps[episode_id] == list(range(end.steps))
                assert end.steps >= 1
                assert end.trajectory.steps == ()
                assert end.trajectory.success is False
                assert end.trajectory.device in ("sim-0", "sim-1")
            await stream.send(EpisodeRequest(id=20, episode_id="e9", device="sim-7", task=task))
            unknown = await _reply(stream)
            assert isinstance(unknown, ErrorReport)
            assert unknown.ref == 20
            assert "no device 'sim-7'" in unknown.error.message
            await stream.send_eof()
            assert await process.wait() == 0


async def test_the_worker_opens_the_devices_its_settings_name_only() -> None:
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            await stream.send(dataclasses.replace(_hello(), devices=("sim-0", "R58M")))
            refused = await stream.receive()
            assert isinstance(refused, ErrorReport)
            assert "names 'R58M', which the host's device settings do not" in refused.error.message
            assert await process.wait() == 2


async def test_the_expert_plays_sim_phones_only_and_takes_no_weights() -> None:
    expert = _settings(model='"expert"')
    hello = _hello(devices=Devices(sim=1, emulator_ports=(5554,)))
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            await stream.send(hello)
            await stream.receive()
            await stream.send(Setup(id=2, settings=expert))
            refused = await stream.receive()
            assert isinstance(refused, ErrorReport)
            assert "emulator-5554 are adb devices" in refused.error.message
            await stream.send_eof()
            assert await process.wait() == 0
        async with worker() as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            await stream.send(Setup(id=2, settings=expert))
            assert await stream.receive() == Ack(ref=2, ok=True, detail="cpu")
            await stream.send(Weights(id=3, version=1, base_version=None, kind="full", checksum="", blob=b""))
            no_weights = await stream.receive()
            assert isinstance(no_weights, ErrorReport)
            assert "has no weights" in no_weights.error.message
            task = tasks("general", "train")[0]
            await stream.send(EpisodeRequest(id=4, episode_id="e", device="sim-1", task=task))
            report = await _reply(stream)
            assert isinstance(report, EpisodeEnd)
            assert report.trajectory.success is True
            await stream.send_eof()
            assert await process.wait() == 0


async def test_worker_leaves_a_learner_that_went_silent() -> None:
    settings = json.loads(_settings())
    settings["timeouts"].update(heartbeat_interval_s=0.5, heartbeat_timeout_s=2.0)
    with anyio.fail_after(60):
        async with worker() as (process, stream):
            await stream.send(_hello())
            await stream.receive()
            # the last word the worker hears from the learner: its silence is counted from no earlier
            # than this (timed from the Ack instead, a slow reader under load saw the worker leave early)
            said = time.monotonic()
            await stream.send(Setup(id=2, settings=json.dumps(settings)))
            assert isinstance(await stream.receive(), Ack)
            acked = time.monotonic()
            assert await process.wait() == 3  # no heartbeat, no message: the learner is gone
            assert time.monotonic() - said >= 2.0
            assert time.monotonic() - acked <= 10.0


WITHOUT_THE_SIM = """
import argparse, importlib.abc, importlib.metadata, logging, sys

TRIED = {tried!r}


class NoSim(importlib.abc.MetaPathFinder):
    \"\"\"The sim is not installed on this host: importing any of it fails, and says so in TRIED.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "distrl.sim" or name.startswith("distrl.sim."):
            with open(TRIED, "a") as tried:
                tried.write(name + "\\n")
            raise ImportError(f"{{name}}: the sim is not installed on this host")
        return None


sys.meta_path.insert(0, NoSim())
installed = importlib.metadata.entry_points


def entry_points(**selection):  # nor are its entry points
    found = installed(**selection)
    if "group" not in selection:
        return found
    return importlib.metadata.EntryPoints(p for p in found if not p.value.startswith("distrl.sim"))


importlib.metadata.entry_points = entry_points
# the argv the learner starts a worker with: -m distrl [-v] worker --host NAME --silence-timeout S ...
parser = argparse.ArgumentParser()
parser.add_argument("-m")
parser.add_argument("-v", action="count", default=0)
parser.add_argument("command")
parser.add_argument("--host")
parser.add_argument("--silence-timeout", type=float)
parser.add_argument("--handshake-timeout", type=float)
args = parser.parse_args()
logging.basicConfig(level=logging.INFO if args.v else logging.WARNING, stream=sys.stderr)
from distrl.worker import main

main(args.host, handshake_s=args.handshake_timeout, silence_s=args.silence_timeout)
"""


def _without_the_sim(folder: Path) -> tuple[Path, Path]:
    """A ``python`` for a host's worker where the sim is not installed, and the file that lists what of
    the sim its worker tried to import (none: no file)."""
    tried = folder / "tried-to-import-the-sim"
    boot = folder / "worker_without_the_sim.py"
    boot.write_text(WITHOUT_THE_SIM.format(tried=str(tried)))
    python = folder / "python-without-the-sim"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{boot}" "$@"\n')
    python.chmod(0o755)
    return python, tried


async def test_a_host_of_sim_phones_where_the_sim_is_not_installed_says_so(tmp_path: Path) -> None:
    python, tried = _without_the_sim(tmp_path)
    argv = [str(python), "-m", "distrl", "worker", "--host", "w", "--silence-timeout", "30"]
    with anyio.fail_after(60):
        async with await anyio.open_process([*argv, "--handshake-timeout", "30"]) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            stream = FrameStream.from_pair(receive=process.stdout, send=process.stdin)
            await stream.send(_hello())
            refused = await stream.receive()
            assert isinstance(refused, ErrorReport)
            assert refused.error.message == (
                "host 'w': devices: sim-0, sim-1 are of the device kind 'sim', which is not installed here"
                " (registered kinds: none)"
            )
            assert await process.wait() == 2
    assert not tried.exists(), tried.read_text()  # it knew without trying


@pytest.mark.timeout(240)
async def test_a_worker_of_adb_devices_plays_file_tasks_where_the_sim_is_not_installed(
    tmp_path: Path, sim_fleet: SimFleet
) -> None:
    """The real-device path knows no sim: a worker whose host has adb devices only (the served phones,
    which adb lists as emulators), playing task-file tasks that its ``adb`` evaluator scores, where
    importing any of ``distrl.sim`` fails and its entry points (the ``sim`` device kind and evaluator,
    the suites) are gone."""
    python, tried = _without_the_sim(tmp_path)
    home = tmp_path / "home"  # the console's token, where an emulator's is
    home.mkdir()
    (home / ".emulator_console_auth_token").write_text(sim_fleet.token + "\n")
    airplane = {"command": "settings get global airplane_mode_on", "equals": "1"}
    (tmp_path / "mine.jsonl").write_text(
        json.dumps(
            {
                "goal": "Turn on airplane mode",
                "setup": ["settings put global airplane_mode_on 1"],
                "check": airplane,
                "max_steps": 1,
            }
        )
        + "\n"
        + json.dumps(
            {
                "goal": "Turn off airplane mode",
                "setup": ["settings put global airplane_mode_on 1"],
                "check": {**airplane, "equals": "0"},
                "max_steps": 1,
            }
        )
        + "\n"
    )
    ports = ", ".join(str(phone.console_port) for phone in sim_fleet.phones)
    inventory = parse_inventory(
        f"""{small_run(tmp_path / "runs")}
[tasks]
files = ["mine.jsonl"]
[[hosts]]
name = "phones"
address = "localhost"
python = "{python}"
env = {{ HOME = "{home}" }}
devices = {{ emulator_ports = [{ports}] }}
""",
        source=str(tmp_path / "hosts.toml"),
    )
    result = await collect(inventory, split="train", episodes=4)
    assert not tried.exists(), tried.read_text()
    assert len(result.trajectories) == 4
    for trajectory in result.trajectories:
        assert trajectory.device in sim_fleet.serials
        assert trajectory.task.evaluator == "adb"
        assert not trajectory.cut_short, trajectory.end_reason
        assert len(trajectory.steps) == 1
        # scored on the worker by the task's shell checks: one step cannot change airplane mode
        assert trajectory.success is (trajectory.task.goal == "Turn on airplane mode")
    assert result.stats.unscored == 0
