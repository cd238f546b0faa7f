"""Recording a real Flipper Zero: a fixed, read-only script and the bytes it answered.

``tiny-hub capture flipper --port /dev/ttyACM0 --out flipper.json`` opens the USB serial port and
runs ``SCRIPT``: the banner, text commands that only read (tables, a listing of the internal
flash, error lines), a probe of the NFC command set that never starts the reader, then RPC
requests that only read, and the two inputs the firmware must survive (a frame that does not
decode, an empty request). Nothing in it transmits, writes a file or changes a setting. Every
byte sent and received goes into a JSON capture (``CAPTURE_FORMAT``) that the tests replay
against the driver's parsers and compare with the emulator's answers (``drivers/capture.py``).

The device's identity (its name, UID and BLE MAC) is replaced by placeholders of the same
length before the capture is written, in the text tables and in the RPC frames alike, so the
bytes keep their shape and the file can be shared; ``redact=False`` keeps them.

Written here rather than with the driver's ``SerialLine``: a capture wants the raw bytes with
nothing taken off (echo, prompt, CR LF), one step after the other, so plain blocking pyserial is
the simpler tool.
"""

from __future__ import annotations

import re
from typing import Any

import serial

from drivers.capture import Capture, CaptureError
from drivers.flipper.cli import opened_nfc_shell
from drivers.flipper.rpc import (
    DeviceInfoRequest,
    DeviceInfoResponse,
    ListRequest,
    Main,
    PingRequest,
    PowerInfoRequest,
    RpcError,
    StatRequest,
    StopSession,
    Unknown,
    decode_main,
    encode_main,
    frame,
)

PROMPT = b"\r\n>: "
ANY_PROMPT = b">: "
MISSING = "tiny-hub-capture-missing"
"""A name no Flipper has: the script asks for it to record the error texts."""

CLI_SCRIPT = (
    "device_info",
    "info device",
    "info power",
    "power info",
    "free",
    "loader info",
    "storage info /int",
    "storage list /int",
    f"storage stat /ext/{MISSING}",
    f"storage read /int/{MISSING}",
    f"{MISSING.replace('-', '_')}",
)
"""Text commands that only read (``power info`` is unknown to current firmware: recorded too)."""


def _path_request(number: int, path: str) -> Unknown:
    """A storage request the driver's codec has no class for: ``path`` is its field 1."""
    data = path.encode()
    return Unknown(number, bytes([0x0A, len(data)]) + data)


RPC_SCRIPT: tuple[tuple[str, Main], ...] = (
    ("ping", Main(content=PingRequest(bytes([1, 2, 3, 4])))),
    ("ping has_next", Main(has_next=True, content=PingRequest(b"x"))),
    ("protobuf_version", Main(content=Unknown(39))),
    ("get_datetime", Main(content=Unknown(35))),
    ("device_info", Main(content=DeviceInfoRequest())),
    ("power_info", Main(content=PowerInfoRequest())),
    ("storage_info /int", Main(content=_path_request(28, "/int"))),
    ("storage_list /", Main(content=ListRequest("/"))),
    ("storage_list /int", Main(content=ListRequest("/int"))),
    ("storage_stat /int", Main(content=StatRequest("/int"))),
    ("storage_timestamp /int", Main(content=_path_request(59, "/int"))),
    (f"storage_md5sum /int/{MISSING}", Main(content=_path_request(14, f"/int/{MISSING}"))),
    ("a response sent as a request", Main(content=Unknown(40))),
)
"""RPC requests that only read, each with a ``command_id`` set in order from 1."""

BAD_INPUTS = (
    ("a frame that does not decode", bytes.fromhex("050803ffffff")),
    ("an empty request", bytes.fromhex("00")),
)
"""Sent raw, each in a session of its own: the firmware closes the session after either."""

_IDENTITY_ROW = re.compile(
    rb"^(?P<key>hardware[_.]name|hardware[_.]uid|radio[_.]ble[_.]mac|Label) *: "
    rb"(?P<value>[^\r\n]*)",
    re.MULTILINE,
)
_IDENTITY_KEYS = frozenset({"hardware_name", "hardware_uid", "radio_ble_mac"})


class _Recorder:
    def __init__(self, port: serial.Serial, capture: Capture) -> None:
        self.port = port
        self.capture = capture

    def read_until(self, marker: bytes, step: str) -> bytes:
        data = bytes(self.port.read_until(marker))
        if not data.endswith(marker):
            raise CaptureError(f"{step}: no {marker!r} within the timeout (got {data[-80:]!r})")
        return data

    def read_frame(self, step: str) -> bytes:
        header = b""
        while not header or header[-1] & 0x80:
            byte = self.port.read(1)
            if not byte or len(header) >= 5:
                raise CaptureError(f"{step}: no RPC answer within the timeout")
            header += byte
        length = 0
        for index, byte_value in enumerate(header):
            length |= (byte_value & 0x7F) << (7 * index)
        body = bytes(self.port.read(length))
        if len(body) != length:
            raise CaptureError(f"{step}: an RPC answer was cut short")
        return header + body

    def open(self, settle_s: float) -> None:
        """The banner and its prompt, then the prompt a CR gets: the shell is ready. A session
        that was already running prints no banner, so only one prompt is sure to come."""
        self.port.write(b"\r")
        received = self.read_until(PROMPT, "open")
        timeout, self.port.timeout = self.port.timeout, settle_s
        try:
            received += bytes(self.port.read_until(PROMPT))
        finally:
            self.port.timeout = timeout
        self.capture.add("open", b"\r", received)

    def cli(self, command: str) -> None:
        sent = command.encode() + b"\r"
        self.port.write(sent)
        self.capture.add(command, sent, self.read_until(PROMPT, command))

    def nfc_probe(self) -> None:
        """``nfc`` alone: usage, an unknown-command line, or the newest firmware's sub-shell
        (left again with ``exit``). No scan is started."""
        self.port.write(b"nfc\r")
        received = self.read_until(ANY_PROMPT, "nfc")
        self.capture.add("nfc", b"nfc\r", received)
        if opened_nfc_shell(received[: -len(ANY_PROMPT)]):
            self.port.write(b"exit\r")
            self.capture.add("nfc exit", b"exit\r", self.read_until(PROMPT, "nfc exit"))

    def start_rpc(self, step: str) -> None:
        sent = b"start_rpc_session\r"
        self.port.write(sent)
        self.capture.add(step, sent, self.read_until(b"\n", step))

    def rpc(self, name: str, request: Main) -> None:
        sent = frame(request)
        self.port.write(sent)
        received = b""
        while True:
            answer = self.read_frame(name)
            received += answer
            if not _has_next(answer):
                break
        self.capture.add(name, sent, received, kind="rpc")

    def rpc_stop(self) -> None:
        sent = frame(Main(command_id=len(RPC_SCRIPT) + 1, content=StopSession()))
        self.port.write(sent)
        received = self.read_frame("stop_session") + self.read_until(PROMPT, "stop_session")
        self.capture.add("stop_session", sent, received, kind="rpc")

    def bad_input(self, name: str, sent: bytes, settle_s: float) -> None:
        """The answer, then the prompt of the text shell. Where the shell takes a byte to
        notice the closed session, a CR is sent and that is noted in the capture."""
        self.port.write(sent)
        received = self.read_frame(name)
        timeout, self.port.timeout = self.port.timeout, settle_s
        try:
            tail = bytes(self.port.read_until(PROMPT))
        finally:
            self.port.timeout = timeout
        if not tail.endswith(PROMPT):
            self.capture.notes.append(f"{name}: no prompt until a CR was sent")
            self.port.write(b"\r")
            tail += self.read_until(PROMPT, name)
        self.capture.add(name, sent, received + tail, kind="rpc")


def _has_next(framed: bytes) -> bool:
    start = next(i for i, b in enumerate(framed) if not b & 0x80) + 1
    return decode_main(framed[start:]).has_next


def record_flipper(
    port_path: str, *, source: str = "device", within_s: float = 10.0, redact: bool = True
) -> dict[str, Any]:
    """Run the script against the Flipper on ``port_path``; the capture as JSON data."""
    capture = Capture(device="flipper", source=source)
    with serial.Serial(port_path, timeout=within_s) as port:
        recorder = _Recorder(port, capture)
        recorder.open(settle_s=min(1.0, within_s))
        for command in CLI_SCRIPT:
            recorder.cli(command)
        recorder.nfc_probe()
        recorder.start_rpc("start_rpc_session")
        for command_id, (name, request) in enumerate(RPC_SCRIPT, 1):
            recorder.rpc(name, _with_id(request, command_id))
        recorder.rpc_stop()
        for name, sent in BAD_INPUTS:
            recorder.start_rpc(f"start_rpc_session before {name}")
            recorder.bad_input(name, sent, settle_s=min(1.0, within_s))
    if redact:
        capture.steps = [_redacted(step) for step in capture.steps]
    return capture.as_json()


def _with_id(message: Main, command_id: int) -> Main:
    return Main(command_id, message.command_status, message.has_next, message.content)


def _redacted(step: dict[str, str]) -> dict[str, str]:
    received = bytes.fromhex(step["received"])
    if step["kind"] == "rpc":
        received = _redact_frames(received)
    else:
        received = _IDENTITY_ROW.sub(_masked_row, received)
    return {**step, "received": received.hex()}


def _masked_row(match: re.Match[bytes]) -> bytes:
    keep = match.start("value") - match.start()
    return match.group(0)[:keep] + _mask(match["value"])


def _mask(value: bytes) -> bytes:
    """A placeholder of the same length: zeros for a hex number (UID, MAC), else X's."""
    is_hex = all(chr(b) in "0123456789ABCDEFabcdef:" for b in value)
    return bytes(0x30 if is_hex and b != 0x3A else 0x3A if is_hex else 0x58 for b in value)


def _redact_frames(received: bytes) -> bytes:
    """Device info answers among RPC frames get the same placeholders; anything that is not a
    frame (text, a prompt) is left as it is."""
    out, pos = bytearray(), 0
    while pos < len(received):
        replaced = _redact_frame_at(received, pos)
        if replaced is None:
            out += received[pos:]
            break
        framed, pos = replaced
        out += framed
    return bytes(out)


def _redact_frame_at(data: bytes, pos: int) -> tuple[bytes, int] | None:
    length = shift = 0
    end = pos
    while end < len(data) and end - pos < 5:
        byte = data[end]
        end += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    else:
        return None
    if end + length > len(data):
        return None
    try:
        message = decode_main(data[end : end + length])
    except RpcError:
        return None
    content = message.content
    if isinstance(content, DeviceInfoResponse) and content.key in _IDENTITY_KEYS:
        masked = _mask(content.value.encode()).decode()
        message = Main(
            message.command_id,
            message.command_status,
            message.has_next,
            DeviceInfoResponse(content.key, masked),
        )
        body = encode_main(message)
        return data[pos:end] + body, end + length
    return data[pos : end + length], end + length
