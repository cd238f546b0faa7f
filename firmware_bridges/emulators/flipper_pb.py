"""The emulated Flipper's own protobuf wire code: decoding a request as the firmware does.

Why our own
-----------
The emulator must not share a codec with the driver it checks (``drivers/flipper/rpc.py``): a
wrong field number in one would then pass its own test. The official generated modules
(flipperzero-protobuf) check both from outside, in the tests; the emulator stays free of a
protobuf dependency and of the official package's pins.

What "does not decode" means here is the firmware's: ``applications/services/rpc/rpc.c``
(``rpc_session_worker``) decodes a whole PB.Main with nanopb, sub-messages included, so a broken
sub-message fails the whole frame; nanopb skips fields it does not know, so a ``content`` number
outside the oneof leaves ``which_content`` at 0, which rpc.c also treats as a decode failure
(as it does an empty frame). A known ``content`` without a handler is decoded fine and answered
``ERROR_NOT_IMPLEMENTED`` by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CONTENT_NUMBERS",
    "PbError",
    "Request",
    "decode_request",
    "pb_bytes",
    "pb_file",
    "pb_main",
    "pb_str",
    "pb_uint",
    "pb_varint",
]

CONTENT_NUMBERS = frozenset(range(4, 71))
"""The ``content`` oneof of PB.Main (flipper.proto): every number from 4 (empty) to 70
(desktop_status) is taken."""

VARINT, I64, LEN, I32 = 0, 1, 2, 5

# Sub-messages whose string field 1 (a path, a property key) the emulator reads: a varint
# there fails nanopb.
_PATH_REQUESTS = frozenset({7, 9, 14, 24, 28, 59, 61})
_BYTES_REQUESTS = frozenset({5})


class PbError(Exception):
    """A frame that does not decode."""


@dataclass(frozen=True)
class Request:
    """A decoded PB.Main request: its header and its ``content`` (number and fields)."""

    command_id: int
    has_next: bool
    content: int
    fields: dict[int, int | bytes]

    def text(self, number: int) -> str:
        value = self.fields.get(number, b"")
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""

    def data(self, number: int) -> bytes:
        value = self.fields.get(number, b"")
        return value if isinstance(value, bytes) else b""


def pb_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def pb_uint(number: int, value: int) -> bytes:
    """A varint field; proto3 leaves out zero."""
    return pb_varint(number << 3) + pb_varint(value) if value else b""


def pb_bytes(number: int, data: bytes) -> bytes:
    return pb_varint(number << 3 | LEN) + pb_varint(len(data)) + data


def pb_str(number: int, text: str) -> bytes:
    return pb_bytes(number, text.encode()) if text else b""


def pb_file(
    is_dir: bool,
    name: str = "",
    size: int = 0,
    data: bytes | None = None,
    md5sum: str = "",
) -> bytes:
    """PB_Storage.File: type 1 (FILE 0, DIR 1), name 2, size 3, data 4, md5sum 5 (protobuf
    0.19 on). nanopb leaves out the proto3 defaults except ``data``, a pointer field: it is
    written whenever the firmware set one, empty included (``data=b""``), and left out only
    when it is None."""
    return (
        pb_uint(1, int(is_dir))
        + pb_str(2, name)
        + pb_uint(3, size)
        + (pb_bytes(4, data) if data is not None else b"")
        + pb_str(5, md5sum)
    )


def pb_main(
    command_id: int, content: int, body: bytes, *, status: int = 0, has_next: bool = False
) -> bytes:
    """A framed PB.Main: ``[varint length]`` + command_id 1, command_status 2, has_next 3 and
    the ``content`` field (always present: the firmware sets ``which_content``)."""
    message = (
        pb_uint(1, command_id)
        + pb_uint(2, status)
        + pb_uint(3, int(has_next))
        + pb_bytes(content, body)
    )
    return pb_varint(len(message)) + message


def fields_of(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(number, wire type, value) of each field; PbError where nanopb's decoder fails."""
    found: list[tuple[int, int, int | bytes]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = 0
        for shift in range(0, 70, 7):
            if pos >= len(data):
                raise PbError("truncated varint")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise PbError("varint too long")

    while pos < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if number == 0:
            raise PbError("zero tag")
        if wire == VARINT:
            found.append((number, wire, varint()))
        elif wire == LEN:
            size = varint()
            if pos + size > len(data):
                raise PbError("truncated field")
            found.append((number, wire, data[pos : pos + size]))
            pos += size
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if pos + size > len(data):
                raise PbError("truncated field")
            found.append((number, wire, data[pos : pos + size]))
            pos += size
        else:
            raise PbError(f"wire type {wire}")
    return found


def decode_request(body: bytes) -> Request:
    """One PB.Main request, or PbError where the firmware's decode fails (see the module)."""
    command_id, has_next, content = 0, False, 0
    payload = b""
    for number, wire, value in fields_of(body):
        if number in (1, 2, 3):
            if wire != VARINT or not isinstance(value, int):
                raise PbError(f"field {number}: wrong wire type")
            if number == 1:
                command_id = value & 0xFFFFFFFF
            elif number == 3:
                has_next = bool(value)
        elif number in CONTENT_NUMBERS:
            if wire != LEN or not isinstance(value, bytes):
                raise PbError(f"content {number}: wrong wire type")
            content, payload = number, value
    if content == 0:
        raise PbError("no content")
    return Request(command_id, has_next, content, _content_fields(content, payload))


def _content_fields(content: int, payload: bytes) -> dict[int, int | bytes]:
    fields: dict[int, int | bytes] = {}
    for number, wire, value in fields_of(payload):
        wants_bytes = number == 1 and content in _PATH_REQUESTS | _BYTES_REQUESTS
        if wants_bytes and wire != LEN:
            raise PbError(f"content {content} field 1: wrong wire type")
        fields[number] = value
    return fields
