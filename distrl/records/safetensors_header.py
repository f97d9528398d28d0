"""The header of a safetensors file, read without torch: the one reader of it for the weights' blobs
(``distrl.weights.blobs``) and the learner's checkpoint files (``distrl.learner.tensor_files``).

A safetensors file is ``header length u64 (little-endian) | header JSON | the tensors' bytes``; the header
maps each tensor's name to its ``dtype``, ``shape`` and ``data_offsets`` ([begin, end) in the bytes
after the header), and ``__metadata__`` (optional) to a string-to-string map. ``read_header`` checks
all of it against the blob's length before anything is decoded, and says what is wrong in one
``HeaderError``: ``truncated`` (the blob ends before what its header promises) or ``corrupt`` (anything
else). The tensors' bytes are for safetensors itself to read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

import orjson

from distrl.records.documents import kind_of

__all__ = ["MAX_HEADER_BYTES", "HeaderError", "SafetensorsHeader", "TensorEntry", "read_header"]

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""The longest header read (safetensors' own limit)."""
_LENGTH = struct.Struct("<Q")


class HeaderError(ValueError):
    """A blob whose safetensors header is unusable; ``reason`` is ``truncated`` or ``corrupt``."""

    def __init__(self, reason: Literal["truncated", "corrupt"], problem: str) -> None:
        super().__init__(problem)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TensorEntry:
    """One tensor as the header describes it."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    """Its first byte, counted from the end of the header."""
    end: int


@dataclass(frozen=True, slots=True)
class SafetensorsHeader:
    metadata: dict[str, str]
    """``__metadata__``, empty when the header has none."""
    tensors: dict[str, TensorEntry]
    data_start: int
    """Where the tensors' bytes start in the blob (8 + the header's length)."""


def read_header(blob: bytes | bytearray | memoryview) -> SafetensorsHeader:
    """The header of the safetensors file ``blob``, checked against its length; ``HeaderError`` if it is
    not one, whole."""
    view = memoryview(blob).cast("B")
    if len(view) < _LENGTH.size:
        raise HeaderError("truncated", f"{len(view)} bytes")
    (length,) = _LENGTH.unpack_from(view)
    if length > MAX_HEADER_BYTES:
        raise HeaderError("corrupt", f"a header of {length} bytes")
    start = _LENGTH.size + length
    if start > len(view):
        raise HeaderError("truncated", f"the header needs {length} bytes, {len(view) - _LENGTH.size} follow")
    try:
        header = orjson.loads(view[_LENGTH.size : start])
    except orjson.JSONDecodeError:
        raise HeaderError("corrupt", "the header is not JSON") from None
    if not isinstance(header, dict):
        raise HeaderError("corrupt", f"the header is not a safetensors header: {kind_of(header)}")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(value, str) for value in metadata.values()):
        raise HeaderError("corrupt", "the header's __metadata__ is not a map of strings")
    tensors = {name: _entry(name, entry) for name, entry in header.items()}
    available = len(view) - start
    end = max((entry.end for entry in tensors.values()), default=0)
    if end > available:
        raise HeaderError("truncated", f"the tensors run past the end ({end} bytes, {available} follow)")
    if end < available:
        raise HeaderError("corrupt", f"{available - end} bytes follow the tensors")
    return SafetensorsHeader(metadata=metadata, tensors=tensors, data_start=start)


def _entry(name: str, entry: object) -> TensorEntry:
    if not isinstance(entry, dict):
        raise HeaderError("corrupt", f"the header's {name!r} is {kind_of(entry)}, not a tensor's entry")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or not isinstance(shape, list) or not all(_count(n) for n in shape):
        raise HeaderError("corrupt", f"the tensor {name!r} has a malformed dtype or shape")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_count(n) for n in offsets):
        raise HeaderError("corrupt", f"the tensor {name!r} has malformed data offsets")
    begin, end = offsets
    if begin > end:
        raise HeaderError("corrupt", f"the tensor {name!r} ends (byte {end}) before it begins ({begin})")
    return TensorEntry(dtype=dtype, shape=tuple(shape), begin=begin, end=end)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
