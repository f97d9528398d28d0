"""Does a worker slow to take weights stall the learner? Two hosts train one run; one is slow.

Two local worker hosts (``fast`` and ``slow``, ``--devices`` simulated phones each) train ``tiny`` for
``--seconds`` with ``distrl.train``, three times:

- ``baseline``: both hosts take weights at once;
- ``slow``: the ``slow`` host waits ``--delay`` seconds before taking in each weights message after its
  first (its ``python`` is ``distrl.testing.slow_link``'s relay before the real worker, as a link shaped to
  a low bandwidth would);
- ``slow, blocking publisher``: the same, with the trainer made to wait after each publication until
  every worker has acked it (at most ``timeouts.weight_push_s``), as the learner did before publishing
  moved off the update path. An emulation, to show what is avoided.

Per run: learner updates per minute (after the first update, from progress ticks each second), and the
policy lag p50 of each host's steps when they reached the learner. Goal: updates per minute with the
slow host ≥ 0.9 × baseline, the fast host's lag unchanged.

Prints one JSON line and writes ``benchmarks/figures/slow-worker.png``. Bounded: about 3 × (``--seconds``
+ 30) s. Run: ``python benchmarks/slow_worker.py`` (``--seconds 40`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from plotting import saved_figure

from distrl.config import Inventory, parse_inventory
from distrl.fleet import RunStats, board, train
from distrl.fleet.training import Trainer
from distrl.testing.slow_link import write_slow_python

FIGURES = Path(__file__).resolve().parent / "figures"


@dataclass
class Run:
    name: str
    ticks: list[tuple[float, int]] = field(default_factory=list)
    """(elapsed s, updates) at each progress tick."""
    stats: RunStats | None = None

    @property
    def updates_per_min(self) -> float:
        started = next((i for i, (_, updates) in enumerate(self.ticks) if updates >= 1), None)
        if started is None or len(self.ticks) - started < 2:
            return 0.0
        (t0, u0), (t1, u1) = self.ticks[started], self.ticks[-1]
        return 60 * (u1 - u0) / max(1e-9, t1 - t0)

    def lag(self, host: str) -> int | None:
        assert self.stats is not None
        return self.stats.host_lag_p50.get(host)


def _inventory(folder: Path, args: argparse.Namespace, *, delay_s: float) -> Inventory:
    slow = f'python = "{write_slow_python(folder, delay_s)}"\n' if delay_s else ""
    hosts = "".join(
        f'[[hosts]]\nname = "{name}"\naddress = "localhost"\n[hosts.devices]\nsim = {args.devices}\n{extra}'
        for name, extra in (("fast", ""), ("slow", slow))
    )
    text = f"""
[run]
name = "slow-worker"
output_dir = "{folder}"
seed = {args.seed}
duration_s = {args.seconds}
checkpoint_every = 0
checkpoint_every_s = 0
max_policy_lag = 1000

[learner]
batch_size = 4
min_new_trajectories = 2
micro_batch = 8

[policy]
max_new_tokens = 24

[sim]
width = 270
height = 600
latency = "off"
nuisances = false

{hosts}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


def _train(run: Run, inventory: Inventory, *, blocking: bool) -> Run:
    publish = Trainer._publish

    async def publish_and_wait(self: Trainer) -> None:
        await publish(self)
        await self._publisher.delivered(self._publisher.version)

    Trainer._publish = publish_and_wait if blocking else publish  # type: ignore[method-assign]
    try:
        run.stats = anyio.run(
            lambda: train(inventory, on_progress=lambda s: run.ticks.append((s.elapsed_s, s.updates)))
        )
    finally:
        Trainer._publish = publish  # type: ignore[method-assign]
    return run


def _plot(runs: list[Run], path: Path) -> None:
    with saved_figure(path, 2, size=(10, 4)) as (rate, lag):
        names = [run.name for run in runs]
        rate.bar(names, [run.updates_per_min for run in runs], color=["tab:blue", "tab:green", "tab:red"])
        rate.set_ylabel("learner updates per minute")
        rate.set_title("updates with one host slow to take weights")
        width = 0.38
        for offset, host in ((-width / 2, "fast"), (width / 2, "slow")):
            xs = [i + offset for i in range(len(runs))]
            lag.bar(xs, [run.lag(host) or 0 for run in runs], width, label=f"host {host}")
        lag.set_xticks(range(len(runs)), names)
        lag.set_ylabel("policy lag p50 (versions)")
        lag.set_title("staleness of each host's steps on arrival")
        lag.legend()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0, help="length of each training run")
    parser.add_argument("--delay", type=float, default=30.0, help="the slow host's delay per weights message")
    parser.add_argument("--devices", type=int, default=3, help="simulated phones per host")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=FIGURES / "slow-worker.png")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    board.PROGRESS_EVERY_S = 1.0
    runs = []
    with tempfile.TemporaryDirectory(prefix="distrl-slow-worker-") as tmp:
        for name, delay, blocking in (
            ("baseline", 0.0, False),
            ("slow", args.delay, False),
            ("slow, blocking publisher", args.delay, True),
        ):
            inventory = _inventory(Path(tmp) / name.replace(", ", "-").replace(" ", "-"), args, delay_s=delay)
            runs.append(_train(Run(name), inventory, blocking=blocking))
    _plot(runs, args.figure)
    baseline, slow, blocking_run = runs
    result = {
        "benchmark": "slow_worker",
        "machine": f"{platform.machine()}, python {platform.python_version()}",
        "seconds": args.seconds,
        "delay_s": args.delay,
        "devices_per_host": args.devices,
        "updates_per_min": {run.name: round(run.updates_per_min, 2) for run in runs},
        "ratio_slow_to_baseline": round(slow.updates_per_min / max(1e-9, baseline.updates_per_min), 3),
        "ratio_blocking_to_baseline": round(
            blocking_run.updates_per_min / max(1e-9, baseline.updates_per_min), 3
        ),
        "lag_p50": {run.name: {"fast": run.lag("fast"), "slow": run.lag("slow")} for run in runs},
        "episodes": {run.name: run.stats.completed if run.stats else 0 for run in runs},
        "figure": str(args.figure),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
