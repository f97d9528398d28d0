"""Where the learner's ranks go (``distrl.cli.placement``): ``check`` and ``run`` refuse a device torch does
not know or this machine does not have, and more ranks than it holds, naming the file and the key. The
machine's GPUs and cores are set per test, so the answers do not depend on the machine running them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from distrl.cli import placement
from distrl.cli.placement import placement_problem
from distrl.config import load_inventory

HOSTS = '[[hosts]]\nname = "here"\naddress = "localhost"\ndevices = { sim = 1 }\n'


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of 2 GPUs and 4 cores, outside ``torchrun``."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(placement, "_cores", lambda: 4)
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _problem(tmp_path: Path, learner: str) -> str:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(f"[learner]\n{learner}\n{HOSTS}")
    return placement_problem(load_inventory(inventory))


@pytest.mark.usefixtures("machine")
@pytest.mark.parametrize(
    ("learner", "key", "words"),
    [
        ('device = "cuda:2"', "learner.device", "'cuda:2' is no GPU of this machine, which has 2 CUDA GPUs"),
        ('ranks = 2\ndevices = ["cpu", "gpu1"]', "learner.devices[1]", "'gpu1' is not a device torch knows"),
        ('devices = ["meta"]', "learner.devices[0]", "'meta' is no device the learner trains on"),
        ('ranks = 2\ndevices = ["cuda:0", "cuda:5"]', "learner.devices[1]", "'cuda:5' is no GPU"),
        ('ranks = 2\ndevices = ["cuda:1", "cuda:1"]', "learner.devices", "names cuda:1 for more than one"),
        ('ranks = 2\ndevices = ["cuda:0", "cpu"]', "learner.devices", "mixes cpu and cuda ranks"),
        ('ranks = 5\ndevices = ["cpu", "cpu", "cpu", "cpu", "cpu"]', "learner.devices", "5 CPU ranks"),
        ("ranks = 3", "learner.ranks", "= 3 puts rank r on cuda:r, and this machine has 2 CUDA GPUs"),
        ('ranks = 5\ndevice = "cpu"', "learner.ranks", "= 5 CPU ranks, and this machine has 4 cores"),
    ],
)
def test_a_learner_this_machine_cannot_hold_is_refused_naming_the_key(
    tmp_path: Path, learner: str, key: str, words: str
) -> None:
    problem = _problem(tmp_path, learner)
    assert problem.startswith(f"{tmp_path / 'hosts.toml'}: {key}: "), problem
    assert words in problem


@pytest.mark.usefixtures("machine")
@pytest.mark.parametrize(
    "learner",
    [
        "",
        'device = "cuda:1"',
        "ranks = 2",
        'ranks = 4\ndevice = "cpu"',
        'ranks = 2\ndevices = ["cuda:1", "cuda:0"]',
        'ranks = 3\ndevices = ["cpu", "cpu", "cpu"]',
    ],
)
def test_a_learner_this_machine_holds_passes(tmp_path: Path, learner: str) -> None:
    assert _problem(tmp_path, learner) == ""


def test_without_a_gpu_cuda_is_refused_and_auto_is_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(placement, "_cores", lambda: 2)
    assert "'cuda' is no GPU of this machine, which has no CUDA GPU torch can use" in _problem(
        tmp_path, 'device = "cuda"'
    )
    assert _problem(tmp_path, "ranks = 2") == ""  # auto: two CPU ranks on two cores
    assert "learner.ranks: = 3 CPU ranks" in _problem(tmp_path, "ranks = 3")


def test_under_torchrun_the_ranks_are_torchruns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "_cores", lambda: 1)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert _problem(tmp_path, 'ranks = 8\ndevice = "cpu"') == ""  # spread over torchrun's machines
    assert "'tpu' is not a device torch knows" in _problem(tmp_path, 'devices = ["tpu"]')


def test_check_and_run_refuse_an_unknown_device_in_one_line(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(f'[run]\noutput_dir = "runs"\n[learner]\ndevices = ["gpu0"]\n{HOSTS}')
    for command in ("check", "run"):
        result = subprocess.run(
            [sys.executable, "-m", "distrl", command, str(inventory)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert result.returncode == 2, result
        assert result.stderr.strip().splitlines() == [
            f"distrl: error: {inventory}: learner.devices[0]: 'gpu0' is not a device torch knows"
            " (cpu, cuda, cuda:N or mps)"
        ], result.stderr
    assert not (tmp_path / "runs").exists()  # refused before anything started
