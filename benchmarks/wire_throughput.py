"""Control-plane cost: how fast frames are encoded, decoded and carried, and a real worker's round trip.

Prints one JSON line:
- ``heartbeat_codec_us``: encode + decode of one heartbeat frame, microseconds;
- ``trajectory_codec_mb_s``: encode + decode of a 10-step trajectory with 300 KB screenshots, MB/s;
- ``tcp_heartbeats_per_s`` / ``tcp_trajectory_mb_s``: the same over a ``FrameStream`` on loopback TCP;
- ``worker_rtt_p50_ms`` / ``worker_rtt_p99_ms``: heartbeat round trips through a real
  ``python -m distrl worker`` subprocess (the learner's view of a local host), and its start-up time.

Bounded: fixed counts, a few seconds on 2 cores. Run: ``python benchmarks/wire_throughput.py``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time

import anyio

from distrl.config import parse_inventory
from distrl.fleet import probe_host
from distrl.records import Action, ActionType, EndReason, Observation, Step, Task, Trajectory
from distrl.wire import FrameStream, Heartbeat, Message, TrajectoryReport, decode, encode

SCREENSHOT_BYTES = 300_000
STEPS = 10


def _trajectory() -> Trajectory:
    screen = Observation(screenshot=os.urandom(SCREENSHOT_BYTES), width=1080, height=2400)
    tap = Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.5), lift=(0.5, 0.5))
    steps = tuple(
        Step(
            index=i,
            observation=screen,
            output='Action Decision: "action_type": "DUAL_POINT"',
            action=tap,
            policy_version=3,
            behaviour_logprob=-2.5,
        )
        for i in range(STEPS)
    )
    return Trajectory(
        id="t",
        task=Task(id="general/0", suite="general", goal="Open the clock"),
        host="local",
        device="sim-0",
        steps=steps,
        final_observation=screen,
        end_reason=EndReason.COMPLETE,
    )


def _codec_seconds(message: Message, repeats: int) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        decode(encode(message))
    return (time.perf_counter() - started) / repeats


async def _over_tcp(messages: list[Message]) -> float:
    """Seconds to send ``messages`` through one loopback TCP connection and decode them all."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    all_received = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        received = 0
        async with FrameStream(stream) as frames:
            async for _ in frames:
                received += 1
                if received == len(messages):
                    all_received.set()

    with anyio.fail_after(60):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            started = time.perf_counter()
            async with FrameStream(await anyio.connect_tcp("127.0.0.1", port)) as frames:
                for message in messages:
                    await frames.send(message)
            await all_received.wait()
            elapsed = time.perf_counter() - started
            tg.cancel_scope.cancel()
    return elapsed


async def _worker_round_trips(count: int) -> tuple[float, list[float]]:
    inventory = parse_inventory('[[hosts]]\nname = "bench"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    report = await probe_host(inventory.hosts[0], inventory.timeouts, heartbeats=count)
    return report.startup_s, list(report.rtt_ms)


async def main() -> dict[str, object]:
    trajectory = TrajectoryReport(trajectory=_trajectory())
    trajectory_mb = len(encode(trajectory)) / 1e6
    heartbeat = Heartbeat(seq=1, sent_at_s=time.time())
    tcp_beats = await _over_tcp([Heartbeat(id=i, seq=i, sent_at_s=0.0) for i in range(20_000)])
    tcp_trajectories = await _over_tcp([trajectory] * 50)
    startup_s, rtts = await _worker_round_trips(200)
    rtts.sort()
    return {
        "benchmark": "wire_throughput",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "heartbeat_codec_us": round(1e6 * _codec_seconds(heartbeat, 20_000), 2),
        "trajectory_frame_mb": round(trajectory_mb, 2),
        "trajectory_codec_mb_s": round(trajectory_mb / _codec_seconds(trajectory, 50), 1),
        "tcp_heartbeats_per_s": round(20_000 / tcp_beats),
        "tcp_trajectory_mb_s": round(50 * trajectory_mb / tcp_trajectories, 1),
        "worker_startup_s": round(startup_s, 3),
        "worker_rtt_p50_ms": round(statistics.median(rtts), 3),
        "worker_rtt_p99_ms": round(rtts[int(0.99 * (len(rtts) - 1))], 3),
    }


if __name__ == "__main__":
    print(json.dumps(anyio.run(main)))
    sys.exit(0)
