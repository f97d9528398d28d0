"""Adapter snapshots and version diffs: what the learner sends and the workers apply, exactly.

A snapshot is the adapter's trainable tensors (name → tensor, any float dtype) at a version. Both kinds of
blob are safetensors files whose string metadata names the format and its version, the kind, the
version (and a diff's base version), the encoding, ``checksum``: SHA-256 over the names, dtypes, shapes
and bytes of the weights the blob produces, and ``payload_checksum`` over the metadata and stored bytes:

- ``encode_full``: every tensor as itself, so any safetensors reader can load it. For start and resync.
- ``encode_diff``: from version n to m, one buffer per dtype (``delta.float32`` …) for all the tensors
  that changed, and a manifest listing every tensor (name, dtype, shape, changed or not) and the chunks.
- ``encode``: either, with the checksum it wrote (a ``Weights`` message's field).

``apply`` checks the base version, the payload checksum, that the manifest names exactly the caller's
tensors, every chunk's length, and finally the checksum of the result; whatever fails raises
``WeightsError`` (``reason`` says what) and the caller's tensors are never written to. No pickle: JSON
and raw bytes only.

The diff: the integer difference of each changed tensor's raw bits (exact for every bit pattern), one
buffer per dtype, coded as compressed byte planes (``distrl.weights.planes``, which says why this coding);
tensors whose bits did not change cost one manifest line.

The limit: Adam moves every element by about lr at every step, so the low mantissa bits of every element
are new information and no exact encoding can drop them. Float32 diffs are 61-72% of the float32 adapter
(20% at step 1, when only B leaves zero); the 25% goal cannot be met exactly for float32 weights.
Publishing the bfloat16 cast of the learner's float32 weights (what a bf16 worker computes with) gives
diffs of 26-43% of the bfloat16 snapshot, 13-22% of the float32 adapter. A diff spanning 4 updates
(``publish_every = 4``) costs 6-12 points more than one. Encoding the float32 diff takes 1.4-3.2 s and
applying it 0.9-1.6 s on 2 shared cores; bfloat16 about half.

The two blob kinds share their metadata, checksums and manifest checks, written and read in this one
module; a tensor's dtype, raw bits and checksum are ``bits``, the byte coding of the differences is
``planes``, and the safetensors header is read by ``distrl.records.safetensors_header`` (the one reader
of it, the learner's checkpoint files' too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, NoReturn, cast

import numpy as np
import safetensors.torch
import torch

from distrl.errors import WeightsError
from distrl.records import Document
from distrl.records.safetensors_header import HeaderError, read_header
from distrl.weights.bits import DTYPES, Tensors, bits, check_name, checksum, digest, dtype_name, on_cpu
from distrl.weights.planes import Array, LayoutError, pack, unpack

FORMAT = "distrl.weights"
"""The ``format`` metadata string of every blob."""
FORMAT_VERSION = 1
"""Bumped on any change to the layout below; a reader refuses other versions."""
FULL_ENCODING = "raw"
"""A full snapshot stores each tensor as itself, under its own name: any safetensors reader can load it."""
DIFF_ENCODING = "sub-zigzag/shuffle/zlib-rle"
"""A diff: integer difference of the raw bits, zigzag, byte planes, zlib (run-length strategy) per chunk."""

_HEX = frozenset("0123456789abcdef")

Kind = Literal["full", "diff"]


class Snapshot(NamedTuple):
    """The adapter at ``version``: what ``apply`` returns. Unpacks as ``tensors, version = ...``."""

    tensors: dict[str, torch.Tensor]
    """Every tensor by name, on the CPU, each with its own storage (shared with nothing else)."""
    version: int


@dataclass(frozen=True, kw_only=True, slots=True)
class BlobInfo:
    """What a blob's metadata says about it (``describe``); the fields of the ``Weights`` message."""

    kind: Kind
    version: int
    """The version of the weights after applying the blob."""
    base_version: int | None
    """The version a diff applies to; None for a full snapshot."""
    checksum: str
    """``checksum()`` of the weights at ``version`` (hex)."""
    encoding: str


class Encoded(NamedTuple):
    """A blob as ``encode`` made it, and the ``checksum`` its metadata holds: what a ``Weights`` message
    carries, without reading the blob again."""

    blob: bytes
    checksum: str


def encode(
    new: Tensors, version: int, *, old: Tensors | None = None, base_version: int | None = None
) -> Encoded:
    """``new`` at ``version``: in full (``encode_full``) when no ``base_version`` is given, else as the diff
    from ``old`` at ``base_version`` (``encode_diff``)."""
    if base_version is None:
        return _encode_full(new, version)
    if old is None:
        raise ValueError("a diff needs the tensors at its base version")
    return _encode_diff(old, new, base_version, version)


def encode_full(tensors: Tensors, version: int) -> bytes:
    """A full snapshot of ``tensors`` at ``version``, for a worker that starts or has to resync."""
    return _encode_full(tensors, version).blob


def encode_diff(old: Tensors, new: Tensors, base_version: int, version: int) -> bytes:
    """What turns ``old`` (at ``base_version``) into ``new`` (at ``version``), exactly.

    Both must hold the same names, dtypes and shapes, and must not change while this runs (pass
    snapshots, not parameters an optimizer is stepping). Tensors whose bits did not change cost only
    their line in the manifest. Compression runs on up to ``os.cpu_count()`` threads.
    """
    return _encode_diff(old, new, base_version, version).blob


def _encode_full(tensors: Tensors, version: int) -> Encoded:
    _check_version(version, "version")
    stored = {name: on_cpu(name, tensor).clone() for name, tensor in tensors.items()}
    for name in stored:
        check_name(name)
    metadata = _metadata("full", version, None, FULL_ENCODING, checksum(stored))
    return Encoded(_save(stored, metadata), metadata["checksum"])


def _encode_diff(old: Tensors, new: Tensors, base_version: int, version: int) -> Encoded:
    _check_version(base_version, "base_version")
    _check_version(version, "version")
    if version <= base_version:
        raise WeightsError(
            f"a diff must move forward, not from version {base_version} to {version}",
            reason="metadata",
            version=version,
            base_version=base_version,
        )
    _check_same_structure(old, new)
    entries: list[list[Any]] = []
    deltas: dict[str, list[Array]] = {}
    for name in sorted(new):
        before, after = bits(name, old[name]), bits(name, new[name])
        changed = not np.array_equal(before, after)
        dtype = dtype_name(name, new[name])
        entries.append([name, dtype, list(new[name].shape), int(changed)])
        if changed:
            deltas.setdefault(dtype, []).append(np.subtract(after, before))  # wraps: exact mod 2**bits
    stored: dict[str, torch.Tensor] = {}
    chunks: dict[str, list[list[Any]]] = {}
    for dtype in sorted(deltas):
        chunks[dtype], data = pack(np.concatenate(deltas.pop(dtype)))
        stored[f"delta.{dtype}"] = torch.frombuffer(data, dtype=torch.uint8)
    manifest = json.dumps({"tensors": entries, "chunks": chunks}, separators=(",", ":"))
    metadata = _metadata("diff", version, base_version, DIFF_ENCODING, checksum(new), manifest=manifest)
    return Encoded(_save(stored, metadata), metadata["checksum"])


def describe(blob: bytes) -> BlobInfo:
    """Read a blob's metadata without decoding its tensors. Raises ``WeightsError`` if it is unusable."""
    return _read_header(blob)[0]


def apply(tensors: Tensors, blob: bytes, *, expected_base: int | None) -> Snapshot:
    """The weights after applying ``blob`` to ``tensors`` (the weights at version ``expected_base``).

    A diff must have been made from ``expected_base`` and name exactly the tensors (names, dtypes,
    shapes) of ``tensors``. A full snapshot replaces everything whatever the base (pass ``{}`` and
    ``None`` when there are no weights yet); if ``tensors`` is not empty, the snapshot must have its
    names, dtypes and shapes. The result is verified against the checksum the learner computed, so it
    is bitwise the learner's weights.

    Atomic: any problem (truncated, corrupt, wrong base, mismatched tensors, checksum) raises
    ``WeightsError`` and ``tensors`` is never modified; the result shares no memory with it.
    Compression runs on up to ``os.cpu_count()`` threads; call it from a worker thread in async code.
    """
    info, metadata = _read_header(blob)
    if info.kind == "diff" and info.base_version != expected_base:
        _fail(
            "base",
            f"the diff applies to version {info.base_version}, but the weights are at {expected_base}",
            info,
            expected_base,
        )
    stored = _load(blob, info, expected_base)
    claimed = metadata.pop("payload_checksum")
    if digest(stored, _canonical(metadata)) != claimed:
        _fail("checksum", "the blob's payload does not match its checksum", info, expected_base)
    if info.kind == "full":
        result = stored
        for name, tensor in result.items():
            check_name(name)
            dtype_name(name, tensor)
        if tensors:
            _check_same_structure(tensors, result, info, expected_base)
    else:
        result = _apply_diff(tensors, stored, metadata["manifest"], info, expected_base)
    if checksum(result) != info.checksum:
        _fail("checksum", "the weights after applying do not match the checksum", info, expected_base)
    return Snapshot(result, info.version)


# --- the diff ---------------------------------------------------------------------------------------------


def _apply_diff(
    tensors: Tensors, stored: dict[str, torch.Tensor], manifest: str, info: BlobInfo, expected: int | None
) -> dict[str, torch.Tensor]:
    def bad(problem: str) -> NoReturn:
        _fail("metadata", f"the diff's manifest {problem}", info, expected)

    try:
        parsed = json.loads(manifest)
    except ValueError:
        bad("is not JSON")
    if not isinstance(parsed, dict) or set(parsed) != {"tensors", "chunks"}:
        bad("lacks its tensors and chunks")
    entries, chunks = parsed["tensors"], parsed["chunks"]
    if not isinstance(entries, list) or not isinstance(chunks, dict):
        bad("has malformed tensors or chunks")
    names = sorted(tensors)
    listed = [entry[0] if isinstance(entry, list) and entry else None for entry in entries]
    if listed != names:
        missing = sorted(set(names) - set(map(str, listed)))
        extra = sorted(set(map(str, listed)) - set(names))
        _fail(
            "mismatch",
            f"the diff is for other tensors (missing {missing[:3]}, unknown {extra[:3]})",
            info,
            expected,
            tensor=next(iter(missing + extra), None),
        )
    changed: dict[str, list[str]] = {}
    for entry in entries:
        if len(entry) != 4 or entry[3] not in (0, 1) or not isinstance(entry[2], list):
            bad(f"has a malformed entry for {entry[0]!r}")
        name, dtype, shape, flag = entry
        tensor = tensors[name]
        if dtype != dtype_name(name, tensor) or shape != list(tensor.shape):
            _fail(
                "mismatch",
                f"{name}: the diff has {dtype} {shape}, the weights have "
                f"{dtype_name(name, tensor)} {list(tensor.shape)}",
                info,
                expected,
                tensor=name,
            )
        if flag:
            changed.setdefault(dtype, []).append(name)
    if set(chunks) != set(changed) or set(stored) != {f"delta.{dtype}" for dtype in changed}:
        bad("does not match the buffers in the blob")
    result = {
        name: on_cpu(name, tensors[name]).clone()
        for name, entry in zip(names, entries, strict=True)
        if not entry[3]
    }
    for dtype, members in changed.items():
        size = DTYPES[dtype].itemsize
        count = sum(tensors[name].numel() for name in members)
        buffer = stored[f"delta.{dtype}"]
        layout = chunks[dtype]
        if buffer.dtype != torch.uint8 or buffer.dim() != 1:
            bad(f"has a malformed buffer for {dtype}")
        try:
            delta = unpack(buffer.numpy().data, layout, size, count)
        except LayoutError as exc:
            if exc.reason == "corrupt":
                _fail("corrupt", f"the {dtype} buffer has {exc}", info, expected)
            bad(f"for {dtype} has {exc}")
        start = 0
        for name in members:
            old = bits(name, tensors[name])
            new = np.add(old, delta[start : start + old.size])  # wraps: exact mod 2**bits
            start += old.size
            result[name] = (
                torch.from_numpy(new.view(np.uint8)).view(DTYPES[dtype]).reshape(tensors[name].shape)
            )
    return {name: result[name] for name in names}


# --- blobs -----------------------------------------------------------------------------------------------


def _metadata(
    kind: Kind, version: int, base_version: int | None, encoding: str, weights: str, **extra: str
) -> dict[str, str]:
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "kind": kind,
        "version": str(version),
        "encoding": encoding,
        "checksum": weights,
        **extra,
    }
    if base_version is not None:
        metadata["base_version"] = str(base_version)
    return metadata


def _save(stored: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    metadata["payload_checksum"] = digest(stored, _canonical(metadata))
    return safetensors.torch.save(stored, metadata=metadata)


def _canonical(metadata: Mapping[str, str]) -> bytes:
    return json.dumps(sorted(metadata.items())).encode()


def _read_header(blob: bytes) -> tuple[BlobInfo, dict[str, str]]:
    def fail(reason: str, problem: str) -> NoReturn:
        raise WeightsError(f"unusable weights blob: {problem}", reason=reason)

    try:
        metadata = read_header(blob).metadata
    except HeaderError as exc:
        fail(exc.reason, str(exc))
    fields = Document(metadata, "metadata", fail=_metadata_error)
    if fields.string("format") != FORMAT or fields.string("format_version") != str(FORMAT_VERSION):
        fail("metadata", f"not {FORMAT} version {FORMAT_VERSION}")
    kind = fields.string("kind")
    encoding = {"full": FULL_ENCODING, "diff": DIFF_ENCODING}.get(kind)
    if encoding is None or fields.string("encoding") != encoding:
        fail("metadata", f"unknown kind {kind!r} or encoding {metadata.get('encoding')!r}")
    version = _integer(fields.string("version"))
    base = _integer(fields.string("base_version")) if kind == "diff" else None
    if kind == "diff":
        fields.string("manifest")  # read by ``_apply_diff``
    checksums = fields.string("checksum"), fields.string("payload_checksum")
    fields.close()
    if version is None or (kind == "diff" and (base is None or base >= version)):
        fail("metadata", "bad version numbers")
    if not all(len(value) == 64 and set(value) <= _HEX for value in checksums):
        fail("metadata", "checksums must be 64 hex digits")
    info = BlobInfo(
        kind=cast(Kind, kind),
        version=version,
        base_version=base,
        checksum=metadata["checksum"],
        encoding=encoding,
    )
    return info, dict(metadata)


def _load(blob: bytes, info: BlobInfo, expected: int | None) -> dict[str, torch.Tensor]:
    try:
        return safetensors.torch.load(bytes(blob))
    except Exception as exc:  # safetensors raises its own SafetensorError, and others on odd dtypes
        _fail("corrupt", f"the tensors cannot be read: {exc}", info, expected)


def _metadata_error(where: str, problem: str) -> WeightsError:
    return WeightsError(f"unusable weights blob: {where} {problem}", reason="metadata")


def _integer(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() and len(text) < 20 else None


def _check_version(value: int, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WeightsError(f"{what} must be an integer >= 0, not {value!r}", reason="metadata")


def _check_same_structure(
    old: Tensors, new: Tensors, info: BlobInfo | None = None, expected: int | None = None
) -> None:
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            where = "the new weights" if name in new else "the old weights"
            _fail("mismatch", f"{name} is only in {where}", info, expected, tensor=name)
        a, b = old[name], new[name]
        if dtype_name(name, a) != dtype_name(name, b) or a.shape != b.shape:
            _fail(
                "mismatch",
                f"{name}: {a.dtype} {list(a.shape)} against {b.dtype} {list(b.shape)}",
                info,
                expected,
                tensor=name,
            )


def _fail(
    reason: str, problem: str, info: BlobInfo | None, expected: int | None, tensor: str | None = None
) -> NoReturn:
    version = info.version if info else None
    base = info.base_version if info else None
    raise WeightsError(
        f"weights version {version}: {problem}" if info else problem,
        reason=reason,
        version=version,
        base_version=base,
        expected=expected,
        tensor=tensor,
    )


__all__ = [
    "BlobInfo",
    "Encoded",
    "Snapshot",
    "apply",
    "describe",
    "encode",
    "encode_diff",
    "encode_full",
    "DIFF_ENCODING",
    "FORMAT",
    "FORMAT_VERSION",
    "FULL_ENCODING",
]
