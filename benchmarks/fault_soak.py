"""A training run under faults: does distrl keep collecting, lose nothing, and get every device back?

``train`` runs ``tiny`` on 2 local worker hosts of ``--devices`` / 2 simulated phones each, for
``--seconds``, once per fault rate in ``--rates``. A rate r is the chance per device operation of a
fault, split evenly between a hang (the operation times out), a crash (down until the next reset), the
device going offline and an all-white screenshot. In the runs with faults, one worker process is killed
(SIGKILL) every ``--kill-every`` seconds, at random, until the last quarter of the run (at least 20 s),
which shows whether everything came back; its host is restarted by the learner.

Per run: episodes per minute, against the fault-free run (goal at 5%: ≥ 0.8), and the whole episodes
among them (not cut short by a fault: what the learner trains on); the episodes cut short by a device
(each one a device that failed and was reset); devices retired and hosts up at the end (goal:
none retired, every host up); and the accounting: every task handed out is completed, failed and
re-queued, or still running, with none lost.

Prints one JSON line and writes ``benchmarks/figures/fault-soak.png``. Bounded: about
len(rates) × (``--seconds`` + 30) s. Run: ``python benchmarks/fault_soak.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import tempfile
from pathlib import Path
from typing import Any

import anyio
from plotting import saved_figure

from distrl.config import parse_inventory
from distrl.fleet import RunStats, train

FIGURES = Path(__file__).resolve().parent / "figures"


def _inventory(folder: Path, rate: float, devices: int, seconds: float) -> str:
    hosts = "".join(
        f'[[hosts]]\nname = "w{i}"\naddress = "localhost"\ndevices = {{ sim = {devices // 2} }}\n'
        for i in range(2)
    )
    each = rate / 4
    return f"""
[run]
name = "soak"
output_dir = "{folder}"
duration_s = {seconds}
max_restarts = 20
checkpoint_every = 0

[timeouts]
device_observe_s = 3
device_act_s = 3
device_reset_s = 5
device_boot_s = 10

[learner]
batch_size = 4
min_new_trajectories = 4
micro_batch = 8

[policy]
max_new_tokens = 24
max_wait_s = 0.05

[sim]
width = 270
height = 600
latency = "off"
nuisances = false
hang_rate = {each}
crash_rate = {each}
offline_rate = {each}
white_frame_rate = {each}

{hosts}
"""


def _workers() -> list[int]:
    """The pids of this process's worker children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"worker" in argv:
            found.append(int(entry.name))
    return found


async def _soak(rate: float, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    last: list[RunStats] = []
    kills = 0
    with tempfile.TemporaryDirectory() as folder:
        inventory = parse_inventory(
            _inventory(Path(folder), rate, args.devices, args.seconds), source=f"{folder}/hosts.toml"
        )
        async with anyio.create_task_group() as tg:

            async def killer() -> None:
                nonlocal kills
                quiet_s = max(20.0, args.seconds / 4)  # the end of the run shows whether all came back
                while True:
                    await anyio.sleep(args.kill_every)
                    if anyio.current_time() - started > args.seconds - quiet_s:
                        return
                    pids = _workers()
                    if pids:
                        os.kill(rng.choice(pids), signal.SIGKILL)
                        kills += 1

            started = anyio.current_time()
            if rate > 0 and args.kill_every > 0:
                tg.start_soon(killer)
            stats = await train(inventory, on_progress=last.append)
            tg.cancel_scope.cancel()
    running = last[-2] if len(last) >= 2 else stats  # the last tick before the shutdown
    failed = sum(stats.failed.values())
    return {
        "rate": rate,
        "workers_killed": kills,
        "episodes": stats.completed,
        "episodes_per_min": 60 * stats.completed / max(stats.elapsed_s, 1e-9),
        "whole_episodes_per_min": 60 * (stats.completed - stats.cut_short) / max(stats.elapsed_s, 1e-9),
        "cut_short_by_device": stats.device_errors,
        "failed_and_requeued": failed,
        "failed": dict(stats.failed),
        "host_restarts": stats.restarts,
        "retired": stats.retired,
        "hosts_up_at_end": running.hosts_up,
        "hosts": stats.hosts,
        "handed_out": stats.handed_out,
        "in_flight_at_stop": stats.in_flight,
        "accounted": stats.handed_out == stats.completed + failed + stats.in_flight + stats.judging
        and stats.requeued == failed,
        "updates": stats.updates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0, help="training time per run (default 120)")
    parser.add_argument(
        "--rates", default="0,0.05,0.2", help="fault rates per operation (default 0,0.05,0.2)"
    )
    parser.add_argument("--devices", type=int, default=8, help="simulated phones, on 2 hosts (default 8)")
    parser.add_argument(
        "--kill-every", type=float, default=30.0, help="seconds between worker kills (0: none)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "fault-soak.png")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    rng = random.Random(args.seed)
    rates = [float(rate) for rate in args.rates.split(",")]
    runs = [anyio.run(_soak, rate, args, rng) for rate in rates]
    clean = next((run for run in runs if run["rate"] == 0), None)
    for run in runs:
        run["of_fault_free"] = run["episodes_per_min"] / clean["episodes_per_min"] if clean else None
        run["whole_of_fault_free"] = (
            run["whole_episodes_per_min"] / clean["whole_episodes_per_min"] if clean else None
        )
    at_5 = next((run for run in runs if abs(run["rate"] - 0.05) < 1e-9), None)
    result = {
        "benchmark": "fault_soak",
        "seconds": args.seconds,
        "devices": args.devices,
        "runs": runs,
        "goal_met_at_5_percent": bool(
            at_5
            and at_5["of_fault_free"] is not None
            and at_5["of_fault_free"] >= 0.8
            and at_5["retired"] == 0
            and at_5["hosts_up_at_end"] == at_5["hosts"]
        ),
        "all_accounted": all(run["accounted"] for run in runs),
    }
    print(json.dumps(result))
    _plot(runs, args.devices, args.figure)


def _plot(runs: list[dict[str, Any]], devices: int, figure: Path) -> None:
    """Whole and cut-short episodes per minute at each fault rate, against 80% of the fault-free rate."""
    clean = next((run for run in runs if run["rate"] == 0), None)
    with saved_figure(figure, size=(5.8, 3.4)) as axes:
        labels = [f"{run['rate']:.0%}" for run in runs]
        whole = [run["whole_episodes_per_min"] for run in runs]
        cut = [run["episodes_per_min"] - run["whole_episodes_per_min"] for run in runs]
        axes.bar(labels, whole, color="#4a7", label="whole episodes")
        axes.bar(labels, cut, bottom=whole, color="#bbb", label="cut short by a fault")
        if clean:
            axes.axhline(
                0.8 * clean["episodes_per_min"], color="#c44", linestyle="--", label="80% of fault-free"
            )
        for index, run in enumerate(runs):
            axes.text(
                index, run["episodes_per_min"], f"{run['workers_killed']} kills", ha="center", va="bottom"
            )
        axes.legend(loc="upper left", fontsize=8)
        axes.set_xlabel("fault rate per device operation")
        axes.set_ylabel("episodes per minute")
        axes.set_title(f"training under faults, {devices} sim phones")


if __name__ == "__main__":
    main()
