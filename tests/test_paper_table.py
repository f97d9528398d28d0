"""``benchmarks/paper_table.py``: bad settings end in one line; a table cut short by a crash keeps the rows
it measured, and ``--resume`` goes on from them without measuring any again."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from support import bound_folders

from distrl.config import parse_inventory
from distrl.errors import DistrlError
from distrl.learner.algorithms import configure

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "benchmarks" / "paper_table.py"

BROKEN = """
from distrl.learner.algorithms.filtered_bc import FilteredBC


class Broken(FilteredBC):
    name = "broken"

    def plan(self, batch):
        raise RuntimeError("this algorithm breaks at its first update")
"""


def _table(*arguments: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROGRAM), *arguments], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def program() -> Iterator[ModuleType]:
    """``paper_table`` imported, for the cases that end before any row is measured: run in this process."""
    spec = importlib.util.spec_from_file_location("paper_table", PROGRAM)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["paper_table"] = module  # where its dataclasses find their module
    sys.path.insert(0, str(PROGRAM.parent))  # it imports its neighbours, paper_rows and plotting
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(PROGRAM.parent))
    yield module
    del sys.modules["paper_table"]


@pytest.fixture
def here(
    program: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[object, str, str]]:
    """``paper_table ARGUMENTS`` run in ``tmp_path``, in this process, to its end, with no row measured
    (measuring one fails the test): its exit status (0 when it ended without one), stdout and stderr."""

    def measure(row: object, args: object) -> None:
        raise AssertionError(f"{row} was measured: a refusal or a row measured already was to come first")

    def run(*arguments: str) -> tuple[object, str, str]:
        monkeypatch.setattr(program, "_measure", measure)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "argv", [str(PROGRAM), *arguments])
        try:
            program.main()
            status: object = 0
        except SystemExit as ended:
            status = ended.code
        said = capsys.readouterr()
        return status, said.out, said.err

    return run


@pytest.fixture
def refused(here: Callable[..., tuple[object, str, str]]) -> Callable[..., tuple[object, str]]:
    """``paper_table ARGUMENTS`` as ``here`` runs it, for a refusal: its exit status and stderr."""

    def run(*arguments: str) -> tuple[object, str]:
        status, _, err = here(*arguments)
        assert status != 0, "paper_table ran to its end: a refusal was expected"
        return status, err

    return run


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--algorithms", "a-ride,sac"], "no algorithm 'sac'; the algorithms: a-ride, digirl"),
        (["--minutes", "0"], "--minutes must be above 0, not 0"),
        (["--minutes", "nan"], "--minutes must be above 0, not nan"),
        (["--seeds", ""], "--seeds names no seed"),
        (["--seeds", "1,x"], "--seeds takes comma-separated integers, not '1,x'"),
        (["--starts", "tiny"], "--starts takes tiny-bc, tiny-weak, not tiny"),
        (["--sync", "digirl2"], "no algorithm 'digirl2'"),
        (["--seeds=-1"], "--seeds are 0 to 9223372036854775807, not -1"),
        (
            ["--seeds", "0,9223372036854775808"],
            "--seeds are 0 to 9223372036854775807, not 9223372036854775808",
        ),
        (["--seeds", "0,1,0"], "--seeds names 0 twice"),
        (["--algorithms", "grpo,ppo,grpo"], "--algorithms names grpo twice"),
        (["--sync", "a-ride,a-ride"], "--sync names a-ride twice"),
        (["--target", "nan"], "--target must be a finite number of points above 0, not nan"),
        (["--time-scale", "inf"], "--time-scale must be a finite number at least 0, not inf"),
        (["--algorithms", "nosuch:Algo"], "learner.algorithm: 'nosuch:Algo' does not load"),
        (["--algorithms", "json:dumps"], "learner.algorithm: 'json:dumps' is not an algorithm"),
    ],
)
def test_bad_settings_end_in_one_line(
    refused: Callable[..., tuple[object, str]], tmp_path: Path, arguments: list[str], said: str
) -> None:
    status, err = refused(*arguments, "--out", "table")
    assert status == 2
    assert said in err.strip().splitlines()[-1]  # the last line says it, after argparse's usage
    assert not (tmp_path / "table").exists()  # nothing written


def test_an_algorithm_that_fails_to_start_is_refused_before_any_row(
    refused: Callable[..., tuple[object, str]], tmp_path: Path
) -> None:
    """Found by building it, as ``distrl check`` does: its inventory alone reads well."""
    (tmp_path / "unstartable.py").write_text(
        "from distrl.learner.algorithms.filtered_bc import FilteredBC\n"
        "class Algo(FilteredBC):\n"
        "    name = 'unstartable'\n"
        "    def __init__(self, settings, *, features):\n"
        "        raise RuntimeError('no such GPU kernel')\n"
    )
    status, err = refused("--algorithms", "unstartable:Algo", "--out", "table")
    assert status == 2
    assert "failed to start (RuntimeError: no such GPU kernel" in err.strip().splitlines()[-1]
    assert not (tmp_path / "table").exists()


@pytest.mark.parametrize(
    ("variant", "changed"),
    [
        ("no-dper", {"priority_alpha": 0.0}),
        ("no-retrace", {"a_ride.retrace_lambda": 0.0, "a_ride.advantage_lambda": 0.0}),
        ("a-ride-positive", {"a_ride.advantages": "positive"}),
        ("a-ride-binary", {"a_ride.advantages": "binary"}),
        ("a-ride-binary-kl-0.1", {"a_ride.advantages": "binary", "kl_coef": 0.1}),
        ("digirl-kl-0.1", {"kl_coef": 0.1}),
        (
            "a-ride-filtered",
            {
                "a_ride.advantages": "positive",
                "a_ride.trajectory_filter": "advantage",
                "a_ride.trajectory_top": 0.25,
            },
        ),
        ("a-ride-no-rho", {"a_ride.rho_floor": 1.0}),
        (
            "a-ride-filtered-no-rho",
            {
                "a_ride.advantages": "positive",
                "a_ride.trajectory_filter": "advantage",
                "a_ride.trajectory_top": 0.25,
                "a_ride.rho_floor": 1.0,
            },
        ),
        (
            "a-ride-filtered-binary-no-rho",
            {
                "a_ride.advantages": "binary",
                "a_ride.trajectory_filter": "advantage",
                "a_ride.trajectory_top": 0.25,
                "a_ride.rho_floor": 1.0,
            },
        ),
    ],
)
def test_each_variant_runs_its_algorithm_with_its_own_changes(
    program: ModuleType, tmp_path: Path, variant: str, changed: dict[str, object]
) -> None:
    """The inventory of each variant's row: its algorithm, the example's settings but the variant's own."""
    args = argparse.Namespace(minutes=1.0, devices=4, time_scale=1.0)
    base = "digirl" if variant.startswith("digirl") else "a-ride"

    def read(variant: str) -> dict[str, object]:
        row = program.Row("tiny-weak", variant, "async", 0)
        learner = parse_inventory(program._inventory_text(row, tmp_path, args), source=variant).learner
        cls, settings = configure(learner)
        assert cls.name == base
        own = {f"{base.replace('-', '_')}.{k}": v for k, v in vars(settings).items()}
        return {**own, **{k: v for k, v in vars(learner).items() if k != "tables"}}

    ablated, plain = read(variant), read(base)
    assert {k: v for k, v in ablated.items() if plain[k] != v} == changed


def test_table_only_measures_nothing_and_names_the_rows_it_lacks(
    program: ModuleType,
    here: Callable[..., tuple[object, str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = ["general/a/0", "general/b/0", "general/c/0", "general/d/0"]

    def measure(row: object, args: object) -> dict[str, object]:  # a row as _measure records it
        wins = {"start": 1, "a-ride": 2}.get(row.variant, 3)  # type: ignore[attr-defined]
        return {
            "key": row.key,  # type: ignore[attr-defined]
            **{k: getattr(row, k) for k in ("start", "variant", "mode", "seed")},
            "episodes": 10,
            "updates": 2,
            "curve": [[0.0, 0, wins / 4]],
            "cells": {
                c: [[t, i < wins] for i, t in enumerate(tasks)]
                for c in ("test@1", "test@0", "train@1", "train@0")
            },
        }

    with monkeypatch.context() as measuring:  # the table's rows, measured as the stand-in above does
        measuring.setattr(program, "_measure", measure)
        measuring.chdir(tmp_path)
        measuring.setattr(
            sys,
            "argv",
            [
                str(PROGRAM),
                "--algorithms",
                "a-ride,digirl",
                "--sync",
                "a-ride",
                "--seeds",
                "0",
                "--out",
                "t",
                "--figure",
                "f.png",
            ],
        )
        program.main()
    printed = json.loads(capsys.readouterr().out)
    # measured seed by seed, shown in the order asked: a-ride first, though also asked in sync rounds
    assert list(printed["table"]) == [
        "tiny-weak / start",
        "tiny-weak / a-ride",
        "tiny-weak / digirl",
        "tiny-weak / a-ride (sync)",
    ]
    goals = printed["goals"]
    # one seed of each: a-ride − digirl paired by task (0, 0, −1, 0), its error over the tasks
    assert goals["tiny-weak: a-ride minus digirl, test@1"] == {
        "points": -25.0,
        "error": 25.0,
        "error_over": "tasks",
        "seeds": [0],
        "ahead_beyond_error": False,
    }
    # each algorithm asked in sync rounds too: its time to the target, seed by seed, beside its async row's
    assert goals["tiny-weak: time to target, a-ride async vs sync (s per seed)"] == {
        "seeds": [0],
        "async": [0.0],
        "sync_seeds": [0],
        "sync": [0.0],
    }
    rows = (tmp_path / "t" / "rows.jsonl").read_text()
    (tmp_path / "f.png").unlink()

    asked = ["--algorithms", "digirl,ppo", "--sync", "", "--seeds", "0,1", "--out", "t", "--figure", "f.png"]
    # ``here`` fails the test if a row is measured
    status, out, err = here(*asked, "--table-only", "--markdown", "t.md", "--markdown-runs", "new/r.md")
    assert status == 0, err
    assert (
        "not measured, left out: tiny-weak/ppo/async/s0, tiny-weak/digirl/async/s1, tiny-weak/ppo/async/s1"
        in err
    )
    assert "measured already" not in err  # every row drawn is: saying so of each is noise
    table = json.loads(out)["table"]
    assert sorted(table) == ["tiny-weak / digirl", "tiny-weak / start"]
    assert table["tiny-weak / digirl"]["test@1"] == {
        "success": 75.0,
        "error": 21.7,
        "gain": 50.0,
        "gain_error": 28.9,
    }
    assert (tmp_path / "f.png").stat().st_size > 0
    assert (tmp_path / "t" / "rows.jsonl").read_text() == rows  # nothing written
    lines = (tmp_path / "t.md").read_text().splitlines()
    assert lines[0].startswith(
        "| from `tiny-weak`, 30 min a run | seeds | test, T = 1 (the paper's metric) |"
    )
    assert (
        lines[2]
        == "| `tiny-weak` itself, success | | 25.0 ± 21.7% | 25.0 ± 21.7% | 25.0 ± 21.7% | 25.0 ± 21.7% | | |"
    )
    # one seed: its gain paired by task (+1, +1, 0, 0), within two of the tasks' errors, so not bold
    # its curve's one point (at 0 s, 75%) is past the start's 25% + 15 points: reached at minute 0
    assert lines[3] == "| `digirl` | 0 (± over tasks) | " + "+50.0 ± 28.9 | " * 4 + "2 | 0 |"
    assert len(lines) == 4
    lines = (tmp_path / "new" / "r.md").read_text().splitlines()  # its folder made
    assert lines[2] == "| `tiny-weak` (start) | " + "25.0 ± 21.7 | " * 4 + "| |"
    run = "| `digirl` from `tiny-weak`, seed 0 | "
    assert lines[3] == run + "75.0 ± 21.7 (+50.0 ± 28.9) | " * 4 + "10 | 2 |"
    assert len(lines) == 4

    status, err = here(*asked[:-4], "--out", "u", "--table-only")[::2]
    assert status == 2
    assert "--table-only: u/rows.jsonl holds no rows to draw the table from" in err
    assert not (tmp_path / "u").exists()
    status, err = here(
        "--algorithms",
        "ppo",
        "--sync",
        "",
        "--seeds",
        "0",
        "--starts",
        "tiny-bc",
        "--out",
        "t",
        "--table-only",
    )[::2]
    assert status == 2
    assert "holds none of the rows asked for" in err


def test_bad_settings_end_in_one_line_from_the_command_line(tmp_path: Path) -> None:
    done = _table("--minutes", "0", "--out", "table", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == "paper_table.py: error: --minutes must be above 0, not 0"
    assert not (tmp_path / "table").exists()


@pytest.mark.parametrize("out", ["file", "file/table"])
def test_an_out_that_is_or_lies_under_a_file_ends_in_one_line(
    refused: Callable[..., tuple[object, str]], tmp_path: Path, out: str
) -> None:
    (tmp_path / "file").write_text("kept")
    status, err = refused("--out", out)
    assert status == 2
    assert f"--out: cannot create {out}: file is a file, not a folder" in err.strip().splitlines()[-1]
    assert (tmp_path / "file").read_text() == "kept"


@pytest.mark.parametrize("option", ["--figure", "--markdown", "--markdown-runs"])
@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("file/t.md", "file/t.md: cannot create file: file is a file, not a folder"),
        ("folder", "folder is a folder, not a file"),
    ],
)
def test_an_output_file_that_cannot_be_written_ends_in_one_line_before_any_row(
    refused: Callable[..., tuple[object, str]], tmp_path: Path, option: str, path: str, said: str
) -> None:
    """Found before the first row, not after hours of them."""
    (tmp_path / "file").write_text("kept")
    (tmp_path / "folder").mkdir()
    status, err = refused(*SMALL, "--out", "table", option, path)
    assert status == 2
    assert err.strip().splitlines()[-1].endswith(f"{option}: {said}")
    assert not (tmp_path / "table").exists()
    assert (tmp_path / "file").read_text() == "kept"


def test_an_output_files_permission_bits_are_read_as_writing_it_would_meet_them() -> None:
    """A file there is written over in place: its own bits count, not its folder's; a new one needs a
    folder it can be made in."""
    with bound_folders(ro=0o555, locked=0o000) as (base, run):
        for name, mode in (("kept.md", 0o666), ("sealed.md", 0o444)):
            (base / "ro" / name).write_text("kept")
            (base / "ro" / name).chmod(mode)
        paths = [base / "ro" / "kept.md", base / "ro" / "sealed.md", base / "ro" / "new.md"]
        paths.append(base / "locked" / "new.md")
        code = "import sys, pathlib; sys.path.insert(0, 'benchmarks'); import paper_table as p; "
        code += "print([p._cannot_write(pathlib.Path(a)) for a in sys.argv[1:]])"
        done = run(code, *paths)
        assert done.returncode == 0, done.stderr
        assert ast.literal_eval(done.stdout) == [
            "",
            f"{paths[1]} is not writable",
            f"{paths[2]}: cannot create {base}/ro: the folder {base}/ro is not writable",
            f"{paths[3]}: cannot create {base}/locked: the folder {base}/locked cannot be entered",
        ]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            ["--markdown", "t.md", "--markdown-runs", "./t.md"],
            "--markdown-runs names the same file as --markdown",
        ),
        (["--figure", "table/rows.jsonl"], "--figure names the same file as --out's rows.jsonl"),
    ],
)
def test_two_outputs_on_one_file_end_in_one_line_and_the_rows_are_kept(
    refused: Callable[..., tuple[object, str]], tmp_path: Path, options: list[str], said: str
) -> None:
    """A figure written over the rows would lose every row measured; one table over the other, a table."""
    rows = _rows_file(tmp_path / "table", json.dumps(START | {"cells": {}, "curve": []}) + "\n")
    before = rows.read_text()
    status, err = refused(*SMALL, "--out", "table", "--resume", *options)
    assert status == 2
    assert said in err.strip().splitlines()[-1]
    assert rows.read_text() == before


def _rows_file(folder: Path, *lines: str) -> Path:
    """``folder/rows.jsonl`` for ``SMALL``'s settings, then ``lines``."""
    settings = {"minutes": 0.3, "devices": 4, "time_scale": 0.05, "eval_episodes": 2, "curve_episodes": 0}
    folder.mkdir()
    rows = folder / "rows.jsonl"
    rows.write_text(json.dumps({"settings": settings}) + "\n" + "".join(lines))
    return rows


SMALL = ["--starts", "tiny-bc", "--algorithms", "filtered-bc", "--sync", "", "--seeds", "3", "--devices", "4"]
SMALL += ["--minutes", "0.3", "--time-scale", "0.05", "--eval-episodes", "2", "--curve-episodes", "0"]
START = {"key": "tiny-bc/start/async/s0", "start": "tiny-bc", "variant": "start", "mode": "async", "seed": 0}


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (["[1, 2]\n"], "rows.jsonl:2 is not a row (a JSON object with its key)"),
        (['{"key": "x"\n', json.dumps(START) + "\n"], "rows.jsonl:2 is not JSON"),
    ],
)
def test_resume_refuses_a_line_that_is_not_a_row_naming_it(
    refused: Callable[..., tuple[object, str]], tmp_path: Path, lines: list[str], said: str
) -> None:
    rows = _rows_file(tmp_path / "table", *lines)
    before = rows.read_text()
    status, err = refused(*SMALL, "--out", "table", "--resume")
    assert status == 2
    assert said in err.strip().splitlines()[-1]
    assert rows.read_text() == before  # nothing lost


def test_resume_refuses_a_first_line_that_is_not_the_settings(
    refused: Callable[..., tuple[object, str]], tmp_path: Path
) -> None:
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / "rows.jsonl").write_text("[1, 2]\n")
    status, err = refused(*SMALL, "--out", "table", "--resume")
    assert status == 2
    assert "rows.jsonl:1 is not a table's settings line" in err


def test_resume_sets_a_row_cut_short_aside_and_measures_it_again(program: ModuleType, tmp_path: Path) -> None:
    start = json.dumps(START | {"cells": {}, "curve": []}) + "\n"
    cut = '{"key": "tiny-bc/filtered-bc/async/s3", "cells": {"test@1": [["gen'
    rows = _rows_file(tmp_path / "table", start, cut)
    settings = json.loads(rows.read_text().splitlines()[0])["settings"]
    measured = program._measured(rows, settings)
    assert list(measured) == ["tiny-bc/start/async/s0"]  # the cut row is not taken as measured
    assert rows.read_text().splitlines()[1:] == [start.strip()]  # and the file ends with a whole row
    assert (tmp_path / "table" / "rows.jsonl.cut").read_text() == cut + "\n"  # what was cut is kept aside


def test_resume_ends_a_last_row_whose_newline_was_cut_off(program: ModuleType, tmp_path: Path) -> None:
    start = json.dumps(START | {"cells": {}, "curve": []})
    rows = _rows_file(tmp_path / "table", start)  # whole, but no newline after it
    settings = json.loads(rows.read_text().splitlines()[0])["settings"]
    assert list(program._measured(rows, settings)) == ["tiny-bc/start/async/s0"]
    assert rows.read_text().endswith(start + "\n")  # the next row goes on a line of its own
    assert not rows.with_name("rows.jsonl.new").exists()


def test_a_row_measured_again_sets_its_unfinished_run_aside(
    program: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run left by a row that did not finish has checkpoints that ``train`` would refuse to mix with a
    new run: the row's new run starts from nothing, the old one kept beside it."""
    row = program.Row("tiny-bc", "a-ride", "async", 1)
    run = tmp_path / "table" / "runs" / row.run_name
    found = []

    async def train(inventory: object) -> None:  # the row's training, as far as this test needs it
        found.append(run.exists())
        raise DistrlError("stopped here")

    monkeypatch.setattr(program, "train", train)
    args = argparse.Namespace(out=tmp_path / "table", minutes=0.3, devices=4, time_scale=0.05)
    for attempt in (1, 2):
        (run / "checkpoints").mkdir(parents=True)
        (run / "checkpoints" / "latest").write_text(f"attempt {attempt}")
        with pytest.raises(DistrlError, match="stopped here"):
            program._measure(row, args)
    assert found == [False, False]  # each try trained into a folder of its own
    aside = tmp_path / "table" / "runs"
    assert (aside / f"{row.run_name}.stopped" / "checkpoints" / "latest").read_text() == "attempt 1"
    assert (aside / f"{row.run_name}.stopped-2" / "checkpoints" / "latest").read_text() == "attempt 2"
    said = capsys.readouterr().err.splitlines()
    assert said[1] == (
        f"paper_table: {row.key}: {run} holds a run that did not finish its row (set aside as"
        f" {row.run_name}.stopped-2): measured again from the start"
    )


@pytest.mark.timeout(900)  # a table of three rows, then three more calls in this process
def test_a_crash_keeps_the_rows_measured_and_resume_goes_on_from_them(
    tmp_path: Path,
    here: Callable[..., tuple[object, str, str]],
    refused: Callable[..., tuple[object, str]],
) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    out, figure = tmp_path / "table", tmp_path / "table.png"
    small = ["--starts", "tiny-bc", "--sync", "", "--minutes", "0.3", "--seeds", "3", "--devices", "4"]
    small += ["--time-scale", "0.05"]
    small += ["--eval-episodes", "3", "--curve-episodes", "2", "--out", "table", "--figure", str(figure)]
    crashed = _table("--algorithms", "filtered-bc,broken:Broken", *small, cwd=tmp_path, timeout=420)
    assert crashed.returncode != 0
    assert "row 3/3: tiny-bc/broken:Broken/async/s3 ..." in crashed.stderr
    said = crashed.stderr.strip().splitlines()
    assert said[-2].startswith(
        "paper_table: row 3/3, tiny-bc/broken:Broken/async/s3, failed: update 1 refused"
    )
    rows_file = Path("table", "rows.jsonl")
    assert said[-1] == (f"paper_table: the 2 row(s) measured are in {rows_file}; --resume goes on from them")
    lines = (out / "rows.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["settings"]["minutes"] == 0.3
    rows = [json.loads(line) for line in lines[1:]]
    assert [row["key"] for row in rows] == ["tiny-bc/start/async/s0", "tiny-bc/filtered-bc/async/s3"]
    trained = rows[1]
    assert trained["updates"] > 0
    assert trained["episodes"] > 0
    assert {cell: len(plays) for cell, plays in trained["cells"].items()} == dict.fromkeys(
        ("test@1", "test@0", "train@1", "train@0"), 3
    )
    assert trained["curve"]
    assert all(0 <= point[2] <= 1 for point in trained["curve"])

    # from here on nothing is measured: the calls run in this process (``here`` fails the test if one does)
    # the same settings again without --resume: refused, nothing lost
    _, err = refused("--algorithms", "filtered-bc", *small)
    assert "holds rows already: --resume" in err
    assert (out / "rows.jsonl").read_text().splitlines() == lines
    # other settings with --resume: refused too (rows measured otherwise are not mixed in)
    other = [a if a != "0.3" else "0.25" for a in small]
    _, err = refused("--algorithms", "filtered-bc", *other, "--resume")
    assert "was measured with" in err

    status, stdout, err = here("--algorithms", "filtered-bc", *small, "--resume")
    assert status == 0, err
    assert err.count("measured already") == 2
    assert "row " not in err
    result = json.loads(stdout)
    start, filtered = result["table"]["tiny-bc / start"], result["table"]["tiny-bc / filtered-bc"]
    # the start's cells are its own rows' successes; the trained row's gains are paired with them
    assert start["test@1"]["success"] == round(100 * sum(s for _, s in rows[0]["cells"]["test@1"]) / 3, 1)
    gain = (
        sum(
            a[1] - b[1] for a, b in zip(trained["cells"]["train@0"], rows[0]["cells"]["train@0"], strict=True)
        )
        / 3
    )
    assert filtered["train@0"]["gain"] == round(100 * gain, 1)
    assert filtered["updates"] == [trained["updates"]]
    assert figure.stat().st_size > 0
    assert (out / "rows.jsonl").read_text().splitlines() == lines  # nothing measured twice


def test_each_curve_of_the_figure_has_a_style_of_its_own(program: ModuleType) -> None:
    """The docs' figure draws 11 curves (the default colour cycle has 10); a whole table, 16 a start."""
    styles = sys.modules["paper_rows"].styles(48)
    assert len(set(styles)) == 48
    assert len({colour for colour, _ in styles[:20]}) == 20


def test_the_markdown_table_bolds_a_gain_beyond_two_errors_and_signs_a_loss(program: ModuleType) -> None:
    rows = sys.modules["paper_rows"]  # paper_table's neighbour, imported with it
    assert rows._gain({"gain": 5.0, "gain_error": 2.4}) == "**+5.0 ± 2.4**"
    assert rows._gain({"gain": 5.0, "gain_error": 2.5}) == "+5.0 ± 2.5"
    assert rows._gain({"gain": -4.2, "gain_error": 1.7}) == "**−4.2 ± 1.7**"
    assert rows._gain({"gain": -0.0, "gain_error": 0.0}) == "+0.0 ± 0.0"


def test_the_markdown_table_names_a_sync_row_and_each_seeds_minute_at_the_target(program: ModuleType) -> None:
    rows = sys.modules["paper_rows"]
    gain = {"success": 40.0, "error": 1.0, "gain": 15.0, "gain_error": 1.0}
    row = {f"{s}@{t:g}": gain for s, t in rows.CELLS} | {"seeds": [0, 1], "updates": [900, 300]}
    cells = {
        "w / a-ride": row | {"time_to_target_s": [300.0, 600.0]},
        "w / a-ride (sync)": row | {"time_to_target_s": [900.0, None]},
    }
    lines = rows.markdown(cells, 30, 15).splitlines()
    assert lines[0].endswith("| updates | minute at start + 15 |")
    assert lines[2].startswith("| `a-ride` | 0, 1 | ")
    assert lines[2].endswith("| 900, 300 | 5, 10 |")
    assert lines[3].startswith("| `a-ride` in sync rounds | 0, 1 | ")
    assert lines[3].endswith("| 900, 300 | 15, — |")  # seed 1 never reached it


def test_the_docs_tables_are_what_their_command_writes_from_the_kept_rows(tmp_path: Path) -> None:
    """docs/results/paper-table.md includes Markdown tables, two a kept folder of rows: each folder's own
    ``--table-only`` command on the page writes both, byte for byte, from the rows kept in the repository."""
    page = (ROOT / "docs" / "results" / "paper-table.md").read_text()
    commands = [
        block
        for block in re.findall(r"```bash\n(.*?)```", page, flags=re.DOTALL)
        if "--table-only" in block and "--markdown docs/results/data/" in block
    ]
    included = re.findall(r'--8<-- "(results/data/[^"]+)"', page)
    assert commands
    assert len(included) == 2 * len(commands)  # each table on the page is one a command writes
    for number, command in enumerate(commands):
        words = shlex.split(command.replace("\\\n", " "))
        assert words[:2] == ["python", "benchmarks/paper_table.py"]
        written = tmp_path / str(number)
        kept = {flag: words[words.index(flag) + 1] for flag in ("--markdown", "--markdown-runs")}
        for flag, path in kept.items():
            assert path.removeprefix("docs/") in included, f"{path} is not on the page"
            words[words.index(flag) + 1] = str(written / Path(path).name)
        words[words.index("--figure") + 1] = str(written / "figure.png")
        done = _table(*words[2:], cwd=ROOT)
        assert done.returncode == 0, done.stderr
        for path in kept.values():
            assert (written / Path(path).name).read_text() == (ROOT / path).read_text(), path


def test_the_pages_table_of_rows_is_each_variants_algorithm_and_lines(program: ModuleType) -> None:
    """The rows are named by code names (``a-ride-binary-kl-0.1``); the page's table of them says what
    each one runs. It must be ``VARIANTS`` itself: every variant, its algorithm and the lines it changes."""
    page = (ROOT / "docs" / "results" / "paper-table.md").read_text()
    found = re.findall(r"^\| `([a-z0-9.-]+)` \| `([a-z-]+)` \| (.+?) \| .+ \|$", page, flags=re.MULTILINE)
    written = {
        name: (algorithm, ", ".join(f"`[{table}] {key} = {value}`" for (table, key), value in lines.items()))
        for name, (algorithm, lines) in program.VARIANTS.items()
    }
    assert {name: (algorithm, lines) for name, algorithm, lines in found} == written
