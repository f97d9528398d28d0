"""The messages between the learner and its workers, and the frames that carry them on a byte stream.

Every message is one frame: a fixed 12-byte prefix, a JSON header, then the binary attachments the
header refers to. Integers in the prefix are unsigned and big-endian::

    offset 0        3        4             8             12             12+H            12+H+A
           +--------+--------+-------------+-------------+--------------+---------------+
           | magic  | proto  | header len  | attachments |   header     |  attachments  |
           | "DRL"  | u8 = 2 |   u32 = H   |  u32 = A    | H bytes JSON | A bytes, back |
           |        |        |             |             | (an object)  | to back       |
           +--------+--------+-------------+-------------+--------------+---------------+

The header holds ``type`` (which message), ``id`` (assigned by the sender, >= 0; acks and error
reports name it in ``ref``), ``att`` (the length of each attachment in order, summing to A) and the
message's own fields. Bulk binary data never goes in the header: every screenshot and the weights blob
is an attachment, and its field in the header is the attachment's index. A heartbeat, whole::

    b"DRL\\x02" b"\\x00\\x00\\x00\\x3c" b"\\x00\\x00\\x00\\x00"
    b'{"type":"heartbeat","id":3,"att":[],"seq":1,"sent_at_s":2.5}'

Limits (``max_frame_bytes`` on the whole frame, ``max_header_bytes`` on H) are checked from the prefix
alone, before a byte of the body is read or allocated. ``decode`` trusts nothing: every field must be
present with its JSON type (a boolean is not an integer), no field may be unknown, every attachment
must be referred to exactly once, and records must pass their own validation. Whatever is wrong, the
caller gets a ``WireError`` (or a subclass) whose ``reason`` names the field, never another exception.
Non-finite floats have no JSON form and are refused by ``encode``.

``FrameStream`` carries messages over an anyio byte stream, or over two one-way streams such as a
subprocess's pipes (``FrameStream.from_pair``).
"""

from distrl.wire.frames import (
    MAGIC,
    MAX_FRAME_BYTES,
    MAX_HEADER_BYTES,
    PREFIX_BYTES,
    PROTOCOL_VERSION,
    FrameStream,
    decode,
    encode,
)
from distrl.wire.messages import (
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    Heartbeat,
    Hello,
    Message,
    Setup,
    Shutdown,
    StepReport,
    TrajectoryReport,
    Weights,
)

__all__ = [
    # framing
    "PROTOCOL_VERSION",
    "MAGIC",
    "PREFIX_BYTES",
    "MAX_FRAME_BYTES",
    "MAX_HEADER_BYTES",
    "encode",
    "decode",
    "FrameStream",
    # messages
    "Message",
    "Hello",
    "Heartbeat",
    "Weights",
    "EpisodeRequest",
    "StepReport",
    "TrajectoryReport",
    "EpisodeEnd",
    "Ack",
    "ErrorReport",
    "Setup",
    "Shutdown",
]
