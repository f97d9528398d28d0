"""The paper's Table 1 in shape: each start, then every algorithm trained from it in the fleet, side by side.

Rows: each start (``--starts``, default ``tiny-weak``, the built-in start where failures dominate; also
``tiny-bc``), evaluated as it is; then, from it, every registered algorithm (``--algorithms``, default
all: ``a-ride``, ``digirl``, ``filtered-bc``, ``grpo``, ``ppo``, ``rloo``; or your own as
``module:Class``) and A-RIDE's two ablations, as the paper runs them: ``no-dper`` (uniform replay,
``priority_alpha = 0``) and ``no-retrace`` (one-step TD targets and advantages, both λ = 0; the paper's
code switches to V-trace); ``a-ride-positive``, A-RIDE as the paper's code runs it (advantages clamped at
0, so a failure teaches nothing); ``a-ride-filtered``, its actor on positive advantages in the quarter of
each batch highest in r − V_traj (the trajectories DigiRL's actor learns from); and ``--sync``
algorithms again in synchronous rounds (DigiRL's multi-machine system), for the time to a target. Each
run is ``python -m distrl run`` on the example inventory (``hosts.example.toml``: 32 sim phones,
calibrated latency) for ``--minutes`` of wall time per ``--seeds`` seed, with ``policy.model`` the start
and ``learner.algorithm`` the row's; group algorithms (``grpo``, ``rloo``) get ``[tasks] group_size = 8``
and batches of 16.

Each row is evaluated as the paper measures, and greedily too: every task of the ``general`` test and
train splits once (``--eval-episodes N``: a fixed sample of N), at temperature 1 and greedy, the same
tasks and sampling seed for every row, so a row's gain over its start is paired by task. A checkpoint
every ``--minutes``/6 is played on a fixed sample of ``--curve-episodes`` test tasks at temperature 1:
the curve of success over wall time, and the time each run first reaches its start + 15 points
(``--target``).

Every row measured is appended to ``OUT/rows.jsonl`` as it ends, so a table cut short (a crash, Ctrl-C) keeps
them; ``--resume`` goes on from them and says which it takes as measured; ``--table-only`` measures nothing
and gives the table of the rows there (the measured rows kept in the repository: the command in
docs/results/paper-table.md). Prints one JSON line (the settings, the table: each cell the mean over seeds
with its standard error over seeds, or over tasks for one seed, and the gain over the start; the paper's own
figures beside; the goals) and writes ``benchmarks/figures/paper-table.png`` (``--figure``): test success at
temperature 1 over wall time, a band over seeds per algorithm, the start dashed; ``--markdown PATH`` also
writes the table in Markdown, as the docs include it, and ``--markdown-runs PATH`` each run's line. The table,
figure and Markdown are drawn by ``paper_rows.py``. Bounded: per row ``--minutes`` and its evaluations (about
6 minutes on 2 cores for the full splits); the default table (1 start × 17 rows: 16 algorithms and variants,
and A-RIDE in sync rounds × 3 seeds × 30 minutes) takes about 31 hours. ``--quick`` is one seed of ``a-ride``
and ``grpo`` for 1 minute on 8 phones, 16 tasks a split (about 6 minutes). Run: ``python
benchmarks/paper_table.py --algorithms a-ride,digirl --seeds 0,1,2``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import anyio
import paper_rows
from paper_rows import CELLS, Record

from distrl.config import MOST_SEED, PRETRAINED, PolicySettings, cannot_create, parse_inventory
from distrl.errors import ConfigError, DistrlError
from distrl.fleet import train
from distrl.fleet.scoring import check_algorithm
from distrl.learner.algorithms import names, resolve
from distrl.local.evaluation import Evaluation
from distrl.local.play import evaluate
from distrl.policy import Policy

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures"
EXAMPLE = ROOT / "distrl" / "hosts.example.toml"
_FILTERED = {
    ("learner.a_ride", "advantages"): '"positive"',
    ("learner.a_ride", "trajectory_filter"): '"advantage"',
    ("learner.a_ride", "trajectory_top"): "0.25",
}
VARIANTS: dict[str, tuple[str, dict[tuple[str, str], str]]] = {
    "no-dper": ("a-ride", {("learner", "priority_alpha"): "0.0"}),
    "no-retrace": (
        "a-ride",
        {("learner.a_ride", "retrace_lambda"): "0.0", ("learner.a_ride", "advantage_lambda"): "0.0"},
    ),
    "a-ride-positive": ("a-ride", {("learner.a_ride", "advantages"): '"positive"'}),
    "a-ride-binary": ("a-ride", {("learner.a_ride", "advantages"): '"binary"'}),
    "a-ride-binary-kl-0.1": (
        "a-ride",
        {("learner.a_ride", "advantages"): '"binary"', ("learner", "kl_coef"): "0.1"},
    ),
    "a-ride-filtered": ("a-ride", _FILTERED),
    "a-ride-no-rho": ("a-ride", {("learner.a_ride", "rho_floor"): "1.0"}),
    "a-ride-filtered-no-rho": ("a-ride", {**_FILTERED, ("learner.a_ride", "rho_floor"): "1.0"}),
    "a-ride-filtered-binary-no-rho": (
        "a-ride",
        {**_FILTERED, ("learner.a_ride", "advantages"): '"binary"', ("learner.a_ride", "rho_floor"): "1.0"},
    ),
    "digirl-kl-0.1": ("digirl", {("learner", "kl_coef"): "0.1"}),
}
"""Variants of an algorithm, rows of their own: each its algorithm and the inventory lines it changes.
A-RIDE's: without one part (the paper's ablations), without learning from failures (as the paper's code
clamps its advantages), or weighing each step it keeps 1 (as the paper's code binarises them), with its
actor on the trajectories DigiRL's would learn from (positive advantages on the quarter of each batch
highest in r − V_traj, as the paper's code filters its buffer), or with ρ out of its actor's weights (each
step weighs its advantage alone, as DigiRL's weighs each step 1), alone or with the filter, and the
filtered actor without ρ weighing each step it keeps 1 whatever its advantage (``binary``, as DigiRL's
imitation does); binary weights under an anchor to the start ten times weaker (``kl_coef = 0.1``: at 1, a
step's log-likelihood weighed 1 against its KL to π_ref cannot lift a 30% action past about 66%); and
DigiRL under that weaker anchor, the like-for-like row to A-RIDE's."""
GROUP_SIZE = 8
"""Task group size for the algorithms that train on whole groups."""
PAPER = {
    "source": "DistRL (arXiv 2410.14803) Table 1, AitW General test, 128 tasks, mean ± std of 3 runs, T = 1",
    "AutoUI start": 40.6,
    "DigiRL, multi-machine sync": "61.2 ± 2.4",
    "DistRL (A-RIDE)": "73.2 ± 1.1",
    "ablations (Fig. 4b)": "no DPER ≈ −8 points, no Retrace ≈ −6 and unstable",
    "time to target (Fig. 3a)": "≈ 3× sooner async than sync",
}


@dataclass(frozen=True)
class Row:
    """One row to measure: a start, a variant of it (``start``: the start itself) in a mode, a seed."""

    start: str
    variant: str
    mode: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.start}/{self.variant}/{self.mode}/s{self.seed}"

    @property
    def run_name(self) -> str:
        """The run's name and folder: the key in the characters a run name may hold."""
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", self.key)

    @property
    def algorithm(self) -> str:
        return VARIANTS[self.variant][0] if self.variant in VARIANTS else self.variant


def _inventory_text(row: Row, folder: Path, args: argparse.Namespace) -> str:
    """The example inventory with this row's settings written into its own lines."""
    every = max(args.minutes * 10, 5.0)  # six points a run
    changes = {
        ("run", "name"): json.dumps(row.run_name),
        ("run", "mode"): json.dumps(row.mode),
        ("run", "output_dir"): json.dumps(str(folder)),
        ("run", "seed"): str(row.seed),
        ("run", "duration_s"): str(args.minutes * 60),
        ("run", "checkpoint_every"): "0",
        ("run", "checkpoint_every_s"): str(every),
        ("run", "keep_checkpoints"): "1000",
        ("run", "record_episodes"): "0",
        ("policy", "model"): json.dumps(row.start),
        ("learner", "algorithm"): json.dumps(row.algorithm),
        ("hosts.devices", "sim"): str(args.devices),
        ("sim", "time_scale"): str(args.time_scale),
        **(VARIANTS[row.variant][1] if row.variant in VARIANTS else {}),
    }
    if getattr(resolve(row.algorithm), "grouped", False) is True:
        changes |= {("tasks", "group_size"): str(GROUP_SIZE), ("learner", "batch_size"): "16"}
    text = EXAMPLE.read_text()
    for (table, key), value in changes.items():
        text = _set(text, table, key, value)
    return text


def _set(text: str, table: str, key: str, value: str) -> str:
    """``text`` with ``key = value`` in TOML table ``[table]`` (its first, or ``[[table]]``), comment kept."""
    header = re.search(rf"^\[\[?{re.escape(table)}\]?\]", text, re.MULTILINE)
    if header is None:
        raise SystemExit(f"paper_table: the example inventory has no [{table}]")
    end = re.compile(r"^\[", re.MULTILINE).search(text, header.end())
    line = re.compile(rf"^{re.escape(key)} *= *[^#\n]*?( *#.*)?$", re.MULTILINE)
    found = line.search(text, header.end(), end.start() if end else len(text))
    if found is None:
        raise SystemExit(f"paper_table: the example inventory's [{table}] has no {key}")
    return text[: found.start()] + f"{key} = {value}{found.group(1) or ''}" + text[found.end() :]


def _evaluations(model: str, adapter: str, args: argparse.Namespace) -> dict[str, Evaluation]:
    """Each cell's evaluation of ``model`` with ``adapter``: the same tasks and seed for every row."""
    policy = Policy.load(PolicySettings(model=model, adapter=adapter), seed=0)
    return {
        f"{split}@{temperature:g}": evaluate(
            policy, "general", split, episodes=args.eval_episodes or None, seed=0, temperature=temperature
        )
        for split, temperature in CELLS
    }


def _curve_point(model: str, adapter: str, args: argparse.Namespace) -> float:
    policy = Policy.load(PolicySettings(model=model, adapter=adapter), seed=0)
    return evaluate(
        policy, "general", "test", episodes=args.curve_episodes, seed=1, temperature=1.0
    ).success_rate


def _measure(row: Row, args: argparse.Namespace) -> Record:
    """Train (unless the row is the start), then evaluate: the row as written to ``rows.jsonl``."""
    record: Record = {"key": row.key, "start": row.start, "variant": row.variant, "mode": row.mode}
    record["seed"] = row.seed
    adapter = ""
    if row.variant == "start":
        record["curve"] = [[0.0, 0, _curve_point(row.start, "", args)]] if args.curve_episodes else []
    else:
        folder = (args.out / "runs").resolve()  # the inventory's output_dir, whatever the working folder
        _set_aside(folder / row.run_name, row)
        inventory = parse_inventory(_inventory_text(row, folder, args), source=str(folder / "hosts.toml"))
        began = time.time()
        stats = anyio.run(lambda: train(inventory))
        record |= {
            "episodes": stats.completed,
            "updates": stats.updates,
            "wall_s": round(time.time() - began),
        }
        checkpoints = sorted((folder / row.run_name / "checkpoints").glob("step-*"))
        if not checkpoints:
            raise SystemExit(f"paper_table: {row.key} wrote no checkpoint")
        adapter = str(checkpoints[-1] / "adapter")
        record["curve"] = [
            [
                round(c.stat().st_mtime - began, 1),
                int(c.name.removeprefix("step-")),
                _curve_point(row.start, str(c / "adapter"), args),
            ]
            for c in checkpoints
            if args.curve_episodes
        ]
    evaluations = _evaluations(row.start, adapter, args)
    record["cells"] = {
        cell: [[outcome.task.id, outcome.success] for outcome in result.outcomes]
        for cell, result in evaluations.items()
    }
    return record


def _set_aside(run: Path, row: Row) -> None:
    """Move ``run``, the folder of a run of ``row`` that did not end in its row (a crash, a stop), to
    ``<run>.stopped[-N]``: the row is measured again from its start, never from that run's checkpoints."""
    if not run.exists():
        return
    aside = run.with_name(f"{run.name}.stopped")
    number = 1
    while aside.exists():
        number += 1
        aside = run.with_name(f"{run.name}.stopped-{number}")
    run.rename(aside)
    print(
        f"paper_table: {row.key}: {run} holds a run that did not finish its row (set aside as {aside.name}):"
        " measured again from the start",
        file=sys.stderr,
    )


def _plan(args: argparse.Namespace) -> list[Row]:
    rows = []
    for start in args.starts:
        rows.append(Row(start, "start", "async", 0))  # evaluated once: it has no seed of its own
        for seed in args.seeds:
            rows += [Row(start, variant, "async", seed) for variant in args.algorithms]
            rows += [Row(start, variant, "sync", seed) for variant in args.sync]
    return rows


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--starts",
        default="tiny-weak",
        help=f"comma-separated, of {', '.join(PRETRAINED)} (default %(default)s)",
    )
    parser.add_argument(
        "--algorithms",
        default="",
        help="comma-separated algorithms and their variants (default: every registered one and "
        + ", ".join(VARIANTS)
        + ")",
    )
    parser.add_argument(
        "--sync",
        default="a-ride",
        help="algorithms also run in sync rounds, for the time to target ('' none; default %(default)s)",
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="wall time per run (default %(default)s)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated (default %(default)s)")
    parser.add_argument(
        "--devices", type=int, default=32, help="sim phones (default %(default)s, the example's)"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="[sim] time_scale: the phones' delays × this (default 1)",
    )
    parser.add_argument(
        "--eval-episodes", type=int, default=0, help="tasks per split and temperature (default 0: every task)"
    )
    parser.add_argument(
        "--curve-episodes",
        type=int,
        default=64,
        help="test tasks played at each checkpoint (default %(default)s; 0: no curve)",
    )
    parser.add_argument(
        "--target",
        type=float,
        default=15.0,
        help="points over the start for the time to target (default %(default)s)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "runs" / "paper-table", help="rows and runs (default %(default)s)"
    )
    parser.add_argument("--resume", action="store_true", help="go on from the rows already in OUT/rows.jsonl")
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="measure nothing: the table and figure of the rows OUT/rows.jsonl holds (rows it lacks named)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a-ride and grpo, one seed, 1 minute, 8 phones, 16 tasks a split"
    )
    parser.add_argument("--figure", type=Path, default=FIGURES / "paper-table.png")
    parser.add_argument(
        "--markdown",
        type=Path,
        help="also write the table here in Markdown: each row's gain over its start, as the docs show it",
    )
    parser.add_argument(
        "--markdown-runs",
        type=Path,
        help="also write each run here in Markdown, a line each: its success and gain, episodes, updates",
    )
    args = parser.parse_args()
    if args.quick:
        args.algorithms, args.sync, args.minutes, args.seeds = "a-ride,grpo", "", 1.0, "0"
        args.devices, args.eval_episodes, args.curve_episodes = 8, 16, 16
    known = [*names(), *VARIANTS]
    args.algorithms = [a for a in args.algorithms.split(",") if a] or known
    args.sync = [a for a in args.sync.split(",") if a]
    args.starts = [s for s in args.starts.split(",") if s]
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--seeds takes comma-separated integers, not {args.seeds!r}")
    if (wrong_seed := next((s for s in args.seeds if not 0 <= s <= MOST_SEED), None)) is not None:
        parser.error(f"--seeds are 0 to {MOST_SEED}, not {wrong_seed}")
    for option, values in (
        ("--seeds", args.seeds),
        ("--starts", args.starts),
        ("--algorithms", args.algorithms),
        ("--sync", args.sync),
    ):
        twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if twice is not None:  # a row measured twice would count as two seeds, or two rows of one name
            parser.error(f"{option} names {twice} twice")
    wrong = [a for a in [*args.algorithms, *args.sync] if a not in known and ":" not in a]
    if wrong:
        parser.error(f"no algorithm {wrong[0]!r}; the algorithms: {', '.join(known)}")
    if [s for s in args.starts if s not in PRETRAINED] or not args.starts:
        parser.error(f"--starts takes {', '.join(PRETRAINED)}, not {','.join(args.starts) or 'nothing'}")
    if not args.seeds:
        parser.error("--seeds names no seed")
    if not (args.minutes > 0 and math.isfinite(args.minutes)):
        parser.error(f"--minutes must be above 0, not {args.minutes:g}")
    if args.devices < 1 or args.eval_episodes < 0 or args.curve_episodes < 0:
        parser.error("--devices must be at least 1; --eval-episodes and --curve-episodes at least 0")
    if not (args.time_scale >= 0 and math.isfinite(args.time_scale)):
        parser.error(f"--time-scale must be a finite number at least 0, not {args.time_scale:g}")
    if not (args.target > 0 and math.isfinite(args.target)):
        parser.error(f"--target must be a finite number of points above 0, not {args.target:g}")
    args.out, args.figure = args.out.expanduser(), args.figure.expanduser()
    args.markdown = args.markdown and args.markdown.expanduser()
    args.markdown_runs = args.markdown_runs and args.markdown_runs.expanduser()
    if problem := cannot_create(args.out):
        parser.error(f"--out: {problem}")
    taken = {(args.out / "rows.jsonl").resolve(): "--out's rows.jsonl"}
    for option, path in (
        ("--figure", args.figure),
        ("--markdown", args.markdown),
        ("--markdown-runs", args.markdown_runs),
    ):
        if path is None:
            continue
        if problem := _cannot_write(path):  # found now, not after hours of rows
            parser.error(f"{option}: {problem}")
        if (other := taken.setdefault(path.resolve(), option)) != option:
            parser.error(f"{option} names the same file as {other}: {path}; one would write over the other")
    checked = set()
    for row in _plan(args):  # each kind of row's settings as its run reads them, before any row is measured
        if row.variant != "start" and (row.variant, row.mode) not in checked:
            checked.add((row.variant, row.mode))
            try:
                text = _inventory_text(row, args.out.resolve() / "runs", args)
                inventory = parse_inventory(text, source=f"{row.key}'s inventory")
                check_algorithm(inventory)  # its table, and built once, against the run's tasks
            except ConfigError as exc:
                parser.error(str(exc) if row.key in str(exc) else f"{row.key}: {exc}")
    return args


def _cannot_write(path: Path) -> str:
    """Why the file ``path`` could not be written once the rows are measured, in words; "" when it could."""
    if os.path.isdir(path):
        return f"{path} is a folder, not a file"
    if os.path.exists(path):  # written over in place: its folder's own bits do not matter
        return "" if os.access(path, os.W_OK) else f"{path} is not writable"
    problem = cannot_create(path.parent)
    return problem and f"{path}: {problem}"


def _refuse(message: str) -> NoReturn:
    print(f"paper_table: {message}", file=sys.stderr)
    sys.exit(2)


def _measured(rows_file: Path, settings: Record) -> dict[str, Record]:
    """The rows ``rows_file`` holds by key, once its first line says they were measured with ``settings``.
    A last line cut short (a crash while it was written) is set aside in ``rows.jsonl.cut`` and its row
    measured again; a last row whole but for its newline gets one; any other line that is not a row is
    refused, naming it."""
    text = rows_file.read_text()
    lines = text.splitlines()
    rows: list[Record] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError as exc:
            if number == len(lines) > 1 and not text.endswith("\n"):
                with rows_file.with_name(rows_file.name + ".cut").open("a") as cut:
                    cut.write(line + "\n")
                _replace(rows_file, "".join(f"{kept}\n" for kept in lines[:-1]))
                print(
                    f"paper_table: {rows_file}:{number} was cut short while it was written (kept in"
                    f" {rows_file.name}.cut): its row is measured again",
                    file=sys.stderr,
                )
                break
            _refuse(f"{rows_file}:{number} is not JSON ({exc}): mend or remove that line")
        if number == 1:
            if not isinstance(record, dict) or "settings" not in record:
                _refuse(f"{rows_file}:1 is not a table's settings line: {line[:80]}")
            if record["settings"] != settings:
                _refuse(
                    f"{rows_file} was measured with {line}; this asks {json.dumps({'settings': settings})}"
                )
        elif not isinstance(record, dict) or not isinstance(record.get("key"), str):
            _refuse(
                f"{rows_file}:{number} is not a row (a JSON object with its key): mend or remove that line"
            )
        else:
            rows.append(record)
    else:
        if text and not text.endswith("\n"):  # the last row whole, its newline cut off
            _replace(rows_file, text + "\n")
    return {record["key"]: record for record in rows}


def _replace(rows_file: Path, text: str) -> None:
    """``rows_file`` holds ``text``, written beside it first: a crash meanwhile leaves the old rows."""
    new = rows_file.with_name(rows_file.name + ".new")
    with new.open("w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(new, rows_file)


def main() -> None:
    args = _arguments()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    rows_file = args.out / "rows.jsonl"
    settings = {
        k: vars(args)[k] for k in ("minutes", "devices", "time_scale", "eval_episodes", "curve_episodes")
    }
    done: dict[str, Record] = {}
    if rows_file.exists() and rows_file.stat().st_size:
        if not (args.resume or args.table_only):
            _refuse(f"{rows_file} holds rows already: --resume to go on from them, or another --out")
        done = _measured(rows_file, settings)
    elif args.table_only:
        _refuse(f"--table-only: {rows_file} holds no rows to draw the table from")
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        rows_file.write_text(json.dumps({"settings": settings}) + "\n")
    began = time.monotonic()
    plan = _plan(args)
    if args.table_only:
        if missing := [row.key for row in plan if row.key not in done]:
            print(f"paper_table: not measured, left out: {', '.join(missing)}", file=sys.stderr)
        plan = [row for row in plan if row.key in done]
        if not plan:
            _refuse(f"--table-only: {rows_file} holds none of the rows asked for")
    for number, row in enumerate(plan, 1):
        if row.key in done:
            if not args.table_only:  # there every row drawn is measured already
                print(
                    f"paper_table: {row.key} measured already (in {rows_file}): not measured again",
                    file=sys.stderr,
                )
            continue
        print(f"paper_table: row {number}/{len(plan)}: {row.key} ...", file=sys.stderr)
        try:
            record = _measure(row, args)
        except DistrlError as exc:  # the rows measured so far are on disk already
            print(f"paper_table: row {number}/{len(plan)}, {row.key}, failed: {exc}", file=sys.stderr)
            sys.exit(
                f"paper_table: the {len(done)} row(s) measured are in {rows_file}; --resume goes on from them"
            )
        with rows_file.open("a") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
            os.fsync(out.fileno())
        done[row.key] = record
    order = {("async", name): place for place, name in enumerate(["start", *args.algorithms])}
    order |= {("sync", name): place for place, name in enumerate(args.sync)}
    rows = sorted(  # measured seed by seed; shown row by row, in the order asked
        (done[row.key] for row in plan),
        key=lambda r: (
            args.starts.index(r["start"]),
            r["mode"] != "async",
            order[r["mode"], r["variant"]],
            r["seed"],
        ),
    )
    cells = paper_rows.table(rows, args.target)
    paper_rows.plot(rows, args.figure)
    for path, text in (
        (args.markdown, paper_rows.markdown(cells, args.minutes, args.target)),
        (args.markdown_runs, paper_rows.runs_markdown(rows, args.minutes)),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    result = {
        "benchmark": "paper_table",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "settings": settings | {"seeds": args.seeds, "target_points": args.target},
        "table": cells,
        "goals": paper_rows.goals(cells, rows, args.starts),
        "paper": PAPER,
        "rows_file": str(rows_file),
        "figure": str(args.figure),
        "wall_s": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
