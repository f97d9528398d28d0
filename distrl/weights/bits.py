"""A tensor as the blobs see it: its dtype among the float types a snapshot may hold, its raw bytes and
bits on the CPU, and the checksum over names, dtypes, shapes and bytes that every blob carries and
``apply`` verifies. Both blob kinds (``blobs``) and the diff's arithmetic on the raw bits stand on these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import torch

from distrl.errors import WeightsError
from distrl.weights.planes import UINT, Array

__all__ = [
    "DTYPES",
    "Tensors",
    "bits",
    "check_name",
    "checksum",
    "digest",
    "dtype_name",
    "on_cpu",
    "raw",
]

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}
"""The tensor types a snapshot may hold, by name."""

Tensors = Mapping[str, torch.Tensor]
"""An adapter's trainable tensors by name (a state dict)."""


def checksum(tensors: Tensors) -> str:
    """SHA-256 (hex) of the tensors: names, dtypes, shapes and raw bytes, in sorted name order."""
    for name, tensor in tensors.items():
        dtype_name(name, tensor)
    return digest(tensors, b"")


def digest(tensors: Tensors, prefix: bytes) -> str:
    """SHA-256 (hex) of ``prefix``, then each tensor's name, dtype, shape and bytes in sorted name order."""
    hashed = hashlib.sha256(prefix)
    for name in sorted(tensors):
        tensor = tensors[name]
        dtype = str(tensor.dtype).removeprefix("torch.")
        hashed.update(json.dumps([name, dtype, list(tensor.shape)]).encode() + b"\n")
        hashed.update(raw(tensor).data)
    return hashed.hexdigest()


def dtype_name(name: str, tensor: torch.Tensor) -> str:
    """The name of ``tensor``'s dtype (``float32``); ``WeightsError`` (``dtype``) if a snapshot may not
    hold it."""
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise WeightsError(
            f"{name}: {dtype} is not a supported float type ({', '.join(DTYPES)})",
            reason="dtype",
            tensor=name,
        )
    return dtype


def on_cpu(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` on the CPU, contiguous, detached (itself when it is so already)."""
    dtype_name(name, tensor)
    return tensor.detach().to("cpu").contiguous()


def bits(name: str, tensor: torch.Tensor) -> Array:
    """The tensor's raw bits as a flat unsigned integer array (a view when it is on the CPU already)."""
    dtype_name(name, tensor)
    return raw(tensor).view(UINT[tensor.element_size()])


def raw(tensor: torch.Tensor) -> Array:
    """The tensor's bytes, flat (a view when it is a contiguous CPU tensor already)."""
    return tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy()


def check_name(name: str) -> None:
    """``WeightsError`` (``metadata``) unless ``name`` can name a tensor in a safetensors file."""
    if not isinstance(name, str) or not name or name == "__metadata__":
        raise WeightsError(f"{name!r} cannot name a tensor", reason="metadata", tensor=str(name))
