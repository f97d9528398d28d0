"""``benchmarks/paper_table.py``: bad settings end in one line; a table cut short by a crash keeps the rows
it measured, and ``--resume`` goes on from them without measuring any again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    ],
)
def test_bad_settings_end_in_one_line(tmp_path: Path, arguments: list[str], said: str) -> None:
    done = _table(*arguments, "--out", str(tmp_path / "table"), cwd=tmp_path)
    assert done.returncode == 2
    assert said in done.stderr.strip().splitlines()[-1]  # the last line says it, after argparse's usage
    assert not (tmp_path / "table").exists()  # nothing written


@pytest.mark.timeout(900)  # a table of three rows, then three more calls
def test_a_crash_keeps_the_rows_measured_and_resume_goes_on_from_them(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN)
    out, figure = tmp_path / "table", tmp_path / "table.png"
    small = ["--starts", "tiny-bc", "--sync", "", "--minutes", "0.3", "--seeds", "3", "--devices", "4"]
    small += ["--time-scale", "0.05"]
    small += ["--eval-episodes", "3", "--curve-episodes", "2", "--out", "table", "--figure", str(figure)]
    crashed = _table("--algorithms", "filtered-bc,broken:Broken", *small, cwd=tmp_path, timeout=420)
    assert crashed.returncode != 0
    assert "row 3/3: tiny-bc/broken:Broken/async/s3" in crashed.stderr
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

    # the same settings again without --resume: refused, nothing lost
    again = _table("--algorithms", "filtered-bc", *small, cwd=tmp_path)
    assert again.returncode != 0
    assert "holds rows already: --resume" in again.stderr
    assert (out / "rows.jsonl").read_text().splitlines() == lines
    # other settings with --resume: refused too (rows measured otherwise are not mixed in)
    other = [a if a != "0.3" else "0.25" for a in small]
    mixed = _table("--algorithms", "filtered-bc", *other, "--resume", cwd=tmp_path)
    assert mixed.returncode != 0
    assert "was measured with" in mixed.stderr

    resumed = _table("--algorithms", "filtered-bc", *small, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("measured already") == 2
    assert "row " not in resumed.stderr
    result = json.loads(resumed.stdout)
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
