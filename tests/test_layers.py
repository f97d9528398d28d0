"""The package's imports follow the dependency direction of ``docs/concepts/architecture.md``.

``TABLE`` is that page's table of the parts, row for row; ``BEYOND_TABLE`` names, with its reason, each
import the code makes today that the table does not allow. Every module of ``distrl`` must belong to a
part of the table; a new module fails this test until its place is decided. Imports are read from the
source (ast), so imports inside functions count too.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import distrl

PACKAGE = Path(distrl.__file__).resolve().parent

# The architecture's table ("The parts"), row for row: part -> the parts it may import. A part may also import
# what those may import, down the table (the direction of imports); "below" is every part above it in
# the table. ``*``: everything.
TABLE: dict[str, set[str]] = {
    "build": set(),
    "config": set(),
    "records": set(),
    "errors": set(),
    "actions": {"records"},
    "wire": {"records", "errors"},
    "device": {"records", "actions"},
    "tasks": {"records"},
    "sim": {"records", "actions", "device", "tasks"},
    "episodes": {"records"},
    "env": {"records", "actions", "device", "tasks"},
    "policy": {"records", "actions"},
    "weights": {"records"},
    "learner": {"policy", "records"},
    "transport": {"wire", "errors", "config"},
    "worker": {"device", "tasks", "policy", "weights", "wire"},
    "fleet": {"*below", "-sim"},  # everything below, but not the sim
    "local": {"*below"},
    "deploy": {"transport", "config", "build"},
    "cli": {"*"},  # api / cli
    # the tests' and the benchmarks' infrastructure: no part imports it (TEST_ONLY)
    "testing": {"config", "wire"},
}
# Modules that are pieces of a part of the table under names of their own.
PIECE_OF = {
    "__init__": "cli",  # the api (distrl.collect ...)
    "__main__": "cli",
}
# What the code imports today that the table does not allow, each with its reason. Every entry must be
# in use (``test_every_import_beyond_the_table_is_used``): this list only shrinks.
BEYOND_TABLE: dict[str, dict[str, str]] = {
    "config": {"errors": "ConfigError, which every bad setting raises with its TOML path"},
    "device": {
        "errors": "the DeviceError family every device raises",
        "config": "Timeouts and ScreenSettings, the limits and screens a device works to, and the settings"
        " each kind of device takes (WorkerSettings, Devices)",
    },
    "tasks": {"errors": "TaskFileError, JudgeError and ConfigError for unscorable runs"},
    "sim": {
        "errors": "the DeviceError family SimDevice raises, and WireError in its adbd",
        "config": "SimSettings, the settings of its kind of device (sim_device), and the screens and limits",
    },
    "policy": {
        "errors": "PolicyError",
        "config": "PolicySettings, which Policy.load takes",
    },
    "weights": {"errors": "WeightsError"},
    "learner": {
        "errors": "LearnerError and CheckpointError",
        "config": "the learner's settings",
    },
    "worker": {
        "build": "its build id, sent at the handshake",
        "config": "its share of the settings (WorkerSettings, Devices)",
    },
}
ORDER = list(TABLE)
LAYERS: dict[str, set[str]] = {}
"""part -> every part it may import: its row, what those may import, and what ``BEYOND_TABLE`` says."""


def _allowed(part: str) -> set[str]:
    row = TABLE[part]
    if "*" in row:
        return {"*"}
    named = {p for p in row if not p.startswith(("*", "-"))}
    if "*below" in row:
        named |= set(ORDER[: ORDER.index(part)])
    named -= {p[1:] for p in row if p.startswith("-")}
    allowed = set(named)
    for target in named:
        allowed |= _allowed(target) - {"*"}
    return allowed


for _part_name in TABLE:
    LAYERS[_part_name] = _allowed(_part_name) | set(BEYOND_TABLE.get(_part_name, {}))

STDLIB_ONLY = {"errors", "config", "actions", "build"}
# DESIGN: "torch stays out of config, records, wire, transport, tasks, episodes and the sim"; and deploy
NO_TORCH = {"config", "records", "wire", "transport", "tasks", "episodes", "sim", "deploy"}
TORCH_FAMILY = {"torch", "transformers", "peft", "safetensors", "numpy"}
# parts whose third-party imports are listed exhaustively
THIRD_PARTY = {"wire": {"orjson", "anyio"}, "records": {"orjson"}, "testing": {"pytest", "anyio"}}
NEVER = {"pickle", "marshal", "shelve"}  # no code runs on load, anywhere
# parts that only the tests and the benchmarks import: "everything" (``*``, ``*below``) leaves them out
TEST_ONLY = {"testing"}


def _part(module: Path) -> str:
    """The part of the table ``module`` belongs to."""
    name = module.relative_to(PACKAGE).parts[0].removesuffix(".py")
    return PIECE_OF.get(name, name)


def _is_part(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()


def _imports(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if (
                node.module == "distrl"
            ):  # ``from distrl import wire`` imports a part; ``__version__`` does not
                names.update(f"distrl.{a.name}" for a in node.names if _is_part(a.name))
        elif isinstance(node, ast.ImportFrom) and node.level:
            pytest.fail(f"{module}: use absolute imports (from distrl.x import y)")
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    parts = {_part(m) for m in MODULES}
    assert parts <= set(LAYERS), f"add {sorted(parts - set(LAYERS))} to LAYERS (the architecture's table)"


@pytest.mark.parametrize("module", MODULES, ids=[str(m.relative_to(PACKAGE)) for m in MODULES])
def test_imports_follow_the_design(module: Path) -> None:
    part = _part(module)
    allowed = LAYERS[part]
    for name in _imports(module):
        top = name.split(".")[0]
        if top == "distrl":
            if name == "distrl":
                continue
            target = PIECE_OF.get(name.split(".")[1], name.split(".")[1])
            if target in TEST_ONLY and target != part:
                pytest.fail(f"{part} imports distrl.{target}, which only the tests and the benchmarks may")
            assert target == part or "*" in allowed or target in allowed, (
                f"{part} may not import distrl.{target}"
            )
        elif top in NEVER:
            pytest.fail(f"{part} imports {name}")
        elif part in THIRD_PARTY and top not in sys.stdlib_module_names:
            assert top in THIRD_PARTY[part], f"{part} may not import {name}"
        elif part in STDLIB_ONLY:
            assert top in sys.stdlib_module_names, f"{part} must stay stdlib-only, imports {name}"
        elif part in NO_TORCH:
            assert top not in TORCH_FAMILY, f"{part} must not import {name}"


def test_every_import_beyond_the_table_is_used() -> None:
    used: dict[str, set[str]] = {}
    for module in MODULES:
        for name in _imports(module):
            if name.startswith("distrl."):
                target = name.split(".")[1]
                used.setdefault(_part(module), set()).add(PIECE_OF.get(target, target))
    for part, extra in BEYOND_TABLE.items():
        for target in extra:
            assert target not in _allowed(part), f"DESIGN allows {part} -> {target}: not beyond the table"
            assert target in used.get(part, set()), (
                f"{part} no longer imports {target}: drop it from BEYOND_TABLE"
            )


# Underscore names that a module of distrl still takes from another module, ``"module: name"`` -> why. A
# module's underscore names are its own: what another module needs is public there (the CLI's grammar and
# its handlers meet through ``distrl.cli.common``'s argument types and each handler's ``*_command``). Every
# entry must be in use: this list only shrinks.
PRIVATE_IMPORTS: dict[str, str] = {}


def _private_uses(module: Path) -> set[str]:
    """``"distrl.x.y: _name"`` for each underscore name ``module`` imports from another module of distrl
    (``from distrl.x.y import _name``), or reads from one it imported (``y._name``)."""
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    modules: dict[str, str] = {}  # local name -> the module of distrl it is bound to
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "distrl":
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "distrl":
            for alias in node.names:
                if _private(alias.name):
                    found.add(f"{node.module}: {alias.name}")
                elif _is_module(f"{node.module}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            dotted = ast.unparse(node.value)
            if dotted in modules:
                found.add(f"{modules[dotted]}: {node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


@pytest.mark.parametrize("module", MODULES, ids=[str(m.relative_to(PACKAGE)) for m in MODULES])
def test_no_module_takes_another_modules_private_names(module: Path) -> None:
    taken = _private_uses(module) - set(PRIVATE_IMPORTS)
    assert not taken, (
        f"{module.relative_to(PACKAGE)} uses {sorted(taken)}: make the name public where it lives"
    )


def test_every_private_import_allowed_is_used() -> None:
    used = set().union(*(_private_uses(m) for m in MODULES))
    assert set(PRIVATE_IMPORTS) <= used, f"drop {sorted(set(PRIVATE_IMPORTS) - used)} from PRIVATE_IMPORTS"


def test_public_api_is_importable() -> None:
    for name in distrl.__all__:
        assert hasattr(distrl, name), name
    # The light layers import without pulling torch in.
    code = "import sys, distrl, distrl.config, distrl.wire, distrl.actions; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("code", "environment", "policy", "warned"),
    [
        # on every path in, torch's OpenMP threads sleep while they wait (they took the learner's cores)
        ("import distrl, torch", {}, "PASSIVE", False),
        ("import distrl.fleet", {}, "PASSIVE", False),
        # too late to change what torch has read: said, with the way out
        ("import torch, distrl", {}, "PASSIVE", True),
        # a user's own setting wins, and nothing is said
        ("import torch, distrl", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE", False),
    ],
)
def test_openmp_threads_sleep_while_they_wait(
    code: str, environment: dict[str, str], policy: str, warned: bool
) -> None:
    inherited = "import os; print(os.environ['OMP_WAIT_POLICY'])"  # as a worker or rank started from here
    child = f"import os, subprocess, sys; {code}; print(os.environ['OMP_WAIT_POLICY'])\n"
    child += f"subprocess.run([sys.executable, '-c', {inherited!r}], check=True)"
    base = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=True, env=base | environment
    )
    assert result.stdout.split() == [policy, policy]
    assert ("torch was imported before distrl" in result.stderr) is warned, result.stderr
    if warned:
        assert "OMP_WAIT_POLICY=PASSIVE" in result.stderr


def test_the_warnings_cryptography_raises_inside_asyncssh_are_hidden_and_no_others() -> None:
    # cryptography 51 deprecated DSA, whose names asyncssh reads on import: every command printed nine lines.
    child = (
        "import warnings, distrl, distrl.transport.ssh, distrl.deploy.host\n"
        "for module in ('asyncssh.crypto', 'asyncssh.crypto.dsa', 'asyncssh.connection', 'mine'):\n"
        "    warnings.warn_explicit(f'from {module}', UserWarning, 'f.py', 1, module=module)\n"
    )
    result = subprocess.run([sys.executable, "-W", "default", "-c", child], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stderr.splitlines() if "UserWarning" in line]
    expected = ["f.py:1: UserWarning: from asyncssh.connection", "f.py:1: UserWarning: from mine"]
    assert shown == expected, result.stderr
    assert "Deprecat" not in result.stderr


def test_layers_name_real_modules() -> None:
    named = set(LAYERS) | STDLIB_ONLY | NO_TORCH | set(THIRD_PARTY)
    named |= {target for allowed in LAYERS.values() for target in allowed if target != "*"}
    for part in sorted(named - {"__init__", "__main__"}):
        assert _is_part(part), f"the table names {part!r}, which is no module of distrl"
        importlib.import_module(f"distrl.{part}")
