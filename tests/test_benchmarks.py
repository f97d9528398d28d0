"""``benchmarks/run_all.py``: the one command runs every benchmark, within the hour; and the benchmarks
import nothing from ``tests/`` (what both drive is ``distrl.testing``)."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_benchmarks_import_nothing_from_the_tests() -> None:
    test_modules = {path.stem for path in (ROOT / "tests").glob("*.py")}
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            reached = {name.split(".")[0] for name in names} & (test_modules | {"tests"})
            assert not reached, f"{path.name} imports {sorted(reached)} from tests/: use distrl.testing"
        assert "sys.path" not in path.read_text(encoding="utf-8"), f"{path.name} changes the import path"
        # nor runs a file of them as a program
        named = [
            c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and c.value in ("tests", "tests/")
        ]
        assert not named, f"{path.name} names the tests/ folder: what it runs belongs in distrl.testing"


def test_the_plan_holds_every_benchmark_and_fits_the_hour() -> None:
    run_all = _run_all()
    planned = [program.name for program in run_all.PLAN]
    programs = {
        path.stem
        for path in (ROOT / "benchmarks").glob("*.py")
        if 'if __name__ == "__main__":' in path.read_text()
    } - {"run_all", "pretrain_tiny", "paper_table"}  # hours each; paper_table's own test runs its rows small
    assert sorted(planned) == sorted(programs)  # each once; a new benchmark must join the plan
    fixed = sum(program.limit_s for program in run_all.PLAN)
    assert fixed < run_all.BUDGET_S == 3600
    # a cut run's figure goes elsewhere, so that it does not replace the full run's in the README
    for program in run_all.PLAN:
        if program.cut and "--figure" in program.arguments:
            assert "run_all/" in program.arguments[program.arguments.index("--figure") + 1]


def test_only_runs_the_named_programs_and_records_each(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "benchmarks/run_all.py", "--only", "wire_throughput", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["program"] for r in records] == ["wire_throughput"]
    assert records[0]["status"] == "ok"
    assert records[0]["result"]["benchmark"] == "wire_throughput"
    bad = subprocess.run(
        [sys.executable, "benchmarks/run_all.py", "--only", "nope"], cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "unknown program 'nope'" in bad.stderr
