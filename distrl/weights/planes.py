"""The byte coding of a diff's differences: ``pack`` turns the integer differences of one dtype's raw bits
into compressed chunks of byte planes, ``unpack`` checks a chunk layout and turns it back, exactly.

What it does, and why (numbers from ``benchmarks/weight_diff.py``: LoRA r=16 on every linear layer of a
Qwen2.5-VL-3B, 41.4M parameters, 166 MB in float32, trained by Adam at lr 1e-5 … 1e-4; ratios are of
the full blob of the same dtype, measured at lr 1e-4, step 50 unless said):

1. The integer difference of the raw bits, modulo 2^bits (the caller's), zigzagged (0, -1, 1, … → 0, 1,
   2, …). Exact for every bit pattern (NaN, inf, -0.0, subnormals). A float delta is not: ``old + (new -
   old)`` turns 1.0 → 1e-30 into 0.0; its bytes also compress worse (0.685 against 0.653). XOR of the
   bits is exact too but costs more (0.675): a small change across a carry flips many bits but stays a
   small difference.
2. Byte planes: byte k of every difference together, so the mostly-zero high bytes make long runs.
   Without this, zlib gets 0.80.
3. zlib (stdlib) with its run-length strategy, per 4 MiB chunk of a plane, chunks on all cores. A chunk
   whose bytes look random (order-0 entropy above 7.9 bits per byte, e.g. float32's low planes) is stored
   as is: deflate cannot win there and is slowest there. Run-length (0.653) beats zlib's default strategy
   at level 1 (0.678) and 6 (0.664), lzma (0.669) and bz2 (0.673), and is faster than all of them. It is
   at the floor for coding each difference on its own (0.656: the entropy of its bit length plus the bits
   below it), so zstd, a new dependency, could only be faster, not smaller.

A chunk is ``[plane, codec, raw bytes, packed bytes]``, codec ``zlib`` or ``raw``; the packed bytes of
all chunks follow one another in one buffer, in the layout's order.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["CHUNK_BYTES", "RAW_ENTROPY_BITS", "UINT", "Array", "Layout", "LayoutError", "pack", "unpack"]

CHUNK_BYTES = 4 * 1024 * 1024
"""Each byte plane is cut into chunks of this many bytes, compressed independently and in parallel."""
RAW_ENTROPY_BITS = 7.9
"""A chunk whose bytes carry more than this many bits of (order-0) entropy per byte is stored as is."""
_SAMPLE_STRIDE = 16  # the entropy is estimated on every 16th byte

UINT: dict[int, type[np.unsignedinteger[Any]]] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
"""The unsigned integer type of each item size: a tensor's raw bits as numbers."""
_SINT: dict[int, type[np.signedinteger[Any]]] = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

Array = npt.NDArray[Any]
Layout = list[list[Any]]
"""The chunks of one buffer: ``[plane, codec, raw bytes, packed bytes]`` each."""
_T = TypeVar("_T")
_R = TypeVar("_R")


class LayoutError(ValueError):
    """A chunk layout or its data that ``unpack`` cannot turn back: ``reason`` is ``metadata`` (the
    layout does not describe the buffer) or ``corrupt`` (a chunk does not decompress)."""

    def __init__(self, reason: str, problem: str) -> None:
        super().__init__(problem)
        self.reason = reason


def pack(delta: Array) -> tuple[Layout, bytearray]:
    """The differences ``delta`` (unsigned integers, wrapped mod 2^bits; overwritten) as compressed byte
    planes: their chunk layout and the packed bytes."""
    planes = _shuffle(_zigzag(delta))
    pieces = [
        (plane, planes[plane, start : start + CHUNK_BYTES])
        for plane in range(planes.shape[0])
        for start in range(0, planes.shape[1], CHUNK_BYTES)
    ]
    packed = _parallel(_pack, [piece for _, piece in pieces])
    layout: Layout = [
        [plane, codec, piece.size, len(data)]
        for (plane, piece), (codec, data) in zip(pieces, packed, strict=True)
    ]
    return layout, bytearray().join(data for _, data in packed)


def unpack(data: memoryview, layout: object, size: int, count: int) -> Array:
    """The ``count`` differences of ``size`` bytes each that ``pack`` made into ``layout`` and ``data``.
    ``LayoutError`` unless the layout covers ``data`` and every plane exactly, with well-formed chunks that
    decompress to their stated sizes."""
    if not isinstance(layout, list):
        raise LayoutError("metadata", "a malformed chunk list")
    planes = np.empty((size, count), dtype=np.uint8)
    jobs: list[tuple[str, memoryview, int]] = []
    targets: list[tuple[int, int]] = []
    offset, filled = 0, [0] * size
    for chunk in layout:
        if not (
            isinstance(chunk, list)
            and len(chunk) == 4
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in chunk[::2])
            and chunk[1] in ("zlib", "raw")
            and isinstance(chunk[3], int)
            and 0 <= chunk[3] <= len(data) - offset
            and chunk[0] < size
            and chunk[2] <= count - filled[chunk[0]]
            and (chunk[1] == "zlib" or chunk[2] == chunk[3])
        ):
            raise LayoutError("metadata", f"a malformed chunk: {str(chunk)[:80]}")
        plane, codec, raw, packed = chunk
        jobs.append((codec, data[offset : offset + packed], raw))
        targets.append((plane, filled[plane]))
        offset += packed
        filled[plane] += raw
    if offset != len(data) or filled != [count] * size:
        raise LayoutError("metadata", "chunks that do not cover the buffer")
    for out, (plane, start), (_, _, raw) in zip(_parallel(_unpack, jobs), targets, jobs, strict=True):
        if out is None:
            raise LayoutError("corrupt", "a compressed chunk that does not decompress")
        planes[plane, start : start + raw] = np.frombuffer(out, dtype=np.uint8)
    return _unzigzag(_unshuffle(planes))


def _zigzag(delta: Array) -> Array:
    """Small signed differences to small unsigned numbers (0, -1, 1, -2 … to 0, 1, 2, 3 …), in place."""
    signed = delta.view(_SINT[delta.dtype.itemsize])
    sign = signed >> (8 * delta.dtype.itemsize - 1)  # 0 or all ones
    signed <<= 1
    signed ^= sign
    return delta


def _unzigzag(zigzag: Array) -> Array:
    """The inverse of ``_zigzag``, in place."""
    sign = zigzag & 1
    np.negative(sign.view(_SINT[zigzag.dtype.itemsize]), out=sign.view(_SINT[zigzag.dtype.itemsize]))
    zigzag >>= 1
    zigzag ^= sign
    return zigzag


def _shuffle(values: Array) -> Array:
    """``(itemsize, n)`` bytes: plane k holds byte k (little-endian) of every value."""
    size = values.dtype.itemsize
    grouped = values.view(np.uint8).reshape(-1, size)
    planes = np.empty((size, grouped.shape[0]), dtype=np.uint8)
    for k in range(size):  # one plane at a time: 4x faster than numpy's transposing copy
        planes[k] = grouped[:, k]
    return planes


def _unshuffle(planes: Array) -> Array:
    """The inverse of ``_shuffle``: the values, as unsigned integers."""
    size = planes.shape[0]
    grouped = np.empty((planes.shape[1], size), dtype=np.uint8)
    for k in range(size):
        grouped[:, k] = planes[k]
    return grouped.view(UINT[size]).reshape(-1)


def _pack(piece: Array) -> tuple[str, bytes]:
    """One chunk of a byte plane, compressed unless its bytes look random (then zlib cannot win)."""
    counts = np.bincount(piece[::_SAMPLE_STRIDE], minlength=256)
    p = counts[counts > 0] / counts.sum()
    if float(-(p * np.log2(p)).sum()) <= RAW_ENTROPY_BITS:
        deflater = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
        packed = deflater.compress(piece.data) + deflater.flush()
        if len(packed) < piece.size:
            return "zlib", packed
    return "raw", piece.tobytes()


def _unpack(job: tuple[str, memoryview, int]) -> bytes | None:
    codec, data, size = job
    if codec == "raw":
        return bytes(data)
    try:
        inflater = zlib.decompressobj()
        out = inflater.decompress(data, size)
        if not inflater.eof and inflater.decompress(inflater.unconsumed_tail, 1):
            return None  # more data than announced
    except zlib.error:
        return None
    return out if len(out) == size and inflater.eof and not inflater.unused_data else None


def _parallel(work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    workers = min(len(items), os.cpu_count() or 1)
    if workers <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="distrl-weights") as pool:
        return list(pool.map(work, items))
