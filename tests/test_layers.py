"""The package's imports follow the dependency direction of DESIGN.md.

Every module of ``distrl`` must appear in ``LAYERS``; a new module fails this test until its place is
decided. Imports are read from the source (ast), so imports inside functions count too.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import distrl

PACKAGE = Path(distrl.__file__).resolve().parent

# part -> the distrl parts it may import (DESIGN.md, "The parts"). The sim implements the Device protocol
# (``distrl.sim.device.SimDevice``), so it imports the device layer, which imports nothing of the sim:
# nothing on the real-device path does.
LAYERS: dict[str, set[str]] = {
    "errors": set(),
    "build": set(),
    "records": set(),
    "config": {"errors"},
    "actions": {"records"},
    "wire": {"records", "errors"},
    "transport": {"wire", "errors", "config"},
    "worker": {
        "build",
        "wire",
        "errors",
        "config",
        "records",
        "actions",
        "transport",
        "device",
        "policy",
        "weights",
        "sim",
        "tasks",
    },
    "fleet": {
        "build",
        "episodes",
        "wire",
        "errors",
        "config",
        "records",
        "transport",
        "learner",
        "policy",
        "weights",
        "sim",
        "tasks",
    },
    "deploy": {"build", "config", "errors", "transport"},
    "tasks": {"records", "errors"},
    "episodes": {"records"},
    "env": {"records", "actions", "device", "tasks"},
    "sim": {"records", "actions", "errors", "config", "device"},
    "device": {"records", "actions", "errors", "config"},
    "weights": {"records", "errors"},
    "policy": {"records", "actions", "errors", "config", "weights"},
    "pretrain": {"records", "actions", "errors", "config", "sim", "device", "policy", "weights"},
    "play": {"records", "actions", "errors", "config", "sim", "device", "policy", "learner"},
    "learner": {"records", "actions", "errors", "config", "policy", "weights", "wire"},
    "judge_eval": {"records", "errors", "sim", "play", "pretrain", "tasks"},
    "local": {"records", "config", "learner", "play", "sim"},
    "cli": {"*"},
    "__main__": {"cli"},
    "__init__": {"*"},
}
STDLIB_ONLY = {"errors", "records", "config", "actions", "build"}
NO_TORCH = {
    "errors",
    "records",
    "config",
    "actions",
    "wire",
    "transport",
    "deploy",
    "sim",
    "tasks",
    "episodes",
}
TORCH_FAMILY = {"torch", "transformers", "peft", "safetensors", "numpy"}
# parts whose third-party imports are listed exhaustively
THIRD_PARTY = {"wire": {"orjson", "anyio"}}
NEVER = {"pickle", "marshal", "shelve"}  # no code runs on load, anywhere


def _part(module: Path) -> str:
    return module.relative_to(PACKAGE).parts[0].removesuffix(".py")


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
    assert parts <= set(LAYERS), f"add {sorted(parts - set(LAYERS))} to LAYERS (DESIGN.md's table)"


@pytest.mark.parametrize("module", MODULES, ids=[str(m.relative_to(PACKAGE)) for m in MODULES])
def test_imports_follow_the_design(module: Path) -> None:
    part = _part(module)
    allowed = LAYERS[part]
    for name in _imports(module):
        top = name.split(".")[0]
        if top == "distrl":
            if name == "distrl" or "*" in allowed:
                continue
            target = name.split(".")[1]
            assert target == part or target in allowed, f"{part} may not import distrl.{target}"
        elif top in NEVER:
            pytest.fail(f"{part} imports {name}")
        elif part in THIRD_PARTY and top not in sys.stdlib_module_names:
            assert top in THIRD_PARTY[part], f"{part} may not import {name}"
        elif part in STDLIB_ONLY:
            assert top in sys.stdlib_module_names, f"{part} must stay stdlib-only, imports {name}"
        elif part in NO_TORCH:
            assert top not in TORCH_FAMILY, f"{part} must not import {name}"


def test_public_api_is_importable() -> None:
    for name in distrl.__all__:
        assert hasattr(distrl, name), name
    # The light layers import without pulling torch in.
    code = "import sys, distrl, distrl.config, distrl.wire, distrl.actions; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_layers_name_real_modules() -> None:
    named = set(LAYERS) | STDLIB_ONLY | NO_TORCH | set(THIRD_PARTY)
    named |= {target for allowed in LAYERS.values() for target in allowed if target != "*"}
    for part in sorted(named - {"__init__", "__main__"}):
        assert _is_part(part), f"the table names {part!r}, which is no module of distrl"
        importlib.import_module(f"distrl.{part}")
