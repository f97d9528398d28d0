"""Adapter snapshots and version diffs: what the learner sends and the workers apply, exactly.

- ``blobs``: the two kinds of blob, safetensors files with their metadata and checksums: ``encode_full``,
  ``encode_diff``, ``encode``; ``describe`` and ``apply``, which checks everything before it writes.
- ``planes``: the byte coding of a diff's differences (zigzag, byte planes, zlib per chunk), and why.
"""

from distrl.weights.blobs import (
    DIFF_ENCODING,
    DTYPES,
    FORMAT,
    FORMAT_VERSION,
    FULL_ENCODING,
    BlobInfo,
    Encoded,
    Snapshot,
    Tensors,
    apply,
    checksum,
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
