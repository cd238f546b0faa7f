"""The Flipper's RPC framing: ``[varint length][message]``, one place for its limits.

Both the text-shell side (``drivers/flipper/cli.py``, which hands a port over to the RPC) and the
RPC codec (``drivers/flipper/rpc.py``) frame with these. The emulator keeps its own copy of the
wire code on purpose, so a wrong constant here cannot pass its own test.
"""

from __future__ import annotations

MAX_LENGTH_BYTES = 5
"""A frame's length prefix fits a uint32: more than five bytes is a corrupt stream."""
MAX_FRAME = 64 * 1024
"""The largest frame the hub accepts (the firmware's own answers stay far below it)."""


class FrameError(ValueError):
    """A length prefix that no sane Flipper sends: the stream is corrupt or hostile."""


def encode_varint(value: int) -> bytes:
    """Protobuf base-128 varint: the length prefix of every RPC frame."""
    if value < 0:
        raise ValueError("varints here are unsigned")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_frame(buffer: bytes) -> tuple[bytes | None, bytes]:
    """One frame from the front of ``buffer``: (message, rest); (None, buffer) when more bytes
    are needed. FrameError for a length varint over MAX_LENGTH_BYTES or a length over
    MAX_FRAME."""
    length = shift = 0
    for index, byte in enumerate(buffer):
        if index >= MAX_LENGTH_BYTES:
            break
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if length > MAX_FRAME:
                raise FrameError(f"RPC frame of {length} bytes is over the {MAX_FRAME} limit")
            start = index + 1
            if len(buffer) - start < length:
                return None, buffer
            return buffer[start : start + length], buffer[start + length :]
    if len(buffer) >= MAX_LENGTH_BYTES:
        raise FrameError(f"RPC frame length varint is longer than {MAX_LENGTH_BYTES} bytes")
    return None, buffer
