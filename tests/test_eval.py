"""``eval`` over a run's last checkpoints (``--checkpoints K``) and what it says of an adapter that changes
nothing: real checkpoint folders (``Checkpoints.write``), the CLI in a process of its own."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from distrl.cli.common import adapter_folder
from distrl.config import PolicySettings
from distrl.errors import PolicyError
from distrl.learner.checkpoint import Checkpoints
from distrl.local.evaluation import Evaluation, Outcome
from distrl.policy import Policy
from distrl.sim.suites import tasks

pytestmark = pytest.mark.xdist_group("test_eval")  # its costly fixtures are built once, on one process


def _distrl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "distrl", *args], capture_output=True, text=True, cwd=cwd, timeout=200
    )


def _error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """A usage error of one sentence naming ``words``."""
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("distrl: error: "), result.stderr
    assert all(word in lines[0] for word in words), lines[0]


@pytest.fixture(scope="session")  # built once per test process, however its tests interleave
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run's output folder with three checkpoints, as a learner writes them: step 20 in the critic's
    warm-up (its adapter as initialised), steps 50 and 100 with adapters of their own."""
    folder = tmp_path_factory.mktemp("run")
    policy = Policy.load(PolicySettings(model="tiny-bc"), seed=0)
    initial = policy.adapter.state()
    checkpoints = Checkpoints(folder / "checkpoints", keep=5)
    checkpoints.write(20, lambda into: policy.adapter.save(into / "adapter"))
    generator = torch.Generator().manual_seed(3)
    for step in (50, 100):
        policy.adapter.load_state(
            {name: torch.randn(t.shape, generator=generator) * 0.08 for name, t in initial.items()}
        )
        checkpoints.write(step, lambda into: policy.adapter.save(into / "adapter"))
    return folder


def test_pooled_evaluations_give_each_task_its_plays_of_all() -> None:
    pool = tasks("general", "train")[:3]

    def evaluation(*wins: bool, samples: int = 1, order: list[int] | None = None) -> Evaluation:
        chosen = [pool[i] for i in order or range(3)]
        outcomes = [
            Outcome(task=task, success=won, steps=1, actions=(), ended=True)
            for task, won in zip([t for t in chosen for _ in range(samples)], wins, strict=True)
        ]
        return Evaluation(
            suite="general", split="train", outcomes=tuple(outcomes), wall_s=1.0, samples=samples
        )

    first, second = (
        evaluation(True, False, True),
        evaluation(False, False, True, True, True, False, samples=2),
    )
    pooled = Evaluation.pooled([first, second])
    assert pooled.samples == 3
    assert pooled.wall_s == 2.0
    # each task: the first's play, then the second's two
    assert [o.success for o in pooled.outcomes] == [True, False, False, False, True, True, True, True, False]
    assert [(task.id, won, plays) for task, won, plays in pooled.per_task()] == [
        (pool[0].id, 1, 3),
        (pool[1].id, 2, 3),
        (pool[2].id, 2, 3),
    ]
    # a task's success is its mean over the pooled plays; the error is over tasks
    rate, error = pooled.pass_at_k(1)
    assert rate == pytest.approx(5 / 9)
    assert error == pytest.approx(math.sqrt(((1 / 3 - 5 / 9) ** 2 + 2 * (2 / 3 - 5 / 9) ** 2) / 3 / 3))
    mean, _ = pooled.minus(evaluation(True, True, True))
    assert mean == pytest.approx(5 / 9 - 1)
    with pytest.raises(ValueError, match="same tasks in the same order"):
        Evaluation.pooled([first, evaluation(True, False, True, order=[2, 1, 0])])
    with pytest.raises(ValueError, match="no evaluations"):
        Evaluation.pooled([])
    elsewhere = Evaluation(suite="general", split="test", outcomes=first.outcomes, wall_s=0.0)
    with pytest.raises(ValueError, match="same suite and split"):
        Evaluation.pooled([first, elsewhere])


@pytest.mark.timeout(400)  # four policies, each playing two decodings, in processes of their own
def test_eval_over_the_last_checkpoints_reports_each_and_their_mean(run: Path, tmp_path: Path) -> None:
    common = ("--split", "train", "--episodes", "4")
    result = _distrl(
        "eval", "tiny-bc", "--adapter", str(run), "--checkpoints", "2", *common, "--against-start", "--json",
        "--per-task", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert "(step 50, greedy)" in result.stderr
    assert "(step 100, temperature 1)" in result.stderr
    checkpoints = figures["checkpoints"]
    assert [entry["step"] for entry in checkpoints] == [50, 100]
    assert [Path(entry["adapter"]).parent.name for entry in checkpoints] == [
        "step-000000050",
        "step-000000100",
    ]
    assert figures["adapter_changes_nothing"] is False
    for decoding in ("greedy", "sampled"):
        each = [entry[decoding]["outcomes"] for entry in checkpoints]
        start = figures["start"][decoding]["outcomes"]
        assert all(len(outcomes) == 4 for outcomes in [*each, start])
        # each task's success is its mean over the two checkpoints
        means = [(a["success"] + b["success"]) / 2 for a, b in zip(*each, strict=True)]
        pooled = figures[decoding]
        assert pooled["success_rate"] == pytest.approx(sum(means) / 4)
        assert [o["step"] for o in pooled["outcomes"]] == [50, 100] * 4
        assert [o["success"] for o in pooled["outcomes"]] == [
            o["success"] for pair in zip(*each, strict=True) for o in pair
        ]
        spread = math.sqrt(sum((m - sum(means) / 4) ** 2 for m in means) / 4 / 4)
        assert pooled["standard_error"] == pytest.approx(spread)
        assert pooled["samples"] == 1
        assert set(pooled["pass_at_k"]) == {"1"}
        # and the difference from the start pairs those means with the start's plays, task by task
        differences = [m - o["success"] for m, o in zip(means, start, strict=True)]
        mean = sum(differences) / 4
        error = math.sqrt(sum((d - mean) ** 2 for d in differences) / 3 / 4)
        assert figures["difference"][decoding]["mean"] == pytest.approx(mean)
        assert figures["difference"][decoding]["standard_error"] == pytest.approx(error)

    text = _distrl(
        "eval", "tiny-bc", "--adapter", str(run / "checkpoints" / "step-000000050"), "--checkpoints", "2",
        *common, "--temperature", "0", cwd=tmp_path,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert [line.split()[:2] for line in lines if line.startswith("step ")] == [
        ["step", "20"],
        ["step", "50"],
    ]
    assert "mean of the 2 checkpoints (steps 20, 50), each task's success its mean over them:" in lines
    assert any(line.startswith("greedy ") and "over tasks" in line for line in lines)
    assert (
        "the adapter of step 20 changes nothing: its LoRA B matrices are all zero, as initialised (a run"
        " saves such a checkpoint before its first actor update, in the critic's warm-up)" in lines
    )


def test_eval_says_when_the_adapter_changes_nothing(run: Path, tmp_path: Path) -> None:
    common = ("--split", "train", "--episodes", "2", "--temperature", "0")
    warm_up = _distrl(
        "eval", "tiny-bc", "--adapter", str(run / "checkpoints" / "step-000000020"), *common, cwd=tmp_path
    )
    assert warm_up.returncode == 0, warm_up.stderr
    assert "the adapter changes nothing: its LoRA B matrices are all zero" in warm_up.stdout
    moved = _distrl("eval", "tiny-bc", "--adapter", str(run), *common, "--json", cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    figures = json.loads(moved.stdout)
    assert Path(figures["adapter"]).parent.name == "step-000000100"  # the run's latest
    assert figures["adapter_changes_nothing"] is False


def test_eval_checkpoints_refuses_what_it_cannot_do_in_one_sentence(run: Path, tmp_path: Path) -> None:
    _error(
        _distrl("eval", "tiny-bc", "--adapter", str(run), "--checkpoints", "4", cwd=tmp_path),
        "holds 3 checkpoints up to step-000000100",
        "not the 4 --checkpoints asks for",
        "keep_checkpoints",
    )
    step_50 = str(run / "checkpoints" / "step-000000050")
    _error(
        _distrl("eval", "tiny-bc", "--adapter", step_50, "--checkpoints", "3", cwd=tmp_path),
        "holds 2 checkpoints up to step-000000050",
    )
    Policy.load(PolicySettings(model="tiny-bc"), seed=0).adapter.save(tmp_path / "plain")
    _error(
        _distrl("eval", "tiny-bc", "--adapter", "plain", "--checkpoints", "2", cwd=tmp_path),
        "is an adapter of no run's checkpoints",
    )
    _error(_distrl("eval", "tiny-bc", "--checkpoints", "2", cwd=tmp_path), "name the run with --adapter")
    _error(
        _distrl(
            "eval", "tiny-bc", "--adapter", str(run), "--checkpoints", "2", "--samples", "2", cwd=tmp_path
        ),
        "give one of them",
    )
    zero = _distrl("eval", "tiny-bc", "--adapter", str(run), "--checkpoints", "0", cwd=tmp_path)
    assert zero.returncode == 2
    assert "argument --checkpoints: must be at least 1, got 0" in zero.stderr


def test_eval_refuses_a_checkpoint_that_fails_its_manifest_as_resume_does(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    weights = copy / "checkpoints" / "step-000000100" / "adapter" / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # one bit of one weight: still a readable file, no longer the one the run wrote
    weights.write_bytes(bytes(data))
    damaged = _distrl("eval", "tiny-bc", "--adapter", str(copy), "--episodes", "1", cwd=tmp_path)
    assert damaged.returncode == 1, damaged
    lines = damaged.stderr.strip().splitlines()
    assert lines == [
        f"distrl: error: cannot evaluate the checkpoint {weights.parent.parent}: {weights} does not match"
        " its SHA-256"
    ], damaged.stderr
    assert "success" not in damaged.stdout  # nothing was played
    # --checkpoints verifies each checkpoint it plays, not only the first
    pooled = _distrl(
        "eval", "tiny-bc", "--adapter", str(copy), "--checkpoints", "2", "--episodes", "1", cwd=tmp_path
    )
    assert pooled.returncode == 1, pooled
    assert "does not match its SHA-256" in pooled.stderr


def test_eval_refuses_a_checkpoint_whose_save_never_completed(run: Path, tmp_path: Path) -> None:
    """A checkpoint cut short while it was written (its .tmp-* folder, or a step-* folder without its
    manifest, copied so) was evaluated without a word, as if whole."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    cut = copy / "checkpoints" / ".tmp-abc"
    (copy / "checkpoints" / "step-000000100").rename(cut)
    (cut / "manifest.json").unlink()
    done = _distrl("eval", "tiny-bc", "--adapter", str(cut / "adapter"), "--episodes", "1", cwd=tmp_path)
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        f"distrl: error: cannot evaluate the checkpoint {cut}: it was never completed (no manifest.json: its"
        " save was cut short); evaluate another, or the run's folder for its newest"
    ]
    assert "success" not in done.stdout  # nothing was played


def test_eval_refuses_an_adapter_without_tensors(tmp_path: Path) -> None:
    Policy.load(PolicySettings(model="tiny-bc"), seed=0).adapter.save(tmp_path / "empty")
    save_file({}, str(tmp_path / "empty" / "adapter_model.safetensors"))
    with pytest.raises(PolicyError, match="holds no tensors"):
        Policy.load(PolicySettings(model="tiny-bc", adapter=str(tmp_path / "empty")), seed=0)
    _error(
        _distrl("eval", "tiny-bc", "--adapter", "empty", "--episodes", "1", cwd=tmp_path),
        "the adapter in",
        "holds no tensors",
    )
    Policy.load(PolicySettings(model="tiny-bc"), seed=0).adapter.save(tmp_path / "half")
    weights = tmp_path / "half" / "adapter_model.safetensors"
    half = load_file(str(weights))
    save_file(dict(sorted(half.items())[: len(half) // 2]), str(weights))
    with pytest.raises(PolicyError, match=f"lacks {len(half) - len(half) // 2} of the model's {len(half)}"):
        Policy.load(PolicySettings(model="tiny-bc", adapter=str(tmp_path / "half")), seed=0)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``python -m distrl argv`` refuses with, in this process, exit status 2."""
    from distrl.cli import main

    assert main(argv) == 2, argv
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("distrl: error: "), lines
    return lines[0].removeprefix("distrl: error: ")


def test_eval_refuses_plays_that_would_say_nothing_or_never_end(capsys: pytest.CaptureFixture[str]) -> None:
    said = _refused(["eval", "tiny-bc", "--samples", "3", "--temperature", "0"], capsys)
    assert said.startswith("--samples 3 with --temperature 0 would play each task's greedy answer 3 times")
    said = _refused(["eval", "tiny-bc", "--episodes", "100000000"], capsys)
    assert said.startswith("--episodes 100000000 is more than the general test split's 136 tasks: eval plays")
    # past the split, the draw played tasks again: counted as other tasks, their error was too small
    said = _refused(["eval", "tiny-bc", "--split", "train", "--episodes", "326"], capsys)
    assert said.startswith("--episodes 326 is more than the general train split's 325 tasks")
    said = _refused(["eval", "tiny-bc", "--samples", "1000000000"], capsys)
    assert said == "--samples 1000000000 is more than eval plays (at most 1,000 plays of each task)"


def test_a_run_folder_gives_its_newest_checkpoint_without_latest_and_says_when_it_has_none(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "checkpoints" / "latest").unlink()
    newest = copy / "checkpoints" / "step-000000100" / "adapter"
    assert adapter_folder(str(copy)) == str(newest)
    assert adapter_folder(str(copy / "checkpoints")) == str(newest)
    latest = copy / "checkpoints" / "latest"
    assert (
        capsys.readouterr().err.splitlines()
        == [f"distrl: {latest} is missing: using the newest checkpoint, step-000000100"] * 2
    )
    latest.write_text("step-000000999\n")  # names a step that is gone
    assert adapter_folder(str(copy)) == str(newest)
    assert capsys.readouterr().err == (
        f"distrl: {latest} names 'step-000000999', which is no complete checkpoint: using the newest"
        " checkpoint, step-000000100\n"
    )
    latest.write_text("")
    assert adapter_folder(str(copy)) == str(newest)
    assert (
        capsys.readouterr().err == f"distrl: {latest} is empty: using the newest checkpoint, step-000000100\n"
    )
    latest.write_text("step-000000050\n")  # says nothing when latest names a checkpoint that is there
    assert adapter_folder(str(copy)) == str(copy / "checkpoints" / "step-000000050" / "adapter")
    assert capsys.readouterr().err == ""
    empty = tmp_path / "empty-run"
    (empty / "checkpoints").mkdir(parents=True)
    said = _refused(["eval", "tiny-bc", "--adapter", str(empty)], capsys)
    assert (
        said == f"{str(empty)!r} is a run folder with no complete checkpoint yet (in its checkpoints folder)"
    )


def test_an_adapter_is_put_on_no_other_model_than_its_own(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = str(run / "checkpoints" / "step-000000050" / "adapter")  # trained on tiny-bc
    said = _refused(["eval", "tiny-weak", "--adapter", adapter, "--episodes", "1"], capsys)
    assert said == (
        f"the adapter {adapter} was trained on tiny-bc, not tiny-weak (its adapter_config.json's"
        f" base_model_name_or_path): python -m distrl eval tiny-bc --adapter {adapter}"
    )
    inventory = tmp_path / "hosts.toml"
    inventory.write_text('[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    collect = ["collect", str(inventory), "--episodes", "1", "--out", str(tmp_path / "out")]
    said = _refused([*collect, "--policy", "tiny-weak", "--adapter", adapter], capsys)
    assert said.startswith(f"--adapter: the adapter {adapter} was trained on tiny-bc, not tiny-weak")
    assert said.endswith(": give --policy tiny-bc")
    damaged = tmp_path / "damaged"
    shutil.copytree(adapter, damaged)
    (damaged / "adapter_model.safetensors").write_bytes(b"")
    said = _refused([*collect, "--policy", "tiny-bc", "--adapter", str(damaged)], capsys)
    assert said.startswith(f"--adapter: the adapter weights in {str(damaged)!r} are damaged")
    assert not (tmp_path / "out").exists()  # refused before any worker started
