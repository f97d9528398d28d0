"""Learner state without pickle: tensors in safetensors files, all else in JSON.

``torch.save`` writes a pickle and ``torch.load`` runs whatever code a pickle names, so a checkpoint copied
from elsewhere could run code on the learner. Here tensors go to safetensors files (raw bytes behind a
JSON header) and all other state to JSON, which only ever decodes to data.

- ``save_tensors`` / ``load_tensors``: one safetensors file, with a JSON-able ``meta`` in its metadata.
- ``optimizer_state`` / ``load_optimizer_state``: an optimizer's ``state_dict()`` split into named
  tensors and JSON that records each value's type (a tuple stays a tuple, an int ``step`` an int), so
  resuming gives bitwise the same updates as never stopping.
- ``rng_state`` / ``restore_rng_state``: torch's CPU and CUDA generators and a ``random.Random``.

``distrl.learner.checkpoint`` puts these together into a learner's checkpoint folder.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import safetensors.torch
import torch

from distrl.errors import CheckpointError
from distrl.records.safetensors_header import HeaderError, read_header

__all__ = [
    "META_KEY",
    "load_optimizer_state",
    "load_tensors",
    "optimizer_state",
    "restore_rng_state",
    "rng_state",
    "save_tensors",
]

META_KEY = "distrl"
"""The safetensors metadata key holding ``save_tensors``' ``meta`` as JSON."""

# --- tensor files ---------------------------------------------------------------------------------------


def save_tensors(
    path: Path, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any] | None = None
) -> None:
    """Write ``tensors`` (moved to CPU, made contiguous) and ``meta`` (JSON, under ``distrl``) to ``path``."""
    stored: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for name, tensor in tensors.items():
        cpu = tensor.detach().to("cpu").contiguous()
        pointer = cpu.untyped_storage().data_ptr()
        # safetensors refuses tensors that share memory (tied weights, slices of one buffer).
        if pointer in storages and cpu.numel():
            cpu = cpu.clone()
        storages.add(cpu.untyped_storage().data_ptr())
        stored[name] = cpu
    metadata = None if meta is None else {META_KEY: json.dumps(dict(meta), allow_nan=False)}
    try:
        safetensors.torch.save_file(stored, str(path), metadata=metadata)
    except OSError as exc:
        raise CheckpointError(f"cannot write {path}: {exc.strerror}", path=str(path), reason="io") from exc


def load_tensors(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The tensors (on CPU) and ``meta`` that ``save_tensors`` wrote to ``path``; ``meta`` is ``{}`` if none.

    The whole file is read into memory rather than mapped, so the tensors outlive the file.
    """
    try:
        blob = path.read_bytes()
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path} does not exist", path=str(path), reason="missing") from exc
    except OSError as exc:
        raise CheckpointError(f"cannot read {path}: {exc.strerror}", path=str(path), reason="io") from exc
    try:
        tensors = safetensors.torch.load(blob)
    except Exception as exc:  # safetensors raises its own SafetensorError, and others on odd dtypes
        raise CheckpointError(
            f"{path} is not a readable safetensors file ({len(blob)} bytes; truncated or damaged?)",
            path=str(path),
            reason="corrupt",
        ) from exc
    try:  # safetensors has read the tensors; the metadata is left to read
        metadata = read_header(blob).metadata
    except HeaderError as exc:
        raise CheckpointError(f"{path}: {exc}", path=str(path), reason="corrupt") from exc
    if META_KEY not in metadata:
        return tensors, {}
    try:
        meta = json.loads(metadata[META_KEY])
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise CheckpointError(
            f"{path}: the {META_KEY!r} metadata is not a JSON object", path=str(path), reason="corrupt"
        )
    return tensors, meta


# --- optimizer state ------------------------------------------------------------------------------------


def optimizer_state(
    optimizer: torch.optim.Optimizer, prefix: str
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """``optimizer.state_dict()`` as tensors ``{prefix}.state.{param_index}.{key}`` and a JSON-able dict.

    The tensors are copies on CPU (the optimizer may step on while they are written). The dict holds the
    parameter groups, every non-tensor value with its type, the optimizer's class and its parameters'
    shapes, which ``load_optimizer_state`` checks before loading anything.
    """
    state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    meta = {
        "optimizer": type(optimizer).__name__,
        "param_shapes": [[list(p.shape) for p in group["params"]] for group in optimizer.param_groups],
        "state": _encode(state["state"], f"{prefix}.state", tensors),
        "param_groups": _encode(state["param_groups"], f"{prefix}.param_groups", tensors),
    }
    return tensors, meta


def load_optimizer_state(
    optimizer: torch.optim.Optimizer,
    tensors: Mapping[str, torch.Tensor],
    meta: Mapping[str, Any],
    prefix: str,
) -> None:
    """Load what ``optimizer_state`` split off into ``optimizer``, whose parameters must match the saved ones.

    Raises ``CheckpointError`` (``mismatch``) if the optimizer class, the number of groups or parameters or
    a parameter's shape differs, and nothing is loaded then. torch's ``load_state_dict`` moves each state
    tensor to its parameter's device (``step`` stays on CPU unless the group is fused or capturable).
    """

    def mismatch(problem: str) -> NoReturn:
        raise CheckpointError(f"the saved {prefix!r} optimizer state {problem}", reason="mismatch")

    try:
        kind, saved_shapes = meta["optimizer"], meta["param_shapes"]
        state = _decode(meta["state"], tensors)
        groups = _decode(meta["param_groups"], tensors)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"the saved {prefix!r} optimizer state is malformed: {exc}", reason="corrupt"
        ) from exc
    if kind != type(optimizer).__name__:
        mismatch(f"is for {kind}, not {type(optimizer).__name__}")
    shapes = [[list(p.shape) for p in group["params"]] for group in optimizer.param_groups]
    if [len(g) for g in saved_shapes] != [len(g) for g in shapes]:
        mismatch(f"has groups of {[len(g) for g in saved_shapes]} parameters, not {[len(g) for g in shapes]}")
    for g, (saved_group, group) in enumerate(zip(saved_shapes, shapes, strict=True)):
        for i, (saved, shape) in enumerate(zip(saved_group, group, strict=True)):
            if saved != shape:
                mismatch(f"has parameter {i} of group {g} of shape {saved}, not {shape}")
    try:
        optimizer.load_state_dict({"state": state, "param_groups": groups})
    except (KeyError, ValueError) as exc:
        mismatch(f"does not load: {exc}")


def _encode(value: object, name: str, tensors: dict[str, torch.Tensor]) -> Any:
    """``value`` as JSON that ``_decode`` turns back into the same types; tensors go to ``tensors[name]``."""
    if isinstance(value, torch.Tensor):
        if name in tensors:
            raise ValueError(f"two optimizer state tensors would be named {name!r}")
        tensors[name] = value.detach().to("cpu", copy=True).contiguous()
        return {"t": "tensor", "name": name, "shape": list(value.shape)}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):  # repr round-trips every finite float; JSON has no inf or nan
        return value if math.isfinite(value) else {"t": "float", "v": repr(value)}
    if isinstance(value, list | tuple):
        items = [_encode(item, f"{name}.{i}", tensors) for i, item in enumerate(value)]
        return items if isinstance(value, list) else {"t": "tuple", "v": items}
    if isinstance(value, dict):
        if not all(isinstance(key, str | int) and not isinstance(key, bool) for key in value):
            raise TypeError(f"{name}: only str and int keys can be stored, got {list(value)!r:.200}")
        return {
            "t": "dict",
            "v": [[key, _encode(item, f"{name}.{key}", tensors)] for key, item in value.items()],
        }
    raise TypeError(f"{name}: a {type(value).__name__} cannot be stored in a checkpoint")


def _decode(value: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        return [_decode(item, tensors) for item in value]
    if not isinstance(value, dict):
        return value
    tag = value["t"]
    if tag == "tensor":
        name, shape = value["name"], value["shape"]
        if name not in tensors:
            raise CheckpointError(f"the optimizer state tensor {name!r} is missing", reason="corrupt")
        tensor = tensors[name]
        if list(tensor.shape) != shape:
            raise CheckpointError(
                f"the optimizer state tensor {name!r} has shape {list(tensor.shape)}, not {shape}",
                reason="mismatch",
            )
        return tensor
    if tag == "float":
        return float(value["v"])
    if tag == "tuple":
        return tuple(_decode(item, tensors) for item in value["v"])
    if tag == "dict":
        return {key: _decode(item, tensors) for key, item in value["v"]}
    raise ValueError(f"unknown tag {tag!r}")


# --- random number generators ---------------------------------------------------------------------------


def rng_state(rng: random.Random | None = None) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """torch's CPU generator (``rng.torch``), each CUDA device's (``rng.cuda.N``), and ``rng``'s state (JSON).

    ``rng`` defaults to the global ``random`` module.
    """
    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for device, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{device}"] = state.cpu()
    version, internal, gauss_next = rng.getstate() if rng is not None else random.getstate()
    return tensors, {"python": [version, list(internal), gauss_next]}


def restore_rng_state(
    tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any], rng: random.Random | None = None
) -> None:
    """Put back what ``rng_state`` captured, so the same random numbers follow.

    CUDA devices are restored as far as both this machine and the checkpoint have them; the others keep
    their state.
    """
    try:
        version, internal, gauss_next = meta["python"]
        state = (version, tuple(internal), gauss_next)
        torch_state = tensors["rng.torch"]
        # Check the Python state on a scratch generator, so a bad one changes nothing.
        random.Random().setstate(state)
        torch.set_rng_state(torch_state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"the saved random number generator state is unusable: {exc}", reason="corrupt"
        ) from exc
    if rng is not None:
        rng.setstate(state)
    else:
        random.setstate(state)
    if torch.cuda.is_available():
        for device in range(torch.cuda.device_count()):
            if f"rng.cuda.{device}" in tensors:
                torch.cuda.set_rng_state(tensors[f"rng.cuda.{device}"], device=device)
