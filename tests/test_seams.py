"""Tests reach the package through seams, not hooks: nothing in it reads a ``DISTRL_TEST_*`` variable.

A test that needs a worker unlike the real one hands its own agent to a ``MemoryHost``
(``tests/memory_hosts.py``), or passes an ordinary argument; the package never asks the environment
whether it is under test.
"""

from __future__ import annotations

from pathlib import Path

import distrl

PACKAGE = Path(distrl.__file__).resolve().parent


def test_the_package_reads_no_test_variable() -> None:
    files = [p for p in sorted(PACKAGE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "inference.py" for p in files)  # the walk sees the package's sources
    hits = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_bytes().decode("utf-8", "replace").splitlines(), 1)
        if "DISTRL_TEST" in line
    ]
    assert hits == [], "test hooks in the package (give the tests a seam instead):\n" + "\n".join(hits)
