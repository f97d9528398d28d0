"""The whole benchmark set in one command, bounded by 60 minutes on 2 cores.

Runs every program of ``benchmarks/`` in turn, one at a time (they measure this machine's cores and
would disturb each other), each as ``python benchmarks/<name>.py <arguments>`` under a time limit. The
arguments are each program's own defaults except where a shorter run is needed to fit the hour; those
are marked ``cut`` below and in the output, and the README's table gives the full runs' figures. The
limits add up to 60 minutes, so the whole set stops within the hour even where a program overruns (it
is then stopped and reported as ``timed out``). ``pretrain_tiny.py`` is left out: its product,
``tiny-bc``, ships with distrl.

Every program prints one JSON line; they are written, with the command, wall time and exit status, to
``--out`` (default ``benchmarks/results.jsonl``), one line each, and a summary goes to stderr. The
figures go to ``benchmarks/figures/`` as each program writes them. Run: ``python benchmarks/run_all.py``
(``--only weight_diff,wire_throughput`` for some of them; ``--list`` to see the plan).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUDGET_S = 60 * 60


@dataclass(frozen=True)
class Program:
    name: str
    arguments: tuple[str, ...] = ()
    limit_s: int = 0
    """Its time limit; 0: what is left of the hour."""
    cut: str = ""
    """How this run is shorter than the program's default, if it is; its figure then goes to ``CUT``."""


CUT = "benchmarks/figures/run_all"
"""Where the cut runs' figures go, so that the README's figures (full runs) stay as they are."""
PLAN = (
    Program("wire_throughput", limit_s=60),
    Program("weight_diff", limit_s=120),
    Program("sim_throughput", limit_s=150),
    Program("gym_env", limit_s=45),
    Program(
        "emulator_reset",
        ("--time-scale", "0.1", "--repeats", "2", "--figure", f"{CUT}/emulator_reset.png"),
        60,
        "latencies at a tenth of a real emulator's, 2 reboots and relaunches, not 5",
    ),
    Program("inference_throughput", ("--model", "tiny-bc", "--quick"), 240, "batch sizes 1 and 4 only"),
    Program("learner_gpu", limit_s=60),
    Program(
        "screen_preprocessing",
        ("--trajectories", "2", "--repeats", "1"),
        25,
        "2 episodes' screens, one timed run",
    ),
    Program("inference_gpu", limit_s=25),  # without a CUDA GPU it says so and stops
    Program(
        "learner_ranks",
        ("--episodes", "8", "--turns", "1", "--updates", "2", "--figure", f"{CUT}/learner-ranks.png"),
        90,
        "8 episodes, 1 turn of 2 updates, not 16 and 3 of 4",
    ),
    Program(
        "judge_cost",
        ("--episodes", "16", "--delay", "0.5", "--figure", f"{CUT}/judge-latency.png"),
        45,
        "16 episodes, not 64",
    ),  # without a CUDA GPU it says so and stops
    Program(
        "weight_sync", ("--updates", "2", "--figure", f"{CUT}/weight-sync.png"), 480, "2 timed updates, not 3"
    ),
    Program(
        "fleet_scaling",
        ("--seconds", "30", "--single-seconds", "120", "--figure", f"{CUT}/fleet-scaling.png"),
        540,
        "30 s windows, not 45",
    ),
    Program(
        "collection_async_sync",
        ("--sizes", "8,32,128", "--figure", f"{CUT}/collection-async-sync.png"),
        975,
        "8 to 128 phones, not 512",
    ),
    Program(
        "task_groups",
        ("--episodes", "64", "--repeats", "1", "--figure", f"{CUT}/task-groups.png"),
        45,
        "64 episodes, one measurement per size, not 256 and 3",
    ),
    Program(
        "slow_worker",
        ("--seconds", "25", "--delay", "15", "--figure", f"{CUT}/slow-worker.png"),
        150,
        "25 s runs with a 15 s delay, not 120 s and 30 s",
    ),
    Program(
        "fault_soak",
        ("--seconds", "30", "--rates", "0,0.05", "--kill-every", "10", "--figure", f"{CUT}/fault-soak.png"),
        120,
        "30 s runs at 0% and 5%, not 120 s at 0%, 5% and 20%",
    ),
    Program(
        "time_to_success",
        ("--minutes", "1", "--every", "50", "--figure", f"{CUT}/time-to-success.png"),
        360,
        "1 minute per mode, not 10",
    ),
    Program(
        "learner_algorithms",
        (
            "--minutes",
            "1",
            "--algorithms",
            "a-ride,digirl,no-dper,no-retrace,a-ride-entropy",
            "--seeds",
            "0,1",
            "--no-test",
            "--figure",
            "run_all/learner-ablations.png",
        ),
        cut="the ablations, 1 minute per run, train success only",
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=HERE / "results.jsonl", help="(default %(default)s)")
    parser.add_argument("--only", default="", help="comma-separated program names (default: all)")
    parser.add_argument("--list", action="store_true", help="print the plan and stop")
    args = parser.parse_args()
    chosen = [p for p in PLAN if not args.only or p.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {p.name for p in PLAN}
    if unknown:
        parser.error(
            f"unknown program {sorted(unknown)[0]!r}; the programs: {', '.join(p.name for p in PLAN)}"
        )
    fixed = sum(p.limit_s for p in PLAN)
    if args.list:
        for p in chosen:
            shown = f"{p.limit_s / 60:4.1f} min" if p.limit_s else f"≥{(BUDGET_S - fixed) / 60:3.1f} min"
            note = f"  (cut: {p.cut})" if p.cut else ""
            print(f"{shown}  python benchmarks/{p.name}.py {' '.join(p.arguments)}{note}")
        return
    started = time.monotonic()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for program in chosen:
            limit = program.limit_s or int(BUDGET_S - (time.monotonic() - started))
            if not program.limit_s and limit < 120:
                print(f"skipped {program.name}: the hour is spent", file=sys.stderr)
                out.write(
                    json.dumps({"program": program.name, "status": "skipped: the hour is spent"}) + "\n"
                )
                continue
            command = [sys.executable, str(HERE / f"{program.name}.py"), *program.arguments]
            print(f"[{(time.monotonic() - started) / 60:5.1f} min] {' '.join(command[1:])}", file=sys.stderr)
            began = time.monotonic()
            try:
                done = subprocess.run(
                    command, stdout=subprocess.PIPE, text=True, timeout=limit, cwd=HERE.parent
                )
                status, lines = ("ok" if done.returncode == 0 else f"exit {done.returncode}"), done.stdout
            except subprocess.TimeoutExpired as exc:
                status = f"timed out after {limit} s"
                lines = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            result = next((line for line in reversed(lines.splitlines()) if line.startswith("{")), None)
            record = {
                "program": program.name,
                "command": f"python benchmarks/{program.name}.py {' '.join(program.arguments)}".strip(),
                "cut": program.cut,
                "status": status,
                "wall_s": round(time.monotonic() - began, 1),
                "result": json.loads(result) if result else None,
            }
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"           {status}, {record['wall_s']:.0f} s", file=sys.stderr)
    total = time.monotonic() - started
    print(
        json.dumps(
            {"benchmark": "run_all", "programs": len(chosen), "wall_s": round(total, 1), "out": str(args.out)}
        )
    )


if __name__ == "__main__":
    main()
