"""Frames on a byte stream: prefix, limits, ``encode`` / ``decode`` and ``FrameStream``."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import orjson
from anyio.abc import ByteReceiveStream, ByteSendStream, ByteStream, ObjectStream
from anyio.streams.stapled import StapledByteStream

from distrl.errors import FrameTooLarge, ProtocolMismatch, TruncatedFrame, WireError
from distrl.records.documents import DocumentError
from distrl.records.forms import Inbox, Outbox
from distrl.wire.codec import (
    integer_value,
    invalid,
    message_from_wire,
    message_to_wire,
    wire_error,
    wire_object,
)
from distrl.wire.messages import TYPE_NAMES, Message

PROTOCOL_VERSION = 8
"""Bumped on any change to the frame layout or to a message's fields."""
MAGIC = b"DRL"
PREFIX_BYTES = 12
MAX_FRAME_BYTES = 256 * 1024 * 1024
"""Default limit on a whole frame (prefix, header and attachments), bytes."""
MAX_HEADER_BYTES = 1024 * 1024
"""Default limit on a frame's JSON header, bytes."""

_PREFIX = struct.Struct(">3sBII")
_U32_MAX = 2**32 - 1
_JOIN_BYTES = 1024 * 1024
"""Frames up to this size go to the stream in one write; larger ones part by part, uncopied."""
_READ_BYTES = 1024 * 1024
"""The most bytes asked of the underlying stream in one receive."""


# -- frames -----------------------------------------------------------------------------------------


def _frame_parts(message: Message, max_frame_bytes: int, max_header_bytes: int) -> list[bytes]:
    """The frame for ``message`` as ``[prefix + header, attachment, ...]``, within the limits."""
    name = TYPE_NAMES.get(type(message))
    if name is None:
        raise WireError(
            f"cannot encode a {type(message).__name__}: not a wire message", reason="not a wire message"
        )
    outbox = Outbox()
    try:
        fields = message_to_wire(message, outbox)
        message_id = integer_value(message.id, f"{type(message).__name__}.id", minimum=0)
        header = {"type": name, "id": message_id, "att": [len(blob) for blob in outbox.blobs], **fields}
        header_bytes = orjson.dumps(header)
    except WireError:
        raise
    except DocumentError as exc:  # a record with no JSON form
        raise wire_error(exc) from exc
    except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError is a TypeError
        raise WireError(
            f"cannot encode {type(message).__name__}: {exc}", reason=f"{type(message).__name__}: {exc}"
        ) from exc
    attachments_len = sum(len(blob) for blob in outbox.blobs)
    _check_limits(len(header_bytes), attachments_len, max_frame_bytes, max_header_bytes)
    prefix = _PREFIX.pack(MAGIC, PROTOCOL_VERSION, len(header_bytes), attachments_len)
    return [prefix + header_bytes, *outbox.blobs]


def _check_limits(header_len: int, attachments_len: int, max_frame_bytes: int, max_header_bytes: int) -> None:
    size = PREFIX_BYTES + header_len + attachments_len
    for what, value, limit in (
        ("frame", size, max_frame_bytes),
        ("header", header_len, max_header_bytes),
        ("header", header_len, _U32_MAX),
        ("attachments", attachments_len, _U32_MAX),
    ):
        if value > limit:
            problem = f"{what} of {value} bytes is over the limit of {limit} bytes"
            raise FrameTooLarge(f"{problem}", reason=problem, size=value, limit=limit)


def _read_prefix(prefix: bytes | bytearray | memoryview, max_frame_bytes: int, max_header_bytes: int) -> int:
    """Check the prefix at the start of ``prefix``; return the whole frame's size in bytes."""
    magic, version, header_len, attachments_len = _PREFIX.unpack_from(prefix)
    if magic != MAGIC:
        problem = f"a frame must start with {MAGIC!r}, not {bytes(magic)!r}"
        raise WireError(f"not a distrl frame: {problem}", reason=problem)
    if version != PROTOCOL_VERSION:
        problem = f"the peer speaks protocol version {version}, this side {PROTOCOL_VERSION}"
        raise ProtocolMismatch(problem, reason=problem, ours=PROTOCOL_VERSION, theirs=version)
    _check_limits(header_len, attachments_len, max_frame_bytes, max_header_bytes)
    return int(PREFIX_BYTES + header_len + attachments_len)


def _header_len(frame: memoryview) -> int:
    return int(_PREFIX.unpack_from(frame)[2])


def encode(
    message: Message, *, max_frame_bytes: int = MAX_FRAME_BYTES, max_header_bytes: int = MAX_HEADER_BYTES
) -> bytes:
    """The frame for ``message``.

    Raises ``FrameTooLarge`` past a limit and ``WireError`` for a value with no wire form (a wrong
    type, a non-finite float, an integer outside 64 bits); the error names the field.
    """
    return b"".join(_frame_parts(message, max_frame_bytes, max_header_bytes))


def decode(
    frame: bytes | bytearray | memoryview,
    *,
    max_frame_bytes: int = MAX_FRAME_BYTES,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> Message:
    """The message in ``frame``, which must be exactly one whole frame.

    Raises ``WireError`` or one of its subclasses (``FrameTooLarge``, ``TruncatedFrame``,
    ``ProtocolMismatch``) for anything wrong with it, and no other exception.
    """
    view = memoryview(frame)
    view = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")
    if len(view) < PREFIX_BYTES:
        problem = f"a frame needs {PREFIX_BYTES} prefix bytes, got {len(view)}"
        raise TruncatedFrame(problem, reason=problem, expected=PREFIX_BYTES, received=len(view))
    size = _read_prefix(view, max_frame_bytes, max_header_bytes)
    if len(view) < size:
        problem = f"the frame announces {size} bytes, got {len(view)}"
        raise TruncatedFrame(problem, reason=problem, expected=size, received=len(view))
    if len(view) > size:
        problem = f"{len(view) - size} bytes follow the end of the frame"
        raise WireError(problem, reason=problem)
    return _decode_checked(view)


def _decode_checked(view: memoryview) -> Message:
    """The message in a whole frame of bytes whose prefix was checked against the limits."""
    header_end = PREFIX_BYTES + _header_len(view)
    try:
        return _decode_body(view[PREFIX_BYTES:header_end], view[header_end:])
    except WireError:
        raise
    except DocumentError as exc:  # a record that is not one
        raise wire_error(exc) from exc
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise WireError(f"malformed frame: {exc!r}", reason=f"malformed frame: {exc!r}") from exc


def _decode_body(header: memoryview, attachments: memoryview) -> Message:
    try:
        data = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise invalid("header", f"is not JSON: {exc}") from exc
    obj = wire_object(data, "header")
    name = obj.string("type")
    message_id = obj.integer("id", minimum=0)
    lengths = [
        integer_value(length, f"header.att[{i}]", minimum=0) for i, length in enumerate(obj.array("att"))
    ]
    if sum(lengths) != len(attachments):
        raise invalid("header.att", f"sums to {sum(lengths)} bytes, but the frame has {len(attachments)}")
    inbox = Inbox(attachments, lengths, "the frame")
    message = message_from_wire(obj, name, message_id, inbox)
    obj.close()
    inbox.close("header.att")
    return message


# -- streams ----------------------------------------------------------------------------------------


class FrameStream(ObjectStream[Message]):
    """Messages over one byte stream, a frame each.

    ``send`` may be called from many tasks at once: frames never interleave. A send that is cancelled
    or fails after it began writing leaves a partial frame on the stream, so later sends raise
    ``anyio.BrokenResourceError``. ``receive`` is cancel-safe: the bytes of a frame read so far are
    kept for the next call. A clean end of stream between frames is ``anyio.EndOfStream`` (and ends
    ``async for``); an end inside a frame is ``TruncatedFrame``. After a prefix that cannot be trusted
    (bad magic, other version, over a limit) the stream is out of step, and later receives raise
    ``anyio.BrokenResourceError``; a frame with a bad header was read whole and does not break it.
    """

    def __init__(
        self,
        stream: ByteStream,
        *,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        max_header_bytes: int = MAX_HEADER_BYTES,
    ) -> None:
        self._stream = stream
        self.max_frame_bytes = max_frame_bytes
        """Limit on each frame sent or received, bytes."""
        self.max_header_bytes = max_header_bytes
        """Limit on each frame's JSON header, bytes."""
        self._send_lock = anyio.Lock()
        self._receive_lock = anyio.Lock()
        self._buffer = bytearray()
        self._send_broken = False
        self._receive_broken: WireError | None = None

    @classmethod
    def from_pair(
        cls,
        *,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        max_header_bytes: int = MAX_HEADER_BYTES,
    ) -> FrameStream:
        """Messages over two one-way streams, such as a subprocess's stdout and stdin."""
        stream = StapledByteStream(send_stream=send, receive_stream=receive)
        return cls(stream, max_frame_bytes=max_frame_bytes, max_header_bytes=max_header_bytes)

    async def send(self, item: Message) -> None:
        parts = _frame_parts(item, self.max_frame_bytes, self.max_header_bytes)
        if sum(len(part) for part in parts) <= _JOIN_BYTES:
            parts = [b"".join(parts)]
        async with self._send_lock:
            if self._send_broken:
                raise anyio.BrokenResourceError("an earlier send stopped in the middle of a frame")
            self._send_broken = True
            for part in parts:
                await self._stream.send(part)
            self._send_broken = False

    async def receive(self) -> Message:
        async with self._receive_lock:
            if self._receive_broken is not None:
                raise anyio.BrokenResourceError(
                    f"the stream is out of step after: {self._receive_broken}"
                ) from self._receive_broken
            if not await self._fill(PREFIX_BYTES):
                if not self._buffer:
                    raise anyio.EndOfStream
                raise self._truncated(PREFIX_BYTES)
            try:
                size = _read_prefix(self._buffer, self.max_frame_bytes, self.max_header_bytes)
            except WireError as exc:
                self._receive_broken = exc
                raise
            if not await self._fill(size):
                raise self._truncated(size)
            frame, self._buffer = self._buffer, bytearray()  # ``_fill`` reads no further than the frame
        return _decode_checked(memoryview(frame))

    async def _fill(self, size: int) -> bool:
        """Read until the buffer holds ``size`` bytes, and no more; False if the stream ends first."""
        while len(self._buffer) < size:
            try:
                chunk = await self._stream.receive(min(size - len(self._buffer), _READ_BYTES))
            except anyio.EndOfStream:
                return False
            self._buffer += chunk
        return True

    def _truncated(self, expected: int) -> TruncatedFrame:
        received = len(self._buffer)
        problem = f"the stream ended {received} bytes into a frame of {expected} bytes"
        return TruncatedFrame(problem, reason=problem, expected=expected, received=received)

    async def send_eof(self) -> None:
        async with self._send_lock:
            await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self._stream.extra_attributes
