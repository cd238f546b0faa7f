"""The Flipper Zero's protobuf RPC over its USB serial port: a wire codec and a session.

It is one module on purpose: the codec holds exactly the messages the session sends and reads,
each beside the session code that uses it.

Written for exactly the PB.Main messages the hub uses (no protobuf package): the field numbers
are flipperdevices/flipperzero-protobuf's ``flipper.proto``, ``system.proto`` and
``storage.proto`` (summarised in ``docs/hardware.md``). After
``start_rpc_session\\r`` the port carries ``[varint length][PB.Main]`` frames; a response echoes
its request's ``command_id`` and sets ``has_next`` on every part of a multi-part answer but the
last (device and power info come one key a message, a listing at most 8 files a message, a read
at most 512 bytes a message). ``stop_session`` is answered by ``Empty`` and the port is back in
the text shell.

Decoding skips fields it does not know (proto3 rules) and turns every malformed input into an
``RpcError``, never an ``IndexError``. A truncated frame, an oversized length or a frame that
does not decode leaves the stream at an unknown place: that ``RpcError`` has ``broken=True`` and
the owner of the port should close and reopen it (the firmware then starts a fresh text shell).

The firmware gives up on a session itself when a request does not decode (line noise, an empty
frame): ``applications/services/rpc/rpc.c`` answers ``Empty`` with ``command_id`` 0 and
``ERROR_DECODE``, then closes the session (USB: back to the text shell). ``call`` turns that
answer into ``RpcSessionClosed``; the request may be sent again in a new session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, cast

from drivers.flipper.cli import CliError
from drivers.flipper.wire import (
    MAX_FRAME,
    MAX_LENGTH_BYTES,
    FrameError,
    decode_frame,
    encode_varint,
)
from drivers.transports.serial import NoPrompt, SerialLine

# --- wire types and limits -------------------------------------------------------------------

VARINT, I64, LEN, I32 = 0, 1, 2, 5
MAX_VARINT_BYTES = 10

# PB.CommandStatus (flipper.proto)
STATUS_NAMES: dict[int, str] = {
    0: "OK",
    1: "ERROR",
    2: "ERROR_DECODE",
    3: "ERROR_NOT_IMPLEMENTED",
    4: "ERROR_BUSY",
    5: "ERROR_STORAGE_NOT_READY",
    6: "ERROR_STORAGE_EXIST",
    7: "ERROR_STORAGE_NOT_EXIST",
    8: "ERROR_STORAGE_INVALID_PARAMETER",
    9: "ERROR_STORAGE_DENIED",
    10: "ERROR_STORAGE_INVALID_NAME",
    11: "ERROR_STORAGE_INTERNAL",
    12: "ERROR_STORAGE_NOT_IMPLEMENTED",
    13: "ERROR_STORAGE_ALREADY_OPEN",
    14: "ERROR_CONTINUOUS_COMMAND_INTERRUPTED",
    15: "ERROR_INVALID_PARAMETERS",
    16: "ERROR_APP_CANT_START",
    17: "ERROR_APP_SYSTEM_LOCKED",
    18: "ERROR_STORAGE_DIR_NOT_EMPTY",
    19: "ERROR_VIRTUAL_DISPLAY_ALREADY_STARTED",
    20: "ERROR_VIRTUAL_DISPLAY_NOT_STARTED",
    21: "ERROR_APP_NOT_RUNNING",
    22: "ERROR_APP_CMD_ERROR",
}
# The same words the CLI prints for storage errors (filesystem_api_defines.c).
STORAGE_WORDS: dict[int, str] = {
    5: "filesystem not ready",
    6: "file/dir already exist",
    7: "file/dir not exist",
    8: "invalid parameter",
    9: "access denied",
    10: "invalid name/path",
    11: "internal error",
    12: "function not implemented",
    13: "file/dir already opened",
    18: "directory not empty",
}


class RpcError(CliError):
    """The RPC exchange failed. ``status`` is the device's CommandStatus when it answered with
    one; ``broken`` means the byte stream can no longer be trusted (reopen the port)."""

    def __init__(self, message: str, *, status: int | None = None, broken: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.broken = broken


class RpcSessionClosed(RpcError):
    """The Flipper closed the session after a request it could not decode."""


ERROR_DECODE = 2


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, f"status {status}")


# --- messages ----------------------------------------------------------------------------------

FILE, DIR = 0, 1


@dataclass(frozen=True)
class File:
    """PB_Storage.File: type 1 (FILE=0, DIR=1), name 2, size 3, data 4."""

    type: int = FILE
    name: str = ""
    size: int = 0
    data: bytes = b""

    @property
    def is_dir(self) -> bool:
        return self.type == DIR


@dataclass(frozen=True)
class Empty:
    pass


@dataclass(frozen=True)
class StopSession:
    pass


@dataclass(frozen=True)
class PingRequest:
    data: bytes = b""


@dataclass(frozen=True)
class PingResponse:
    data: bytes = b""


@dataclass(frozen=True)
class DeviceInfoRequest:
    pass


@dataclass(frozen=True)
class AudiovisualAlertRequest:
    """Beep, blink and vibrate: what "find my Flipper" asks for (Main field 38)."""


@dataclass(frozen=True)
class DeviceInfoResponse:
    key: str = ""
    value: str = ""


@dataclass(frozen=True)
class PowerInfoRequest:
    pass


@dataclass(frozen=True)
class PowerInfoResponse:
    key: str = ""
    value: str = ""


@dataclass(frozen=True)
class ListRequest:
    path: str = ""


@dataclass(frozen=True)
class ListResponse:
    files: tuple[File, ...] = ()


@dataclass(frozen=True)
class ReadRequest:
    path: str = ""


@dataclass(frozen=True)
class ReadResponse:
    file: File | None = None


@dataclass(frozen=True)
class StatRequest:
    path: str = ""


@dataclass(frozen=True)
class StatResponse:
    file: File | None = None


@dataclass(frozen=True)
class Unknown:
    """A ``content`` field this codec has no message for: its number and raw bytes."""

    number: int
    raw: bytes = b""


Content = (
    Empty
    | StopSession
    | PingRequest
    | PingResponse
    | DeviceInfoRequest
    | DeviceInfoResponse
    | AudiovisualAlertRequest
    | PowerInfoRequest
    | PowerInfoResponse
    | ListRequest
    | ListResponse
    | ReadRequest
    | ReadResponse
    | StatRequest
    | StatResponse
    | Unknown
)


@dataclass(frozen=True)
class Main:
    """PB.Main: command_id 1, command_status 2, has_next 3, oneof content (4 and up)."""

    command_id: int = 0
    command_status: int = 0
    has_next: bool = False
    content: Content | None = field(default=None)


# --- the wire ----------------------------------------------------------------------------------


def read_varint(buffer: bytes, pos: int, *, max_bytes: int = MAX_VARINT_BYTES) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``; RpcError if cut short or too long."""
    value = shift = 0
    for index in range(max_bytes):
        if pos + index >= len(buffer):
            raise RpcError("truncated varint")
        byte = buffer[pos + index]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos + index + 1
    raise RpcError(f"varint longer than {max_bytes} bytes")


def iter_fields(buffer: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field: an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(buffer):
        key, pos = read_varint(buffer, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise RpcError("field number 0")
        if wire == VARINT:
            value, pos = read_varint(buffer, pos)
            yield number, wire, value
        elif wire == LEN:
            length, pos = read_varint(buffer, pos)
            if length > len(buffer) - pos:
                raise RpcError(
                    f"field {number}: {length} bytes announced, {len(buffer) - pos} left"
                )
            yield number, wire, bytes(buffer[pos : pos + length])
            pos += length
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if size > len(buffer) - pos:
                raise RpcError(f"field {number}: truncated fixed-width value")
            yield number, wire, bytes(buffer[pos : pos + size])
            pos += size
        else:
            raise RpcError(f"field {number}: unsupported wire type {wire}")


def _key(number: int, wire: int) -> bytes:
    return encode_varint(number << 3 | wire)


def _varint_field(number: int, value: int) -> bytes:
    return _key(number, VARINT) + encode_varint(value) if value else b""


def _bytes_field(number: int, data: bytes, *, always: bool = False) -> bytes:
    if not data and not always:
        return b""
    return _key(number, LEN) + encode_varint(len(data)) + data


def _text_field(number: int, text: str) -> bytes:
    return _bytes_field(number, text.encode())


def _expect_varint(number: int, wire: int, value: int | bytes) -> int:
    if wire != VARINT or not isinstance(value, int):
        raise RpcError(f"field {number}: expected a varint, got wire type {wire}")
    return value


def _expect_bytes(number: int, wire: int, value: int | bytes) -> bytes:
    if wire != LEN or not isinstance(value, bytes):
        raise RpcError(f"field {number}: expected length-delimited bytes, got wire type {wire}")
    return value


def _text(number: int, wire: int, value: int | bytes) -> str:
    return _expect_bytes(number, wire, value).decode("utf-8", "replace")


def encode_file(file: File) -> bytes:
    return (
        _varint_field(1, file.type)
        + _text_field(2, file.name)
        + _varint_field(3, file.size)
        + _bytes_field(4, file.data)
    )


def decode_file(buffer: bytes) -> File:
    kind, name, size, data = FILE, "", 0, b""
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            kind = _expect_varint(number, wire, value) & 0xFFFFFFFF
        elif number == 2:
            name = _text(number, wire, value)
        elif number == 3:
            size = _expect_varint(number, wire, value) & 0xFFFFFFFF
        elif number == 4:
            data = _expect_bytes(number, wire, value)
    return File(kind, name, size, data)


def _one_text(buffer: bytes) -> str:
    """Messages whose only field we read is string 1 (requests carrying a path)."""
    found = ""
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            found = _text(number, wire, value)
    return found


def _one_bytes(buffer: bytes) -> bytes:
    found = b""
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            found = _expect_bytes(number, wire, value)
    return found


def _key_value(buffer: bytes) -> tuple[str, str]:
    key = value_text = ""
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            key = _text(number, wire, value)
        elif number == 2:
            value_text = _text(number, wire, value)
    return key, value_text


def _one_file(buffer: bytes) -> File | None:
    found = None
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            found = decode_file(_expect_bytes(number, wire, value))
    return found


def _files(buffer: bytes) -> tuple[File, ...]:
    return tuple(
        decode_file(_expect_bytes(number, wire, value))
        for number, wire, value in iter_fields(buffer)
        if number == 1
    )


def _validated(buffer: bytes) -> None:
    for _ in iter_fields(buffer):
        pass


def _encode_content(content: Content) -> tuple[int, bytes]:
    """(Main field number, encoded message) of a content message."""
    match content:
        case Empty():
            return 4, b""
        case StopSession():
            return 19, b""
        case PingRequest(data):
            return 5, _bytes_field(1, data)
        case PingResponse(data):
            return 6, _bytes_field(1, data)
        case DeviceInfoRequest():
            return 32, b""
        case AudiovisualAlertRequest():
            return 38, b""
        case DeviceInfoResponse(key, value):
            return 33, _text_field(1, key) + _text_field(2, value)
        case PowerInfoRequest():
            return 44, b""
        case PowerInfoResponse(key, value):
            return 45, _text_field(1, key) + _text_field(2, value)
        case ListRequest(path):
            return 7, _text_field(1, path)
        case ListResponse(files):
            return 8, b"".join(_bytes_field(1, encode_file(f), always=True) for f in files)
        case ReadRequest(path):
            return 9, _text_field(1, path)
        case ReadResponse(file):
            return 10, b"" if file is None else _bytes_field(1, encode_file(file), always=True)
        case StatRequest(path):
            return 24, _text_field(1, path)
        case StatResponse(file):
            return 25, b"" if file is None else _bytes_field(1, encode_file(file), always=True)
        case Unknown(number, raw):
            return number, raw
    raise TypeError(f"not an RPC content message: {content!r}")  # pragma: no cover


def _no_fields(make: Callable[[], Content]) -> Callable[[bytes], Content]:
    def decode(buffer: bytes) -> Content:
        _validated(buffer)  # fields of a later protocol version are skipped, garbage is not
        return make()

    return decode


_DECODERS: dict[int, Callable[[bytes], Content]] = {
    4: _no_fields(Empty),
    19: _no_fields(StopSession),
    5: lambda b: PingRequest(_one_bytes(b)),
    6: lambda b: PingResponse(_one_bytes(b)),
    32: _no_fields(DeviceInfoRequest),
    38: _no_fields(AudiovisualAlertRequest),
    33: lambda b: DeviceInfoResponse(*_key_value(b)),
    44: _no_fields(PowerInfoRequest),
    45: lambda b: PowerInfoResponse(*_key_value(b)),
    7: lambda b: ListRequest(_one_text(b)),
    8: lambda b: ListResponse(_files(b)),
    9: lambda b: ReadRequest(_one_text(b)),
    10: lambda b: ReadResponse(_one_file(b)),
    24: lambda b: StatRequest(_one_text(b)),
    25: lambda b: StatResponse(_one_file(b)),
}
CONTENT_FIELDS = frozenset(range(4, 71))
"""The numbers of the ``content`` oneof in flipper.proto (4-70)."""


def encode_main(message: Main) -> bytes:
    body = (
        _varint_field(1, message.command_id)
        + _varint_field(2, message.command_status)
        + _varint_field(3, int(message.has_next))
    )
    if message.content is not None:
        number, payload = _encode_content(message.content)
        body += _bytes_field(number, payload, always=True)
    return body


def decode_main(buffer: bytes) -> Main:
    """One PB.Main; unknown fields are skipped, an unknown content field kept as ``Unknown``."""
    command_id = status = 0
    has_next = False
    content: Content | None = None
    for number, wire, value in iter_fields(buffer):
        if number == 1:
            command_id = _expect_varint(number, wire, value) & 0xFFFFFFFF
        elif number == 2:
            status = _expect_varint(number, wire, value) & 0xFFFFFFFF
        elif number == 3:
            has_next = bool(_expect_varint(number, wire, value))
        elif number in CONTENT_FIELDS:
            payload = _expect_bytes(number, wire, value)
            decoder = _DECODERS.get(number)
            content = decoder(payload) if decoder else Unknown(number, payload)
    return Main(command_id, status, has_next, content)


def frame(message: Main) -> bytes:
    """``[varint length][PB.Main]``, what goes on the wire."""
    body = encode_main(message)
    return encode_varint(len(body)) + body


def unframe(buffer: bytes) -> tuple[Main | None, bytes]:
    """One framed PB.Main from the front of ``buffer``: (message, rest), or (None, buffer)
    when more bytes are needed; RpcError for an oversized length or a body that won't decode."""
    try:
        body, rest = decode_frame(buffer)
    except FrameError as exc:
        raise RpcError(str(exc), broken=True) from None
    if body is None:
        return None, buffer
    return decode_main(body), rest


# --- the session -------------------------------------------------------------------------------


class RpcLine(Protocol):
    """What a session needs of its byte pipe: a ``SerialLine``, or a ``BleSerial`` (BLE)."""

    async def write(self, data: bytes) -> None: ...

    async def read_exactly(self, size: int, *, within_s: float) -> bytes: ...


class RpcSession:
    """One RPC session on an open ``SerialLine`` sitting at the shell's prompt, or on any
    ``RpcLine`` whose session is already open (``already_open``: the Flipper's BLE serial
    service carries only RPC, opened by the firmware when the host connects).

    ``start()`` switches the port to RPC (a no-op when ``already_open``), ``stop()`` back to the
    text shell (USB only). Each call holds the line (``SerialLine.transaction`` when the line
    has one, else a lock of the session's own) for its whole exchange. ``within_s`` bounds the
    wait for each frame. After an ``RpcError`` with ``broken`` set, or any failure of the line
    mid-exchange, the session is dead (``broken``).
    """

    def __init__(
        self,
        line: SerialLine | RpcLine,
        *,
        within_s: float = 5.0,
        prompt: bytes = b">: ",
        already_open: bool = False,
    ) -> None:
        self._line = line
        self._within_s = within_s
        self._prompt = prompt
        self._next_id = 1
        self._lock = asyncio.Lock()
        self.already_open = already_open
        self.active = already_open
        self.broken = False

    @contextlib.asynccontextmanager
    async def _held(self) -> AsyncIterator[None]:
        if isinstance(self._line, SerialLine):
            async with self._line.transaction():
                yield
        else:
            async with self._lock:
                yield

    async def start(self) -> None:
        if self.already_open:
            return
        async with self._held():
            await self._line.write(b"start_rpc_session\r")
            try:
                await cast(SerialLine, self._line).read_until(
                    b"start_rpc_session\r\n", within_s=self._within_s
                )
            except NoPrompt as exc:
                self.broken = True
                raise RpcError(f"the Flipper did not start an RPC session: {exc}") from None
        self.active = True

    async def call(self, request: Content) -> list[Main]:
        """Send one request; every part of its answer (until ``has_next`` is false)."""
        if not self.active or self.broken:
            raise RpcError("no RPC session is running", broken=self.broken)
        command_id, self._next_id = self._next_id, (self._next_id + 1) & 0xFFFFFFFF or 1
        answers: list[Main] = []
        async with self._held():
            try:
                await self._line.write(frame(Main(command_id=command_id, content=request)))
            except BaseException:
                self.broken = True  # part of a frame may have gone out
                raise
            while True:
                answer = await self._read_main()
                if answer.command_id == 0 and answer.command_status == ERROR_DECODE:
                    self.active, self.broken = False, True
                    raise RpcSessionClosed(
                        "the Flipper could not decode a request and closed the RPC session",
                        status=ERROR_DECODE,
                        broken=True,
                    )
                if answer.command_id != command_id:
                    self.broken = True
                    raise RpcError(
                        f"answer for command {answer.command_id} while waiting for {command_id}",
                        status=answer.command_status,
                        broken=True,
                    )
                if answer.command_status != 0:
                    if answer.has_next:  # an error mid-answer: the rest is of no use
                        self.broken = True
                    raise RpcError(
                        _describe(answer.command_status),
                        status=answer.command_status,
                        broken=self.broken,
                    )
                answers.append(answer)
                if not answer.has_next:
                    return answers

    async def _read_main(self) -> Main:
        try:
            header = b""
            while True:
                header += await self._line.read_exactly(1, within_s=self._within_s)
                if not header[-1] & 0x80:
                    break
                if len(header) >= MAX_LENGTH_BYTES:
                    raise RpcError(f"frame length varint longer than {MAX_LENGTH_BYTES} bytes")
            length, _ = read_varint(header, 0)
            if length > MAX_FRAME:
                raise RpcError(f"frame of {length} bytes is over the {MAX_FRAME} limit")
            body = await self._line.read_exactly(length, within_s=self._within_s)
            message, _ = unframe(header + body)
            if message is None:  # pragma: no cover - read_exactly gave the whole body
                raise RpcError("incomplete frame")
            return message
        except NoPrompt as exc:
            self.broken = True
            raise RpcError(f"truncated RPC frame: {exc}", broken=True) from None
        except RpcError as exc:
            self.broken = True
            raise RpcError(f"corrupt RPC frame: {exc}", broken=True) from None
        except BaseException:  # the line failed (or we were cancelled) mid-frame
            self.broken = True
            raise

    async def _content(self, request: Content) -> list[Content]:
        return [m.content for m in await self.call(request) if m.content is not None]

    async def ping(self, data: bytes = b"") -> bytes:
        for content in await self._content(PingRequest(data)):
            if isinstance(content, PingResponse):
                return content.data
        raise RpcError("ping was not answered with a PingResponse")

    async def alert(self) -> None:
        """Play the audiovisual alert: the Flipper beeps, blinks and vibrates."""
        await self.call(AudiovisualAlertRequest())

    async def device_info(self) -> dict[str, str]:
        return {
            c.key: c.value
            for c in await self._content(DeviceInfoRequest())
            if isinstance(c, DeviceInfoResponse)
        }

    async def power_info(self) -> dict[str, str]:
        return {
            c.key: c.value
            for c in await self._content(PowerInfoRequest())
            if isinstance(c, PowerInfoResponse)
        }

    async def storage_list(self, path: str) -> list[File]:
        return [
            file
            for c in await self._content(ListRequest(path))
            if isinstance(c, ListResponse)
            for file in c.files
        ]

    async def storage_stat(self, path: str) -> File:
        for content in await self._content(StatRequest(path)):
            if isinstance(content, StatResponse) and content.file is not None:
                return content.file
        raise RpcError(f"storage stat of {path} was not answered with a file")

    async def storage_read(self, path: str) -> bytes:
        """The file's bytes, joined from its ≤512-byte parts."""
        return b"".join(
            c.file.data
            for c in await self._content(ReadRequest(path))
            if isinstance(c, ReadResponse) and c.file is not None
        )

    async def stop(self) -> None:
        """``stop_session``: expects ``Empty``, then reads the shell's prompt (USB only)."""
        if self.already_open:
            raise RpcError("this session is the link's own (BLE): it is not stopped into a shell")
        answers = await self.call(StopSession())
        self.active = False
        if not any(isinstance(m.content, Empty) for m in answers):
            self.broken = True
            raise RpcError("stop_session was not answered with Empty", broken=True)
        try:
            await cast(SerialLine, self._line).read_until(self._prompt, within_s=self._within_s)
        except NoPrompt as exc:
            self.broken = True
            raise RpcError(f"no shell prompt after stop_session: {exc}", broken=True) from None


def _describe(status: int) -> str:
    words = STORAGE_WORDS.get(status)
    name = status_name(status)
    return f"Storage error: {words} ({name})" if words else f"the Flipper answered {name}"
