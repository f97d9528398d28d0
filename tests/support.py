"""Helpers the test modules share: processes that should be gone, taps on a simulated phone, and folders
whose permission bits bind."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from distrl.records import Task
    from distrl.sim.phone import Phone
    from distrl.sim.ui import Element


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True  # reaped between the two looks (before the open, or between the open and the read)
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_gone(pid: int, within_s: float) -> bool:
    """``gone(pid)``, waiting for it at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)


def element(phone: Phone, element_id: str) -> Element:
    """The topmost element called ``element_id`` on ``phone``'s screen now (fails the test if none)."""
    found = next((e for e in reversed(phone.elements()) if e.id == element_id), None)
    assert found is not None, f"{element_id} is not on screen"
    return found


def tap(phone: Phone, element_id: str) -> None:
    """Tap the middle of ``element(phone, element_id)``."""
    x, y = element(phone, element_id).box.centre
    phone.tap(x, y)


def small_run(output_dir: Path, *, run: str = "", policy: str = "") -> str:
    """The ``[run]``, ``[learner]`` and ``[policy]`` tables of a tiny run (run ``t``, writing under
    ``output_dir``): batches of 2 and short answers, for tests that run the fleet. ``run`` and ``policy``
    are more lines for their tables."""
    return f"""
[run]
name = "t"
output_dir = "{output_dir}"
{run}

[learner]
batch_size = 2
min_new_trajectories = 2
micro_batch = 8

[policy]
max_new_tokens = 24
max_wait_s = 0.05
{policy}
"""


def emulator_ports() -> range:
    """The even emulator console ports this test process may take, short of 5680 (which tests use as a
    port no phone has): all of 5554-5678 alone, or a slice of its own when pytest-xdist runs N processes
    (``gwK``), so that a port one process found free is never taken meanwhile by another's phone."""
    ports = range(5554, 5680, 2)
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    size = len(ports) // count
    if count < 2 or size < 3:  # alone, or too many processes for a slice each: the whole range
        return ports
    index = int(worker.removeprefix("gw")) % count
    return ports[index * size : (index + 1) * size]


def short_train_tasks(count: int, steps: int = 5) -> list[Task]:
    """The first ``count`` tasks of the sim's ``general`` train split, each cut to ``steps`` steps: an
    untrained tiny plays every task to its limit, and a learner's update trains on every step played."""
    from distrl.sim.suites import tasks

    return [dataclasses.replace(task, max_steps=steps) for task in tasks("general", "train")[:count]]


@contextlib.contextmanager
def bound_folders(**modes: int) -> Iterator[tuple[Path, Callable[..., subprocess.CompletedProcess[str]]]]:
    """A fresh folder under /tmp holding one folder a ``modes`` entry (its name, its permission bits), and
    a runner of Python code (``-c``, its arguments after) from the repository root as a user those bits
    bind: root passes them all, so as root the code runs as ``nobody`` (65534) through ``setpriv``.
    Skips the test where no such user can run this checkout's Python; removes the folders after."""
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    if as_user and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user the permission bits bind")
    repo = Path(__file__).resolve().parent.parent

    def run(code: str, *arguments: object) -> subprocess.CompletedProcess[str]:
        argv = [*as_user, sys.executable, "-c", code, *map(str, arguments)]
        return subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=120)

    if as_user and run("import distrl").returncode != 0:
        pytest.skip("nobody cannot read this checkout or its Python (a private home folder)")
    base = Path(tempfile.mkdtemp(prefix="distrl-bits-", dir="/tmp"))
    try:
        base.chmod(0o777)
        for name, mode in modes.items():
            (base / name).mkdir()
            (base / name).chmod(mode)  # not mkdir's mode: the umask would take from it
        yield base, run
    finally:
        for name in modes:
            (base / name).chmod(0o700)
        shutil.rmtree(base)
