"""What a VLM judge costs the learner, and what ``judge-eval`` reports of one.

Plays ``--episodes`` simulated episodes as ``python -m distrl judge-eval`` does (half by the expert with
mistakes, half by ``tiny``), then asks a test judge about each through ``distrl.local.judge_eval.calibrate``:
the loopback OpenAI-compatible server of the tests (``distrl.testing.judge_server``), run as a separate
process so that only the learner's side is measured here. The test judge answers from the sim's truth,
wrong for ``--flip`` of the episodes (a fallible judge, so that the figures have something to find), and
after ``--delay`` seconds (a VLM's answer time).

Reports judge-eval's figures (accuracy, precision, recall, the confusion table), then the cost: this
process's CPU per episode (building the prompt, base64 of the screens, HTTP, parsing), and the time an
episode waits for its score beyond the judge's own answer time. A second pass over the same episodes
shows the cache: a re-evaluation sends nothing.

Prints one JSON line and writes ``benchmarks/figures/judge-latency.png``. Bounded: about 30 s plus
``--episodes`` × ``--delay`` / 8. Run: ``python benchmarks/judge_cost.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import PolicySettings
from distrl.local.judge_eval import Calibration, calibrate, calibration_episodes
from distrl.policy import Policy
from distrl.records import Trajectory
from distrl.tasks.judge import Judge

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures"


def _final(trajectory: Trajectory) -> bytes:
    """The screen the judge sees last (as ``distrl.tasks.judge`` picks it)."""
    final = trajectory.final_observation
    return (final or trajectory.steps[-1].observation).screenshot


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--flip", type=float, default=0.1, help="share of the test judge's wrong verdicts")
    parser.add_argument("--delay", type=float, default=1.0, help="the test judge's answer time, seconds")
    parser.add_argument("--concurrency", type=int, default=8, help="[judge] max_concurrency")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "judge-latency.png")
    args = parser.parse_args()

    policy = Policy.load(PolicySettings(model="tiny"), device="cpu", seed=args.seed)
    episodes = calibration_episodes(
        policy, suite="general", split="test", episodes=args.episodes, seed=args.seed
    )
    with tempfile.TemporaryDirectory() as folder:
        truth = Path(folder) / "truth.json"
        truth.write_text(
            json.dumps({hashlib.sha256(_final(t)).hexdigest(): bool(t.success) for t in episodes})
        )
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", "distrl.testing.judge_server", "--truth", str(truth)),
                *("--flip", str(args.flip), "--delay", str(args.delay)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()

            async def twice() -> tuple[Calibration, Calibration]:
                judge = Judge(
                    base_url=url,
                    model="test-judge",
                    max_concurrency=args.concurrency,
                    cache_dir=Path(folder) / "cache",
                )
                async with judge:
                    return await calibrate(judge, episodes), await calibrate(judge, episodes)

            first, again = anyio.run(twice)
        finally:
            server.terminate()
            server.wait(timeout=10)
    result = {
        "benchmark": "judge_cost",
        "episodes": len(episodes),
        "true_successes": sum(bool(t.success) for t in episodes),
        "judge_delay_s": args.delay,
        "judge_flip": args.flip,
        "concurrency": args.concurrency,
        "judge_eval": first.as_json(),
        "added_p50_s": first.latency_p50_s - args.delay,
        "added_p95_s": first.latency_p95_s - args.delay,
        "cached_pass": {"requests": again.requests, "cache_hits": again.cache_hits, "wall_s": again.wall_s},
    }
    print(json.dumps(result))
    print(first.report(), file=sys.stderr)
    with saved_figure(args.figure, 2, size=(9, 3.2)) as (confusion, cost):
        cells = [[first.true_positive, first.false_negative], [first.false_positive, first.true_negative]]
        confusion.imshow(cells, cmap="Blues")
        for row in range(2):
            for column in range(2):
                confusion.text(column, row, str(cells[row][column]), ha="center", va="center")
        confusion.set_xticks([0, 1], ["judge: success", "judge: failure"])
        confusion.set_yticks([0, 1], ["truly success", "truly failure"])
        confusion.set_title(f"test judge, {first.accuracy:.0%} accurate")
        names = ["answer time", "added p50", "added p95"]
        values = [args.delay, result["added_p50_s"], result["added_p95_s"]]
        cost.bar(names, values, color=["#bbb", "#4a7", "#4a7"])
        cost.set_ylabel("seconds per episode")
        cost.set_title(f"{1000 * first.cpu_s / max(len(episodes), 1):.1f} ms of learner CPU per episode")


if __name__ == "__main__":
    main()
