"""How fast the simulated phone runs, in-process and through the real adb server.

Prints one JSON line:
- ``sim``: for each screen size, ``SimDevice`` steps (observe + act, the expert choosing) per second of
  process CPU time (= per core), with latency off, over the ``general`` and ``web_shopping`` suites;
  observations JPEG-encoded as a worker sends them. Goal: ≥ 50 steps/s per core at 1080×2400.
- ``ops_ms``: median and p90 milliseconds per operation (observe, tap, swipe, type, key, reset, state)
  for ``AdbDevice`` through the real adb server and ``python -m distrl sim`` (PNG over adb, as
  ``screencap -p``), next to the same operations on ``SimDevice`` (JPEG, in-process). Latency off
  everywhere, so the figures are the machinery's own cost.

It also saves the frames it rendered of the launcher and a shop's product page to ``benchmarks/figures/``
(the README shows them).

Bounded: fixed step counts, about a minute on 2 cores. Run: ``python benchmarks/sim_throughput.py``
(``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
from adb_rig import free_ports, private_adb_server, stop

from distrl.config import Timeouts
from distrl.device import AdbDevice
from distrl.records import Action, ActionType, Task
from distrl.sim.device import SimDevice
from distrl.sim.phone import PhoneConfig
from distrl.sim.suites import expert_action, tasks

FIGURES = Path(__file__).resolve().parent / "figures"
SIZES = ((1080, 2400), (540, 1200))
TIMEOUTS = Timeouts(device_observe_s=30, device_act_s=30, device_reset_s=60)


async def _run_expert(device: SimDevice, task: Task, max_steps: int) -> int:
    await device.reset(task)
    steps = 0
    for _ in range(task.max_steps):
        action = expert_action(task, device.phone)
        await device.act(action)
        await device.observe()
        steps += 1
        if action.type.ends_episode or steps >= max_steps:
            break
    return steps


async def _sim_steps(width: int, height: int, budget: int) -> dict[str, float]:
    """Steps per CPU second of one ``SimDevice`` running the expert over both suites."""
    device = SimDevice("sim-0", phone_config=PhoneConfig(width=width, height=height), timeouts=TIMEOUTS)
    chosen = tasks("general")[::7] + tasks("web_shopping")[::11]
    steps = 0
    cpu = time.process_time()
    wall = time.perf_counter()
    async with device:
        for task in chosen:
            steps += await _run_expert(device, task, budget - steps)
            if steps >= budget:
                break
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    return {
        "steps": steps,
        "steps_per_cpu_s": round(steps / cpu, 1),
        "steps_per_wall_s": round(steps / wall, 1),
    }


def _tap(x: float, y: float) -> Action:
    return Action(type=ActionType.DUAL_POINT, touch=(y, x), lift=(y, x))


OPS: dict[str, Callable[[SimDevice | AdbDevice], Awaitable[object]]] = {
    "observe": lambda d: d.observe(),
    "tap": lambda d: d.act(_tap(0.5, 0.02)),  # the status bar: changes nothing
    "swipe": lambda d: d.act(Action(type=ActionType.DUAL_POINT, touch=(0.7, 0.5), lift=(0.3, 0.5))),
    "type": lambda d: d.act(Action(type=ActionType.TYPE, text="hello world")),
    "key": lambda d: d.act(Action(type=ActionType.PRESS_ENTER)),
    "state": lambda d: d.state(),
}


async def _ops(device: SimDevice | AdbDevice, task: Task, repeats: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}

    def reset(device: SimDevice | AdbDevice) -> Awaitable[object]:
        return device.reset(task)

    for name, op in {**OPS, "reset": reset}.items():
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            await op(device)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[name] = {
            "p50": round(statistics.median(times), 1),
            "p90": round(times[min(len(times) - 1, int(len(times) * 0.9))], 1),
        }
    return out


@contextlib.contextmanager
def _adb_and_sim(workdir: Path) -> Iterator[tuple[str, int, str]]:
    """A private real adb server and one phone served by ``python -m distrl sim`` that it lists."""
    token = workdir / "token"
    token.write_text("")
    with private_adb_server() as adb:
        base = free_ports(2)
        command = [sys.executable, "-m", "distrl", "sim", "--devices", "1", "--base-port", str(base)]
        command += ["--latency", "off", "--token-file", str(token), "--adb-server-port", str(adb.port)]
        sim = subprocess.Popen(
            command,
            env=adb.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            serial = f"emulator-{base}"
            deadline = time.monotonic() + 30
            while not adb.lists(serial):
                if time.monotonic() > deadline or sim.poll() is not None:
                    raise RuntimeError("the adb server did not list the simulated phone")
                time.sleep(0.1)
            yield serial, adb.port, str(token)
        finally:
            stop(sim)


async def _compare_ops(repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    task = tasks("general")[0]
    sim = SimDevice("sim-0", phone_config=PhoneConfig(), timeouts=TIMEOUTS)
    async with sim:
        await sim.reset(task)
        sim_ops = await _ops(sim, task, repeats)
    with tempfile.TemporaryDirectory() as tmp, _adb_and_sim(Path(tmp)) as (serial, port, token):
        adb = AdbDevice(serial, timeouts=TIMEOUTS, adb_port=port, console_token_file=token)
        async with adb:
            await adb.reset(task)
            adb_ops = await _ops(adb, task, repeats)
    return {"sim_device": sim_ops, "adb_device": adb_ops}


async def _figures() -> list[str]:
    """The launcher and a shop's product page, as the phone renders them."""
    FIGURES.mkdir(exist_ok=True)
    device = SimDevice("sim-0", phone_config=PhoneConfig(nuisances=False), timeouts=TIMEOUTS)
    saved = []
    async with device:
        await device.reset(tasks("general")[0])
        device.phone.render().save(FIGURES / "sim-launcher.png")
        saved.append("sim-launcher.png")
        shopping = next(t for t in tasks("web_shopping") if "select the first entry" in t.goal)
        await device.reset(shopping)
        for _ in range(shopping.max_steps):  # the expert, until it has the first entry's page open
            action = expert_action(shopping, device.phone)
            if action.type.ends_episode:
                break
            await device.act(action)
        device.phone.render().save(FIGURES / "sim-shopping.png")
        saved.append("sim-shopping.png")
    return saved


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few steps only (smoke run)")
    parser.add_argument("--no-adb", action="store_true", help="skip the adb comparison")
    args = parser.parse_args()
    budget = 20 if args.quick else 300
    repeats = 3 if args.quick else 20
    result: dict[str, object] = {
        "benchmark": "sim_throughput",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "sim": {f"{w}x{h}": await _sim_steps(w, h, budget) for w, h in SIZES},
    }
    if not args.no_adb:
        result["ops_ms"] = await _compare_ops(repeats)
    result["figures"] = await _figures()
    print(json.dumps(result))


if __name__ == "__main__":
    anyio.run(main)
