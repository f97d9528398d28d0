"""``python -m distrl deploy`` against OpenSSH's real ``sshd``, on loopback and in a network namespace.

Each sshd here gives its sessions a fresh ``HOME`` (``SetEnv HOME=...``): a new account as far as deploy
can tell, and the test user's real home is never written. Installing from PyPI in a test would be slow
and need the network, so every host installs offline from a wheelhouse (``DISTRL_WHEELHOUSE``) made of
this environment's own packages: distrl's dependencies, torch included, each packed again as a wheel
from its installed files (``distrl.deploy.repack``). pip then installs them for real, into a virtualenv
made from this interpreter's base Python. Without sshd these tests skip; the network namespace one
also needs root.
"""

from __future__ import annotations

import contextlib
import getpass
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from support import small_run

from distrl.cli import main
from distrl.config import HostEntry
from distrl.deploy import build_wheel, deploy_settings, repack
from distrl.deploy.wheel import wheel_build
from distrl.errors import DeployError
from distrl.testing.netns import free_subnets, joined_namespace, unavailable
from distrl.testing.sshd import Sshd, find_sshd, serve_sshd

pytestmark = [
    pytest.mark.xdist_group("test_deploy"),  # its costly fixtures are built once, on one process
    pytest.mark.timeout(
        360
    ),  # the first test to use `deployed` waits for its deploy (a minute; more on a busy machine)
]

ROOT = Path(__file__).resolve().parent.parent
BASE_PYTHON = str(Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
"""The Python this environment's virtualenv was made from: the deployed one is made from it too."""
DEPLOY_S = 300.0
"""Limit on one deploy command in these tests, seconds (a first one takes about a minute here)."""


def _closure(name: str) -> list[importlib.metadata.Distribution]:
    """``name``'s installed dependencies, all the way down (extras left out)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = [name]
    while todo:
        key = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if key in found:
            continue
        found[key] = importlib.metadata.distribution(key)
        for text in found[key].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return [dist for key, dist in found.items() if key != name]


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """distrl's dependencies as wheels, packed from this environment (about 1 GB, 10 s)."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    for dist in _closure("distrl"):
        repack(dist.metadata["Name"], folder)
    return folder


@dataclass(frozen=True)
class Account:
    """An sshd whose sessions see ``home`` as their home folder."""

    sshd: Sshd
    home: Path


@contextlib.contextmanager
def _account(folder: Path, home: Path | None = None, **serve: object) -> Iterator[Account]:
    """An sshd serving from ``folder``, its sessions' home ``home`` (None: a new one in ``folder``)."""
    binary = find_sshd()
    if binary is None:
        pytest.skip("OpenSSH's sshd is not installed (Debian: apt-get install openssh-server)")
    if home is None:
        home = folder / "home"
        home.mkdir()
    (folder / "sshd").mkdir()
    with serve_sshd(binary, folder / "sshd", extra_config=f"SetEnv HOME={home}\n", **serve) as sshd:  # type: ignore[arg-type]
        yield Account(sshd, home)


def _write_inventory(path: Path, hosts: list[str], output: Path) -> Path:
    path.write_text(
        small_run(output, run="max_trajectories = 4")
        + '[sim]\nwidth = 270\nheight = 600\nlatency = "off"\nnuisances = false\n'
        + "".join(hosts)
    )
    return path


def _ssh_host(account: Account, name: str, wheelhouse: Path, base_python: str = BASE_PYTHON) -> str:
    """A ``[[hosts]]`` entry for ``account`` with ``python`` left empty: the deployed one runs."""
    sshd = account.sshd
    return (
        f'[[hosts]]\nname = "{name}"\naddress = "{sshd.address}"\ntransport = "ssh"\nport = {sshd.port}\n'
        f'user = "{getpass.getuser()}"\n'
        f'identity_file = "{sshd.client_key}"\nknown_hosts_file = "{sshd.known_hosts}"\n'
        "devices = { sim = 2 }\n"
        f'env = {{ DISTRL_WHEELHOUSE = "{wheelhouse}", DISTRL_BASE_PYTHON = "{base_python}" }}\n'
    )


@pytest.fixture(scope="session")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this project (pyproject, README, the package) that the tests run as the learner and
    deploy: the handshake compares builds, and this checkout may change while the tests run."""
    folder = tmp_path_factory.mktemp("code")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, folder / name)
    shutil.copytree(ROOT / "distrl", folder / "distrl", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@dataclass(frozen=True)
class Result:
    status: int
    out: str
    err: str
    elapsed_s: float


def _distrl(code: Path, *args: str, timeout: float = DEPLOY_S) -> Result:
    """``python -m distrl ARGS`` run from ``code`` (``-m`` imports the package there)."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "distrl", *args], capture_output=True, text=True, timeout=timeout, cwd=code
    )
    return Result(result.returncode, result.stdout, result.stderr, time.monotonic() - started)


def _files(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*") if not p.is_symlink()}


@dataclass(frozen=True)
class Deployed:
    account: Account
    inventory: Path
    first: Result


@pytest.fixture(scope="session")
def deployed(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, code: Path) -> Iterator[Deployed]:
    """A first deploy to a fresh home on a loopback sshd, done once for this module's tests. Of the session,
    not the module: a test process tears a module's fixtures down whenever it runs another module's test in
    between, and this one costs a minute."""
    folder = tmp_path_factory.mktemp("deployed")
    with _account(folder) as account:
        inventory = _write_inventory(
            folder / "hosts.toml", [_ssh_host(account, "fresh", wheelhouse)], folder / "runs"
        )
        first = _distrl(code, "deploy", str(inventory))
        assert first.status == 0, first.out + first.err
        yield Deployed(account, inventory, first)


def test_a_first_deploy_installs_into_a_private_virtualenv(deployed: Deployed, code: Path) -> None:
    home = deployed.account.home
    assert sorted(p.name for p in home.iterdir()) == [".distrl"]  # nothing else in the home folder
    marker = json.loads((home / ".distrl" / "installed.json").read_text())
    pushed = home / ".distrl" / "wheels" / marker["sha256"][:16] / marker["wheel"]
    assert marker["build"] == wheel_build(pushed)
    assert marker["installer"] == "pip"
    venv = home / ".distrl" / "venv"
    config = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config  # nothing of the base Python's packages
    shown = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", "import distrl, torch; print(distrl.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shown.stdout.startswith(str(venv))  # its own copy, not this checkout
    for stage in ("connect", "wheel", "venv", "install", "done"):
        assert f"[fresh] {stage}: " in deployed.first.err
    assert re.search(r"fresh +ok +installed distrl ", deployed.first.out)
    assert "1 host ready" in deployed.first.out


def test_probe_and_a_short_run_use_the_deployed_python(
    deployed: Deployed, code: Path, tmp_path: Path
) -> None:
    venv = deployed.account.home / ".distrl" / "venv"
    probe = _distrl(code, "probe", str(deployed.inventory), "--heartbeats", "2", timeout=120)
    assert probe.status == 0, probe.out + probe.err
    assert re.search(r"fresh +ok +2 devices", probe.out)
    # the worker's interpreter was the virtualenv's: its bytecode cache is there now
    assert list(venv.rglob("distrl/worker/__pycache__/agent*.pyc"))
    run = _distrl(code, "run", str(deployed.inventory), "--new", timeout=300)
    assert run.status == 0, run.out + run.err[-3000:]
    episodes = re.search(r"^(\d+) episodes", run.out, re.MULTILINE)
    assert episodes is not None, run.out + run.err[-3000:]
    assert int(episodes[1]) >= 4
    assert sorted(p.name for p in deployed.account.home.iterdir()) == [".distrl"]


def test_a_second_deploy_is_one_round_trip(deployed: Deployed, code: Path) -> None:
    before = _files(deployed.account.home)
    second = _distrl(code, "deploy", str(deployed.inventory))
    assert second.status == 0, second.out + second.err
    assert re.search(r"fresh +skipped +up to date \(distrl ", second.out)
    assert "[fresh] wheel" not in second.err
    assert _files(deployed.account.home) == before  # nothing written
    assert second.elapsed_s < deployed.first.elapsed_s / 3


def test_a_broken_python_fails_alone_and_says_why(
    deployed: Deployed, code: Path, tmp_path: Path, wheelhouse: Path
) -> None:
    crashing = tmp_path / "python3"
    crashing.write_text("#!/bin/sh\necho 'Fatal Python error: init_fs_encoding' >&2\nexit 1\n")
    crashing.chmod(0o755)
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\necho distrl-python 3.9.2 3 9\n")
    old.chmod(0o755)
    (tmp_path / "other").mkdir()
    with _account(tmp_path / "other") as other:
        inventory = _write_inventory(
            tmp_path / "hosts.toml",
            [
                _ssh_host(deployed.account, "good", wheelhouse),
                _ssh_host(other, "crashing", wheelhouse, base_python=str(crashing)),
                _ssh_host(other, "missing", wheelhouse, base_python="/nonexistent/python3"),
                _ssh_host(other, "old", wheelhouse, base_python=str(old)),
            ],
            tmp_path / "runs",
        )
        result = _distrl(code, "deploy", str(inventory), "--force")
        assert sorted(p.name for p in other.home.iterdir()) == []  # a failing host got nothing
    out = result.out
    assert result.status == 1
    assert re.search(r"good +ok +installed distrl ", out), out + result.err
    crashed = re.escape(f"host 'crashing': venv: {crashing} does not run (exit 1)")
    assert re.search(f"crashing +FAILED +{crashed}", out), out
    assert "| Fatal Python error: init_fs_encoding" in out  # the remote stderr's last lines
    assert "host 'missing': venv: no /nonexistent/python3 on this host; install Python 3.11 or newer" in out
    assert f"host 'old': venv: {old} is Python 3.9.2; distrl needs 3.11 or newer" in out
    assert (
        result.err.strip().splitlines()[-1] == "distrl: error: 3 of 4 host(s) failed: crashing, missing, old"
    )


def test_a_host_in_a_network_namespace(
    deployed: Deployed, tmp_path: Path, wheelhouse: Path, code: Path
) -> None:
    """deploy and a worker reach a host only through a namespace's address. The host is the first deploy's
    home served by an sshd in the namespace, so deploy finds it up to date (its install is the first
    deploy's test, and costs a minute)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    pid = os.getpid()
    (subnet,) = free_subnets(1)
    namespace_cm = joined_namespace(f"distrl-d-{pid}", f"drd{pid}", f"drm{pid}", subnet)
    with namespace_cm as namespace:
        prefix = ["ip", "netns", "exec", namespace.name]
        home = deployed.account.home
        with _account(tmp_path, home, address=namespace.address, port=22, prefix=prefix) as account:
            inventory = _write_inventory(
                tmp_path / "hosts.toml", [_ssh_host(account, "ns", wheelhouse)], tmp_path
            )
            result = _distrl(code, "deploy", str(inventory))
            assert result.status == 0, result.out + result.err
            assert re.search(r"ns +skipped +up to date \(distrl ", result.out)
            assert re.search(rf"\[ns\] connect: \S*{re.escape(namespace.address)} port 22$", result.err, re.M)
            probe = _distrl(code, "probe", str(inventory), "--heartbeats", "1", timeout=120)
            assert probe.status == 0, probe.out + probe.err
            assert re.search(r"ns +ok +2 devices", probe.out)
    assert sorted(p.name for p in home.iterdir()) == [".distrl"]


# -- without sshd ---------------------------------------------------------------------------------------


def test_the_wheel_is_the_same_bytes_for_the_same_code(tmp_path: Path, code: Path) -> None:
    project = Path(shutil.copytree(code, tmp_path / "project"))
    first = build_wheel(tmp_path / "a", project=project)
    second = build_wheel(tmp_path / "b", project=project)
    assert first.sha256 == second.sha256
    assert first.path.name == f"distrl-{first.version}-py3-none-any.whl"
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "distrl", "pyproject.toml"]  # no build/
    with (project / "distrl" / "records" / "vocabulary.py").open("a") as edited:
        edited.write("\n# an edit\n")
    third = build_wheel(tmp_path / "c", project=project)
    assert third.sha256 != first.sha256
    assert third.build != first.build


def test_settings_come_from_the_hosts_env_and_a_misspelt_one_is_refused() -> None:
    host = HostEntry(
        name="h",
        address="example.org",
        env={"DISTRL_TORCH_INDEX": "https://download.pytorch.org/whl/cpu", "PATH": "x"},
    )
    settings = deploy_settings(host, "hosts[0]")
    assert settings.torch_requirement == "torch"
    assert settings.base_python == "python3"
    with pytest.raises(
        DeployError,
        match=r"hosts\[3\]\.env\.DISTRL_TORHC: not a deploy setting \(did you mean DISTRL_TORCH\?\)",
    ):
        deploy_settings(HostEntry(name="h", address="x", env={"DISTRL_TORHC": "torch==2.5.1"}), "hosts[3]")
    with pytest.raises(DeployError, match=r"h\.env\.DISTRL_TEST_X: not a deploy setting"):
        deploy_settings(HostEntry(name="h", address="x", env={"DISTRL_TEST_X": "1"}), "h")  # no test hooks
    with pytest.raises(DeployError, match="installs from that folder alone"):
        deploy_settings(
            HostEntry(name="h", address="x", env={"DISTRL_WHEELHOUSE": "~/w", "DISTRL_INDEX_URL": "u"}), "h"
        )
    with pytest.raises(DeployError, match="use 1 or 0"):
        deploy_settings(HostEntry(name="h", address="x", env={"DISTRL_VENV_SYSTEM_SITE": "yes"}), "h")


def test_unknown_hosts_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text('[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    assert main(["deploy", str(inventory), "--hosts", "a,b"]) == 2
    assert "--hosts: no host b in" in capsys.readouterr().err
    assert main(["deploy", str(inventory), "--hosts", ",,"]) == 2  # not every host, as no --hosts is
    assert "--hosts ',,' names no host" in capsys.readouterr().err
    assert main(["deploy", str(inventory)]) == 0
    assert re.search(r"a +skipped +local: runs this machine's distrl", capsys.readouterr().out)
