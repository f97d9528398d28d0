"""The docs site: its generated reference covers every command and every inventory key, its strict build
fails on what would mislead a reader, a built page renders, and the README stays a front door."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image

pytestmark = pytest.mark.xdist_group("test_docs")  # its costly fixtures are built once, on one process

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "tools" / "docs_reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


docs = _generator()


def test_the_kept_reference_pages_are_what_the_code_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI and inventory pages are kept in docs/ (they read as files, on GitHub); they were written
    at each build only, so a link to them from any page read as a file led nowhere. Kept, they must be
    what the code gives, whatever the terminal's width (argparse's help would take it)."""
    monkeypatch.setenv("COLUMNS", "40")
    assert docs.stale_pages() == [], "run python tools/docs_reference.py and commit the pages it writes"
    for uri in docs.GENERATED:
        assert (ROOT / "docs" / uri).read_text(encoding="utf-8").startswith("# ")
    assert os.environ["COLUMNS"] == "40"  # put back as it was


def test_every_command_and_option_has_a_reference_entry() -> None:
    from distrl.cli.parsers import build_parser

    page = docs.cli_page()
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(sub.choices) >= 15, "the subcommands are not where they were"
    for name, parser in sub.choices.items():
        assert f"## `{name}` {{#{name}}}" in page, f"no reference entry for `python -m distrl {name}`"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page or f", {option}" in page, f"{name} {option} is not documented"


def test_worker_is_left_out_of_help_but_documented_as_internal() -> None:
    from distrl.cli.parsers import build_parser

    listed = re.findall(r"^    (\S+)", build_parser().format_help(), flags=re.M)
    assert "run" in listed
    assert "worker" not in listed
    section = docs.cli_page().split("## `worker`", 1)[1]
    assert section.split("\n## ", 1)[0].count('!!! note "Internal"') == 1
    assert build_parser().parse_args(["worker", "--host", "a"]).host == "a"  # it still runs


def _toml_keys(data: dict[str, Any], table: str = "") -> set[str]:
    """Every key of a TOML document as ``table.key``; arrays of tables by their name
    (``hosts.devices.sim``)."""
    found = set()
    for key, value in data.items():
        path = f"{table}.{key}" if table else key
        if isinstance(value, dict) and (table or key != "hosts") and key != "env":
            found |= _toml_keys(value, path)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for entry in value:
                found |= _toml_keys(entry, path)
        elif table:
            found.add(path)
    return found


def test_every_inventory_key_has_a_reference_entry() -> None:
    example = tomllib.loads((ROOT / "hosts.example.toml").read_text())
    documented = {key.path for key in docs.inventory_keys()}
    missing = _toml_keys(example) - documented
    assert not missing, f"keys of hosts.example.toml without a reference entry: {sorted(missing)}"
    page = docs.inventory_page()
    for key in docs.inventory_keys():
        assert f'<span id="{key.path}"></span>`{key.name}`' in page
    assert "run.max_policy_lag" in documented
    assert "hosts.devices.avd" in documented
    assert "defaults.python" in documented
    assert "defaults.name" not in documented


def test_the_inventory_reference_says_type_default_bounds_and_meaning() -> None:
    (lag,) = [key for key in docs.inventory_keys() if key.path == "run.max_policy_lag"]
    assert (lag.type, lag.default, lag.bounds) == ("integer", "32", "≥ 0")
    assert lag.meaning.startswith("Drop trajectories begun by a policy")
    (mode,) = [key for key in docs.inventory_keys() if key.path == "run.mode"]
    assert mode.type == 'one of `"async"`, `"sync"`'


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Inner:
    depth: int = 2
    """How deep, in levels."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Outer:
    width: float = 1.5
    """How wide."""
    inner: _Inner = dataclasses.field(default_factory=_Inner)


def test_nested_settings_tables_are_walked() -> None:
    outer, inner = docs._walk("learner", _Outer, False)
    assert [k.path for k in outer.keys] == ["learner.width"]
    assert inner.name == "learner.inner"
    (depth,) = inner.keys
    assert (depth.path, depth.default, depth.meaning) == ("learner.inner.depth", "2", "How deep, in levels.")


def test_a_docstring_naming_what_does_not_exist_is_reported(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        '"""Uses ``distrl.config.load_inventory``.\n\nAnd ``distrl.config.nothing_here``."""\n'
    )
    assert docs.broken_references(tmp_path) == [(tmp_path / "mod.py", 3, "distrl.config.nothing_here")]


def test_the_package_docstrings_name_only_what_exists() -> None:
    broken = docs.broken_references()
    assert not broken, "\n".join(f"{path}:{line}: {name}" for path, line, name in broken)


def _validation_config() -> str:
    """mkdocs.yml's ``validation:`` block."""
    text = (ROOT / "mkdocs.yml").read_text()
    match = re.search(r"^validation:\n(?:[ #].*\n|\n)+", text, flags=re.M)
    assert match, "mkdocs.yml has no validation block"
    return match.group(0)


def _mkdocs(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_broken_link_an_anchor_or_a_page_missing_from_the_nav_fails_the_build(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(
        "# Home\n\nSee [a page](gone.md) and [a part](other.md#nowhere).\n"
    )
    (tmp_path / "docs" / "other.md").write_text("# Other\n")
    (tmp_path / "docs" / "unlisted.md").write_text("# Not in the nav\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nstrict: true\n" + _validation_config() + "nav:\n  - index.md\n  - other.md\n"
    )
    result = _mkdocs(cwd=tmp_path)
    assert result.returncode != 0
    assert "'index.md' contains a link 'gone.md'" in result.stderr
    assert "does not contain an anchor '#nowhere'" in result.stderr
    assert "unlisted.md" in result.stderr


@pytest.fixture(scope="session")  # built once per test process, however its tests interleave
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = _mkdocs("--quiet", "--site-dir", str(out), cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_the_site_builds_with_its_generated_pages(site: Path) -> None:
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert 'id="judge-eval"' in cli
    inventory = (site / "reference" / "inventory" / "index.html").read_text()
    assert 'id="learner.lr_actor"' in inventory
    api = (site / "reference" / "api" / "errors" / "index.html").read_text()
    assert "DistrlError" in api
    assert (site / "figures" / "weight-sync.png").is_file()


def test_a_built_page_renders_in_chromium(site: Path, tmp_path: Path) -> None:
    import numpy

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert chromium, "the docs are checked in headless Chromium: apt-get install chromium (.ci/run does)"
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1200,900",
            f"--screenshot={shot}",
            (site / "reference" / "inventory" / "index.html").as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    pixels = numpy.asarray(Image.open(shot).convert("L"), dtype=numpy.float64)
    assert pixels.std() > 10, "the page rendered blank"
    dark = (pixels < 128).mean()
    assert 0.005 < dark < 0.6, f"{dark:.1%} dark pixels: not a page of text"


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 200
    in_code = False
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            assert len(line) <= 120, f"README.md:{number} is {len(line)} characters long"
    assert "±" not in "\n".join(line for line in lines if not line.startswith("|")), "± belongs in tables"
    diagram = (ROOT / "docs" / "architecture.mmd").read_text().strip()
    assert f"```mermaid\n{diagram}\n```" in text, "the README's picture is docs/architecture.mmd"
    assert "tools/test" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_a_plain_pytest_without_xdist_collects_the_grouped_modules() -> None:
    """development.md: ``tools/test`` runs the suite on pytest-xdist, a plain ``pytest`` in one process;
    ``-p no:xdist`` too, though the grouped modules carry xdist's mark under ``--strict-markers``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "XDIST"))}
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "--collect-only", "-q", "tests/test_deploy.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    assert re.search(r"^\d+ tests? collected", collected.stdout, re.MULTILINE), collected.stdout[-500:]
