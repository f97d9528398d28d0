"""The replay buffer's checkpoint file: written whole and atomically, read back with every byte checked.

No pickle anywhere::

    JSON header line (the buffer's settings and state, with ``format`` and ``version``) b"\\n"
    per trajectory, oldest first:  key u64 | priority f64 | frame length u64 | CRC-32 u32 | frame
    frame = distrl.records.forms.pack_trajectory(t): the trajectory's JSON form and its screens;
    the CRC-32 covers the 24 bytes before it and the frame

Integers are big-endian. Each frame stores its own screenshots (the buffer rebuilds their sharing). The
header is read by the one typed reader of ``distrl.records``, and may hold no field its reader does not
take. Version 3 framed each trajectory as a wire message (``TrajectoryReport``); ``read`` refuses it, and
every other version, by name.

This module owns the layout (framing, checksums, limits, the atomic write, the errors that say where a
file is wrong); which fields the header holds, and what makes a trajectory or key acceptable, is the
buffer's (``distrl.learner.replay``).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from distrl.errors import CheckpointError
from distrl.records import Document, DocumentError, Trajectory
from distrl.records.forms import pack_trajectory, unpack_trajectory

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_FRAME_BYTES",
    "MAX_HEADER_BYTES",
    "Corrupt",
    "Reader",
    "random_state_from_json",
    "random_state_to_json",
    "read",
    "write",
]

FORMAT = "distrl.replay"
"""The ``format`` field of a checkpoint's header."""
FORMAT_VERSION = 4
"""Bumped on any change to the file layout; ``read`` refuses other versions."""
MAX_FRAME_BYTES = 1024**3
"""Limit on one trajectory's frame (its packed form) in a checkpoint, bytes."""
MAX_HEADER_BYTES = 64 * 1024**2
"""Limit on the file's header line, bytes."""

_FIELDS = struct.Struct(">QdQ")  # key, priority, frame length
_CRC = struct.Struct(">I")  # CRC-32 of the fields above and the frame


class Corrupt(Exception):
    """A checkpoint's content is wrong; the message says what, and ``read`` adds which file."""


def write(path: Path, header: dict[str, Any], entries: Iterable[tuple[int, float, Trajectory]]) -> None:
    """Write ``header`` (given ``format`` and ``version`` here) and ``entries`` (key, priority,
    trajectory, oldest first) to ``path`` atomically: a crash leaves the previous file or the new one.

    The file is written next to ``path`` under a temporary name, flushed to disk, then renamed over it.
    ``CheckpointError`` (``reason`` ``io``) if it cannot be written, ``corrupt`` if a trajectory has no
    JSON form (a non-finite float) or packs to more than ``MAX_FRAME_BYTES``; either way ``path`` is
    untouched.
    """
    head = {"format": FORMAT, "version": FORMAT_VERSION, **header}
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(json.dumps(head, allow_nan=False, separators=(",", ":")).encode() + b"\n")
                for key, priority, trajectory in entries:
                    frame = _encode(trajectory, path)
                    fields = _FIELDS.pack(key, priority, len(frame))
                    file.write(fields + _CRC.pack(zlib.crc32(frame, zlib.crc32(fields))))
                    file.write(frame)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _fsync_folder(path.parent)
    except OSError as exc:
        raise CheckpointError(
            f"cannot write the replay buffer to {path}: {exc.strerror or exc}", path=str(path), reason="io"
        ) from exc


class Reader:
    """An open checkpoint: its ``header`` (format and version already checked and taken), then its
    trajectories (``trajectories``)."""

    def __init__(self, file: IO[bytes], header: Document) -> None:
        self._file = file
        self.header = header
        """The header's other fields, for the buffer to take; its reader raises ``Corrupt``."""

    def trajectories(self, count: int) -> Iterator[tuple[int, float, Trajectory]]:
        """The file's ``count`` trajectories as (key, priority, trajectory), oldest first: each frame's
        length within the limit and its checksum right, keys strictly increasing, and nothing after the
        last (``Corrupt`` otherwise)."""
        last = -1
        for i in range(count):
            fields = self._exactly(_FIELDS.size, i)
            key, priority, length = _FIELDS.unpack(fields)
            (crc,) = _CRC.unpack(self._exactly(_CRC.size, i))
            if length > MAX_FRAME_BYTES:
                raise Corrupt(f"trajectory {i} claims {length} bytes, over the limit of {MAX_FRAME_BYTES}")
            frame = self._exactly(length, i)
            if zlib.crc32(frame, zlib.crc32(fields)) != crc:
                raise Corrupt(f"the bytes of trajectory {i} fail their CRC-32 check")
            try:
                trajectory = unpack_trajectory(frame)
            except DocumentError as exc:
                raise Corrupt(f"trajectory {i} cannot be decoded ({exc})") from exc
            if key <= last:
                raise Corrupt(f"trajectory {i} has key {key}, out of order")
            last = key
            yield key, priority, trajectory
        if self._file.read(1):
            raise Corrupt(f"bytes follow the last of its {count} trajectories")

    def _exactly(self, size: int, index: int) -> bytes:
        data = self._file.read(size)
        if len(data) != size:
            raise Corrupt(f"it ends inside trajectory {index} ({len(data)} of {size} bytes)")
        return data


@contextlib.contextmanager
def read(path: Path) -> Iterator[Reader]:
    """The checkpoint at ``path``, open. Every error inside the block, the reader's and the caller's
    ``Corrupt``, becomes a ``CheckpointError`` naming ``path``: ``reason`` ``missing`` if there is no such
    file, ``io`` if it cannot be read, ``corrupt`` if it is not a whole, intact replay checkpoint."""
    try:
        with path.open("rb") as file:
            yield Reader(file, _header(file))
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"replay checkpoint {path} does not exist", path=str(path), reason="missing"
        ) from exc
    except OSError as exc:
        raise CheckpointError(
            f"cannot read replay checkpoint {path}: {exc.strerror or exc}", path=str(path), reason="io"
        ) from exc
    except Corrupt as exc:
        raise CheckpointError(
            f"replay checkpoint {path} is corrupt: {exc}", path=str(path), reason="corrupt"
        ) from exc


def _header(file: IO[bytes]) -> Document:
    line = file.readline(MAX_HEADER_BYTES + 1)
    if not line.endswith(b"\n"):
        raise Corrupt("its header line is cut short or too long")
    try:
        header = json.loads(line)
    except ValueError as exc:
        raise Corrupt(f"its header is not JSON ({exc})") from exc
    head = Document(header, "", fail=_header_error)
    if not head.has("format") or head.take("format") != FORMAT:
        raise Corrupt(f"its header does not name the format {FORMAT!r}")
    version = head.take("version") if head.has("version") else None
    if type(version) is not int or version != FORMAT_VERSION:
        older = isinstance(version, int) and version < FORMAT_VERSION
        raise Corrupt(
            f"it has format version {version!r}, not {FORMAT_VERSION}"
            + (": an older distrl wrote it, and this one cannot read it" if older else "")
        )
    return head


def _header_error(where: str, problem: str) -> Corrupt:
    """The error for a header field that is missing or not what it must be (the typed reader's ``fail``)."""
    return Corrupt(f"its header's {where} {problem}" if where else f"its header {problem}")


def _encode(trajectory: Trajectory, path: Path) -> bytes:
    """``trajectory``'s frame; ``CheckpointError`` where it has none, or one ``read`` would refuse."""
    try:
        frame = pack_trajectory(trajectory)
    except DocumentError as exc:
        problem = f"has no JSON form ({exc})"
    else:
        if len(frame) <= MAX_FRAME_BYTES:
            return frame
        problem = f"packs to {len(frame)} bytes, over the limit of {MAX_FRAME_BYTES}"
    raise CheckpointError(
        f"cannot save the replay buffer to {path}: trajectory {trajectory.id!r} {problem}",
        path=str(path),
        reason="corrupt",
    )


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable; some systems cannot open a folder, and that is not an error."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def random_state_to_json(state: tuple[Any, ...]) -> list[Any]:
    """A ``random.Random``'s ``getstate()`` as JSON: [version, [625 integers], gauss_next]."""
    version, internal, gauss_next = state
    return [version, list(internal), gauss_next]


def random_state_from_json(value: object) -> tuple[Any, ...]:
    """The ``setstate`` argument ``random_state_to_json`` wrote; ``TypeError`` or ``ValueError`` for
    anything else (``setstate`` itself checks the numbers)."""
    if not (isinstance(value, list) and len(value) == 3 and isinstance(value[1], list)):
        raise ValueError("it must be [version, [625 integers], gauss_next]")
    version, internal, gauss_next = value
    if not all(type(v) is int for v in (version, *internal)):
        raise TypeError("its version and state must be integers")
    if not (gauss_next is None or type(gauss_next) is float):
        raise TypeError("its gauss_next must be null or a number")
    return (version, tuple(internal), gauss_next)
