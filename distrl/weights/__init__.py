"""Adapter snapshots and version diffs: what the learner sends and the workers apply, exactly.

- ``blobs``: the two kinds of blob, safetensors files with their metadata and checksums: ``encode_full``,
  ``encode_diff``, ``encode``; ``describe`` and ``apply``, which checks everything before it writes.
- ``bits``: a tensor as the blobs see it: its dtype, raw bytes and bits, and the checksum.
- ``planes``: the byte coding of a diff's differences (zigzag, byte planes, zlib per chunk), and why.
"""

from distrl.weights.bits import DTYPES, Tensors, checksum
from distrl.weights.blobs import (
    DIFF_ENCODING,
    FORMAT,
    FORMAT_VERSION,
    FULL_ENCODING,
    BlobInfo,
    Encoded,
    Snapshot,
    apply,
    describe,
    encode,
    encode_diff,
    encode_full,
)

__all__ = [
    "BlobInfo",
    "Encoded",
    "Snapshot",
    "Tensors",
    "apply",
    "checksum",
    "describe",
    "encode",
    "encode_diff",
    "encode_full",
    "DIFF_ENCODING",
    "DTYPES",
    "FORMAT",
    "FORMAT_VERSION",
    "FULL_ENCODING",
]
