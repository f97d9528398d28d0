"""Checkpoints: resuming trains bitwise like never stopping, and a damaged or half-written one is caught."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest
import torch

from distrl.errors import CheckpointError
from distrl.learner.checkpoint import (
    Checkpoints,
    load_optimizer_state,
    load_tensors,
    optimizer_state,
    restore_rng_state,
    rng_state,
    save_tensors,
)

MakeOptimizer = Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]

OPTIMIZERS: dict[str, MakeOptimizer] = {
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1),
    "adamw-amsgrad": lambda params: torch.optim.AdamW(params, lr=1e-2, amsgrad=True),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2, betas=(0.8, 0.95)),
    "sgd-momentum": lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9, nesterov=True),
}


def model(seed: int, shape: tuple[int, int] = (6, 3), bias: bool = True) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(*shape, bias=bias)


def train(net: torch.nn.Linear, optimizer: torch.optim.Optimizer, steps: int, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(8, net.in_features, generator=generator)
        optimizer.zero_grad()
        net(x).square().mean().backward()
        optimizer.step()


def bits(tensors: Mapping[str, torch.Tensor]) -> dict[str, bytes]:
    return {
        name: t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        for name, t in tensors.items()
    }


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_resume_trains_bitwise_like_never_stopping(tmp_path: Path, kind: str) -> None:
    make = OPTIMIZERS[kind]
    net = model(0)
    optimizer = make(net.parameters())
    train(net, optimizer, 3, seed=1)

    tensors, meta = optimizer_state(optimizer, "opt")
    assert all(name.startswith("opt.state.") for name in tensors)
    save_tensors(tmp_path / "optimizer.safetensors", tensors, {"optimizer": meta})
    save_tensors(tmp_path / "model.safetensors", net.state_dict())

    fresh = model(99)
    fresh_optimizer = make(fresh.parameters())
    weights, _ = load_tensors(tmp_path / "model.safetensors")
    fresh.load_state_dict(weights)
    loaded, loaded_meta = load_tensors(tmp_path / "optimizer.safetensors")
    load_optimizer_state(fresh_optimizer, loaded, loaded_meta["optimizer"], "opt")

    train(net, optimizer, 2, seed=2)
    train(fresh, fresh_optimizer, 2, seed=2)
    assert bits(fresh.state_dict()) == bits(net.state_dict())
    assert bits(optimizer_state(fresh_optimizer, "opt")[0]) == bits(optimizer_state(optimizer, "opt")[0])
    assert fresh_optimizer.state_dict()["param_groups"] == optimizer.state_dict()["param_groups"]


def test_adam_step_comes_back_as_a_float32_tensor(tmp_path: Path) -> None:
    net = model(0)
    optimizer = torch.optim.AdamW(net.parameters())
    train(net, optimizer, 3, seed=1)
    tensors, meta = optimizer_state(optimizer, "opt")
    save_tensors(tmp_path / "o.safetensors", tensors, meta)
    fresh = torch.optim.AdamW(model(0).parameters())
    load_optimizer_state(fresh, *load_tensors(tmp_path / "o.safetensors"), "opt")
    step = fresh.state_dict()["state"][0]["step"]
    assert isinstance(step, torch.Tensor)
    assert step.dtype == torch.float32
    assert step.item() == 3.0


class _Counting(torch.optim.Optimizer):
    """Keeps Python numbers, a tuple and an infinite float in its state, as some optimizers do."""

    def __init__(self, params: Iterable[torch.nn.Parameter]) -> None:
        super().__init__(params, {"lr": 0.1, "betas": (0.5, 0.25), "clip": math.inf})

    def step(self, closure: None = None) -> None:  # type: ignore[override]  # no closure form
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = state.get("step", 0) + 1
                state["scale"] = 1.0 / 3.0
                state["history"] = [state["step"], None, 0.5]
                p.data.add_(-group["lr"])


def test_python_values_come_back_with_their_types(tmp_path: Path) -> None:
    optimizer = _Counting(model(0).parameters())
    optimizer.step()
    optimizer.step()
    tensors, meta = optimizer_state(optimizer, "opt")
    save_tensors(tmp_path / "o.safetensors", tensors, meta)  # strict JSON: inf must be encoded
    fresh = _Counting(model(0).parameters())
    load_optimizer_state(fresh, *load_tensors(tmp_path / "o.safetensors"), "opt")
    state = fresh.state_dict()
    assert state == optimizer.state_dict()
    assert type(state["state"][0]["step"]) is int
    assert type(state["param_groups"][0]["betas"]) is tuple
    assert state["param_groups"][0]["clip"] == math.inf


@pytest.mark.parametrize(
    ("other", "make"),
    [
        ("shape", lambda: torch.optim.AdamW(model(0, shape=(6, 4)).parameters())),
        ("count", lambda: torch.optim.AdamW(model(0, bias=False).parameters())),
        ("groups", lambda: torch.optim.AdamW([{"params": [p]} for p in model(0).parameters()])),
        ("class", lambda: torch.optim.Adam(model(0).parameters())),
    ],
)
def test_state_for_other_parameters_is_a_mismatch(
    other: str, make: Callable[[], torch.optim.Optimizer]
) -> None:
    net = model(0)
    optimizer = torch.optim.AdamW(net.parameters())
    train(net, optimizer, 1, seed=1)
    tensors, meta = optimizer_state(optimizer, "opt")
    target = make()
    before = target.state_dict()
    with pytest.raises(CheckpointError) as caught:
        load_optimizer_state(target, tensors, meta, "opt")
    assert caught.value.reason == "mismatch"
    assert target.state_dict() == before


def test_a_tensor_of_another_shape_is_a_mismatch() -> None:
    net = model(0)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    train(net, optimizer, 1, seed=1)
    tensors, meta = optimizer_state(optimizer, "opt")
    tensors["opt.state.0.momentum_buffer"] = torch.zeros(2, 2)
    with pytest.raises(CheckpointError) as caught:
        load_optimizer_state(torch.optim.SGD(model(0).parameters(), lr=0.1), tensors, meta, "opt")
    assert caught.value.reason == "mismatch"


def test_rng_state_replays_the_same_numbers(tmp_path: Path) -> None:
    rng = random.Random(5)
    rng.gauss(0, 1)  # leaves a cached second normal in the state
    torch.manual_seed(7)
    torch.rand(3)
    tensors, meta = rng_state(rng)
    save_tensors(tmp_path / "rng.safetensors", tensors, meta)
    expected_torch, expected_python = torch.rand(5), [rng.gauss(0, 1), rng.random()]

    torch.manual_seed(0)
    rng.seed(0)
    restore_rng_state(*load_tensors(tmp_path / "rng.safetensors"), rng)
    assert torch.equal(torch.rand(5), expected_torch)
    assert [rng.gauss(0, 1), rng.random()] == expected_python


def test_rng_state_defaults_to_the_global_random() -> None:
    random.seed(3)
    tensors, meta = rng_state()
    expected = [random.random() for _ in range(3)]
    random.seed(4)
    restore_rng_state(tensors, json.loads(json.dumps(meta)))
    assert [random.random() for _ in range(3)] == expected


def test_bad_rng_state_is_corrupt() -> None:
    tensors, meta = rng_state()
    with pytest.raises(CheckpointError) as caught:
        restore_rng_state({"rng.torch": torch.zeros(3, dtype=torch.uint8)}, meta)
    assert caught.value.reason == "corrupt"
    with pytest.raises(CheckpointError):
        restore_rng_state(tensors, {"python": [3, [1, 2], None]})


def write_files(contents: Mapping[str, bytes]) -> Callable[[Path], None]:
    def fill(folder: Path) -> None:
        for name, data in contents.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)

    return fill


def test_write_seals_and_points_latest_at_it(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path / "ckpt")
    assert checkpoints.latest() is None
    assert checkpoints.list() == []
    folder = checkpoints.write(50, write_files({"a.bin": b"hello", "sub/b.bin": b"x" * 3000}))
    assert folder == tmp_path / "ckpt" / "step-000000050"
    assert (folder / "a.bin").read_bytes() == b"hello"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert {(f["path"], f["size"]) for f in manifest["files"]} == {("a.bin", 5), ("sub/b.bin", 3000)}
    assert (tmp_path / "ckpt" / "latest").read_text().strip() == "step-000000050"
    assert checkpoints.latest() == folder
    checkpoints.verify(folder)
    assert [p.name for p in (tmp_path / "ckpt").iterdir() if p.name.startswith(".tmp-")] == []


def test_keep_leaves_only_the_newest(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path, keep=2)
    for step in (10, 20, 30, 40):
        checkpoints.write(step, write_files({"w": str(step).encode()}))
    assert [p.name for p in checkpoints.list()] == ["step-000000030", "step-000000040"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step-000000030", "step-000000040"]
    assert checkpoints.latest() == tmp_path / "step-000000040"


def test_keep_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keep"):
        Checkpoints(tmp_path, keep=0)


def test_a_failing_fill_leaves_the_last_good_checkpoint(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path)
    good = checkpoints.write(1, write_files({"w": b"1"}))

    def fill(folder: Path) -> None:
        (folder / "w").write_bytes(b"half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        checkpoints.write(2, fill)
    assert checkpoints.latest() == good
    assert checkpoints.list() == [good]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step-000000001"]


def test_stale_temporary_folders_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".tmp-crashed").mkdir()
    (tmp_path / ".tmp-crashed" / "w").write_bytes(b"x")
    Checkpoints(tmp_path).write(1, write_files({"w": b"1"}))
    assert not (tmp_path / ".tmp-crashed").exists()


def test_an_existing_step_is_not_replaced(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path)
    first = checkpoints.write(5, write_files({"w": b"first"}))
    with pytest.raises(CheckpointError) as caught:
        checkpoints.write(5, write_files({"w": b"second"}))
    assert caught.value.reason == "io"
    assert (first / "w").read_bytes() == b"first"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_verify_catches_a_changed_byte_and_a_missing_file(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path)
    folder = checkpoints.write(1, write_files({"a": b"abcdef", "b": b"123"}))
    (folder / "a").write_bytes(b"abcdeF")
    with pytest.raises(CheckpointError) as caught:
        checkpoints.verify(folder)
    assert (caught.value.reason, caught.value.path) == ("corrupt", str(folder / "a"))

    (folder / "a").write_bytes(b"abcdef")
    checkpoints.verify(folder)
    (folder / "b").unlink()
    with pytest.raises(CheckpointError) as caught:
        checkpoints.verify(folder)
    assert (caught.value.reason, caught.value.path) == ("missing", str(folder / "b"))

    (folder / "manifest.json").unlink()
    with pytest.raises(CheckpointError) as caught:
        checkpoints.verify(folder)
    assert caught.value.reason == "missing"


def test_latest_falls_back_when_its_folder_is_gone(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path)
    checkpoints.write(1, write_files({"w": b"1"}))
    second = checkpoints.write(2, write_files({"w": b"2"}))
    third = checkpoints.write(3, write_files({"w": b"3"}))
    for path in third.iterdir():
        path.unlink()
    third.rmdir()
    assert checkpoints.latest() == second
    (tmp_path / "latest").unlink()  # a crash between the rename and ``latest``
    assert checkpoints.latest() == second


def test_tensors_round_trip_with_meta(tmp_path: Path) -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tensors = {
        "t": base.t(),
        "row": base[1],  # shares memory with "same"
        "same": base,
        "half": torch.ones(2, dtype=torch.bfloat16),
        "scalar": torch.tensor(2.5),
    }
    save_tensors(tmp_path / "x.safetensors", tensors, {"step": 7, "names": ["a"]})
    loaded, meta = load_tensors(tmp_path / "x.safetensors")
    assert meta == {"step": 7, "names": ["a"]}
    assert bits(loaded) == bits(tensors)
    save_tensors(tmp_path / "y.safetensors", {"t": base})
    assert load_tensors(tmp_path / "y.safetensors")[1] == {}


def test_a_truncated_or_missing_tensor_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    save_tensors(path, {"t": torch.ones(100)}, {"step": 1})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError) as caught:
        load_tensors(path)
    assert (caught.value.reason, caught.value.path) == ("corrupt", str(path))
    with pytest.raises(CheckpointError) as caught:
        load_tensors(tmp_path / "nothing.safetensors")
    assert caught.value.reason == "missing"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_state_follows_the_parameters_to_cuda() -> None:
    net = model(0)
    optimizer = torch.optim.AdamW(net.parameters())
    train(net, optimizer, 2, seed=1)
    tensors, meta = optimizer_state(optimizer, "opt")
    on_gpu = torch.optim.AdamW(model(0).cuda().parameters())
    load_optimizer_state(on_gpu, tensors, meta, "opt")
    state = on_gpu.state_dict()["state"][0]
    assert state["exp_avg"].is_cuda
    assert torch.equal(state["exp_avg"].cpu(), optimizer.state_dict()["state"][0]["exp_avg"])

    torch.cuda.manual_seed_all(3)
    rng_tensors, rng_meta = rng_state()
    assert "rng.cuda.0" in rng_tensors
    expected = torch.rand(4, device="cuda")
    torch.cuda.manual_seed_all(4)
    restore_rng_state(rng_tensors, rng_meta)
    assert torch.equal(torch.rand(4, device="cuda"), expected)
