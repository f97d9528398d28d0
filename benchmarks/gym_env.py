"""What the Gymnasium environment costs: 8 simulated phones in an ``AsyncVectorEnv`` against the same 8
``SimDevice``s in distrl's own episode loop, and how long a reset takes.

Prints one JSON line:
- ``own_loop``: 8 ``SimDevice``s (1080 × 2400, JPEG screens, latency off) each playing episodes of the
  ``general`` train tasks with ``play_episode`` in one event loop, the actions seeded random taps, HOME
  and BACK (no STATUS action: every episode runs to its step limit). Actions per wall second, and per
  CPU second of the process (= per core); ``new_screens``: the share of screens that differ from the one
  before (the env decodes only those: about 3 ms each at 540 × 1200, the most of what it adds).
- ``async_vector_env``: the same phones and the same kind of actions, as ``distrl/Phone-v0`` in an
  ``AsyncVectorEnv`` of 8 worker processes (the actions as AutoUI text, screens 540 × 1200, autoreset
  at the step limit). CPU time is the workers' and this process's together.
- ``ratio``: the env's actions per CPU second over the own loop's. Goal: ≥ 0.8.
- ``reset_ms``: ``PhoneEnv.reset`` of a 1080 × 2400 phone, median and p90: ``next`` (no seed: the phone's
  reset and its screen) and ``seeded`` (a fresh phone booted from the seed). Goal: ``next`` < 20 ms.

Bounded: fixed action counts, about 40 s on 2 cores. Run: ``python benchmarks/gym_env.py`` (``--quick``
for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import gymnasium
import numpy as np

from distrl.actions import format_action
from distrl.config import Timeouts
from distrl.device.episode import play_episode, scripted_step
from distrl.env import ENV_ID, PhoneEnv
from distrl.records import Action, ActionType, InvalidAction, Observation, Step
from distrl.sim.device import SimDevice
from distrl.sim.phone import PhoneConfig
from distrl.sim.suites import score, tasks

PHONES = 8
WIDTH, HEIGHT = 1080, 2400


def random_action(rng: random.Random) -> Action:
    """A tap anywhere (most of the time), HOME or BACK."""
    roll = rng.random()
    if roll < 0.1:
        return Action(type=ActionType.PRESS_HOME)
    if roll < 0.2:
        return Action(type=ActionType.PRESS_BACK)
    point = (round(rng.random(), 4), round(rng.random(), 4))
    return Action(type=ActionType.DUAL_POINT, touch=point, lift=point)


async def _own_loop(actions: int) -> dict[str, float]:
    """8 ``SimDevice``s in ``play_episode``, concurrently, until ``actions`` actions in all."""
    pool = tasks("general", "train")
    per_phone = actions // PHONES
    done = [0] * PHONES
    changed = [0, 0]  # screens the chooser saw that differ from the one before, and all it saw

    async def phone(k: int) -> None:
        rng = random.Random(k)
        config = PhoneConfig(width=WIDTH, height=HEIGHT, seed=k)
        device = SimDevice(f"sim-{k}", phone_config=config, timeouts=Timeouts(), image_format="jpeg")

        last = [b""]

        async def choose(
            observation: Observation, history: Sequence[Action | InvalidAction], index: int
        ) -> Step:
            changed[0] += observation.screenshot != last[0]
            changed[1] += 1
            last[0] = observation.screenshot
            return scripted_step(random_action(rng), observation, index, time.perf_counter())

        async with device:
            while done[k] < per_phone:
                task = rng.choice(pool)
                limit = min(task.max_steps, per_phone - done[k])
                trajectory = await play_episode(
                    device, task, choose, episode_id=f"{k}", host="local", step_timeout_s=30,
                    max_steps=limit, score=score,
                )  # fmt: skip
                done[k] += len(trajectory.steps)

    cpu, wall = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for k in range(PHONES):
            tg.start_soon(phone, k)
    rates = _rates(sum(done), time.perf_counter() - wall, time.process_time() - cpu)
    return {**rates, "new_screens": round(changed[0] / changed[1], 2)}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _vector_env(actions: int) -> dict[str, float]:
    """8 ``PhoneEnv``s in an ``AsyncVectorEnv`` until ``actions`` actions in all."""
    make = [lambda: gymnasium.make(ENV_ID, suite="general", split="train")] * PHONES
    vector = gymnasium.vector.AsyncVectorEnv(make)
    try:
        rngs = [random.Random(k) for k in range(PHONES)]
        vector.reset(seed=0)
        resetting = np.zeros(PHONES, dtype=bool)
        workers = [process.pid for process in vector.processes]
        cpu = time.process_time() + sum(_cpu_s(pid) for pid in workers if pid)
        wall = time.perf_counter()
        done = 0
        while done < actions:
            step = tuple(format_action(random_action(rng)) for rng in rngs)
            _, _, terminated, truncated, _ = vector.step(step)
            done += int((~resetting).sum())  # a sub-env that autoresets does no action in this step
            resetting = terminated | truncated
        cpu = time.process_time() + sum(_cpu_s(pid) for pid in workers if pid) - cpu
        return _rates(done, time.perf_counter() - wall, cpu)
    finally:
        vector.close()


def _rates(actions: int, wall_s: float, cpu_s: float) -> dict[str, float]:
    return {
        "actions": actions,
        "per_wall_s": round(actions / wall_s, 1),
        "per_cpu_s": round(actions / cpu_s, 1),
        "cpu_s": round(cpu_s, 2),
    }


def _reset_ms(repeats: int) -> dict[str, dict[str, float]]:
    env = PhoneEnv("general", "train", sim={"width": WIDTH, "height": HEIGHT})
    try:
        env.reset(seed=0)  # imports, the first render's caches
        out = {}
        for name, seeded in (("next", False), ("seeded", True)):
            times = []
            for k in range(repeats):
                started = time.perf_counter()
                env.reset(seed=k if seeded else None)
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            out[name] = {
                "p50": round(statistics.median(times), 1),
                "p90": round(times[min(len(times) - 1, int(len(times) * 0.9))], 1),
            }
        return out
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few actions only (smoke run)")
    args = parser.parse_args()
    actions = 80 if args.quick else 960
    own = anyio.run(_own_loop, actions)
    env = _vector_env(actions)
    result = {
        "benchmark": "gym_env",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "phones": PHONES,
        "phone": f"{WIDTH}x{HEIGHT}",
        "own_loop": own,
        "async_vector_env": env,
        "ratio": round(env["per_cpu_s"] / own["per_cpu_s"], 2),
        "reset_ms": _reset_ms(5 if args.quick else 40),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
