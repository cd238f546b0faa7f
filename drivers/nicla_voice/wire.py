"""The Nicla Voice's bytes over BLE, both ways: encoders and decoders, μ-law, and the
reassembly of a recording. Pure functions and small classes; the driver that uses them is
:mod:`drivers.nicla_voice.driver`.

Wire format (all integers little-endian; every UUID and byte is also in
``firmware_bridges/nicla_voice/README.md``)
-------------------------------------------------------------------------------------------
Service ``e0c80000-7a4b-4f4e-9a2f-6e6963766f69`` (config ``service_uuid`` overrides it; the
characteristics are always the service UUID with the last four hex digits of its first group
replaced by 0001..0004). ``MAX_CHUNK`` = 244 bytes is the largest value the sketch declares.

``e0c80001`` wake, NOTIFY: ``uptime_ms u32 | label_len u8 | label`` — the board's ``millis()``
at the match, then the NDP's label, UTF-8, at most 32 bytes. At the default MTU (23) a
notification carries 20 bytes, so a label longer than 15 bytes arrives cut: the hub decodes
what arrived (the length byte says how long it was).

``e0c80002`` control, WRITE (with response), at most 8 bytes:

- RECORD ``0x01 | duration_ms u32 | format u8 | max_chunk u8 | take u8``: record now for
  ``duration_ms``; ``format`` 0 = G.711 μ-law 8-bit, 1 = PCM 16-bit signed; ``max_chunk`` the
  largest audio notification the hub takes (its ATT MTU - 3, at most 244; the board never sends
  more, so nothing is cut by the stack); ``take`` (1..255) is echoed in the header and end
  marker so chunks of an earlier, cancelled recording are never mistaken for this one's. A
  RECORD while recording cancels the running take first.
- CANCEL ``0x02``: stop the running take (its end marker says "cancelled").

``e0c80003`` audio, NOTIFY: every chunk starts ``seq u16 | kind u8``:

- header, kind ``H`` (0x48), seq 0: ``take u8 | format u8 | rate u32 | total_bytes u32 |
  chunks u16`` (15 bytes): what follows, exactly;
- data, kind ``D`` (0x44), seq 1..chunks: audio bytes (1..max_chunk-3 of them, in order);
- end, kind ``E`` (0x45), seq chunks+1 (sent+1 when the take ended early, 0 when the request
  was refused): ``take u8 | status u8 | sent u16`` (7 bytes); status 0 complete, 1 cancelled,
  2 the NDP's audio failed, 3 refused (malformed, or longer than the board allows).

Reassembly: data chunks heard before this take's header are an earlier take's and are
ignored. A chunk whose seq was already received is DROPPED when its bytes are identical (a
harmless resend) and is an ERROR when they differ (the board's stream cannot be trusted). At
the end marker every seq 1..chunks must be there and the bytes must add up to total_bytes: a
missing chunk is an error ("chunk 17 of 40 never arrived"), never silently glued over.

``e0c80004`` status, READ|NOTIFY: ``battery u8 | state u8 | firmware`` — battery 0..100 %
(0xFF unknown), state 0 idle / 1 recording, then the sketch's version (ASCII, at most 18 bytes).

Fallback (stock ``BLExaDemo``): local name "BLExaDemo", Immediate Alert service 0x1802 with
Alert Level 0x2A06 (uint8, READ|NOTIFY): 2 on a match, 0 a second later. Every non-zero
notification is one wake.
"""

from __future__ import annotations

import logging
import struct
import uuid
from dataclasses import dataclass

import numpy as np

from drivers.base import DriverError, normalize_uuid
from media.audio import Pcm

log = logging.getLogger(__name__)

SERVICE_UUID = "e0c80000-7a4b-4f4e-9a2f-6e6963766f69"
WAKE_CHAR = 1
CONTROL_CHAR = 2
AUDIO_CHAR = 3
STATUS_CHAR = 4
IMMEDIATE_ALERT_SERVICE = normalize_uuid("1802")
ALERT_LEVEL_CHAR = normalize_uuid("2a06")
STOCK_NAME = "BLExaDemo"
STOCK_LABEL = "match"
WAKE_EVENT = "nicla_wake"

MAX_LABEL = 32
MAX_CHUNK = 244  # the audio characteristic's declared size in the sketch (MTU 247 - 3)
MIN_CHUNK = 20  # the ATT payload at the minimum MTU (23)
CHUNK_HEADER = 3  # seq u16 + kind u8
MAX_SEQ = 0xFFFF  # the end marker of the longest take is chunk 65535

OP_RECORD = 0x01
OP_CANCEL = 0x02
FORMAT_MULAW = 0
FORMAT_PCM16 = 1
FORMATS = {"mulaw": FORMAT_MULAW, "pcm16": FORMAT_PCM16}
FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
SAMPLE_WIDTH = {FORMAT_MULAW: 1, FORMAT_PCM16: 2}

KIND_HEADER = 0x48  # "H"
KIND_DATA = 0x44  # "D"
KIND_END = 0x45  # "E"

STATUS_OK = 0
STATUS_CANCELLED = 1
STATUS_AUDIO_FAILED = 2
STATUS_REFUSED = 3
END_REASONS = {
    STATUS_CANCELLED: "the board cancelled the recording",
    STATUS_AUDIO_FAILED: "the board's NDP could not deliver audio (microphone or firmware fault)",
    STATUS_REFUSED: "the board refused the request (malformed, or longer than it allows)",
}
BATTERY_UNKNOWN = 0xFF

_WAKE = struct.Struct("<IB")
_RECORD = struct.Struct("<BIBBB")
_CHUNK = struct.Struct("<HB")
_HEADER = struct.Struct("<HBBBIIH")
_END = struct.Struct("<HBBBH")
_STATUS = struct.Struct("<BB")

MULAW_BIAS = 0x84
MULAW_CLIP = 32635
MULAW_MAX = 32124  # the largest magnitude a μ-law byte decodes to


class NiclaVoiceError(DriverError):
    """The Nicla Voice could not do it; ``str()`` says why, for a person."""


# -- the wire format ---------------------------------------------------------------------------


def characteristic_uuid(service: str, number: int) -> str:
    """Characteristic ``number`` (1..4) of the project service: e0c80000-… → e0c80001-…."""
    text = normalize_uuid(service)
    return f"{text[:4]}{number:04x}{text[8:]}"


def checked_service_uuid(value: object) -> str:
    """A configured service UUID, checked: 128-bit and not on the Bluetooth SIG base."""
    try:
        text = str(uuid.UUID(normalize_uuid(str(value))))
    except ValueError:
        raise NiclaVoiceError(f"service_uuid {value!r} is not a UUID") from None
    if text.endswith("-0000-1000-8000-00805f9b34fb"):
        raise NiclaVoiceError(
            f"service_uuid {value!r} is a Bluetooth SIG short UUID; use a 128-bit UUID of your own"
        )
    return text


@dataclass(frozen=True)
class Wake:
    """A wake notification: the NDP's label and the board's uptime at the match."""

    label: str
    uptime_ms: int

    def encode(self) -> bytes:
        raw = _label_bytes(self.label)
        return _WAKE.pack(self.uptime_ms & 0xFFFFFFFF, len(raw)) + raw

    @classmethod
    def decode(cls, data: bytes) -> Wake:
        if len(data) < _WAKE.size:
            raise NiclaVoiceError(f"a wake notification of {len(data)} bytes is too short")
        uptime_ms, length = _WAKE.unpack_from(data)
        # A label the stack cut short (MTU) keeps what arrived; a cut multi-byte character goes.
        label = data[_WAKE.size : _WAKE.size + length].decode("utf-8", "ignore")
        return cls(label, uptime_ms)


def _label_bytes(label: str) -> bytes:
    """At most MAX_LABEL bytes of UTF-8, never ending inside a character."""
    return label.encode()[:MAX_LABEL].decode("utf-8", "ignore").encode()


@dataclass(frozen=True)
class RecordRequest:
    duration_ms: int
    audio_format: int
    max_chunk: int
    take: int

    def encode(self) -> bytes:
        return _RECORD.pack(
            OP_RECORD, self.duration_ms, self.audio_format, self.max_chunk, self.take
        )

    @classmethod
    def decode(cls, data: bytes) -> RecordRequest:
        if len(data) != _RECORD.size or data[0] != OP_RECORD:
            raise NiclaVoiceError(f"not a record request: {data.hex()}")
        _op, duration_ms, audio_format, max_chunk, take = _RECORD.unpack(data)
        return cls(duration_ms, audio_format, max_chunk, take)


CANCEL_REQUEST = bytes([OP_CANCEL])


@dataclass(frozen=True)
class AudioHeader:
    take: int
    audio_format: int
    rate: int
    total_bytes: int
    chunks: int

    def encode(self) -> bytes:
        return _HEADER.pack(
            0, KIND_HEADER, self.take, self.audio_format, self.rate, self.total_bytes, self.chunks
        )

    @classmethod
    def decode(cls, data: bytes) -> AudioHeader:
        if len(data) < _HEADER.size:
            raise NiclaVoiceError(f"the recording's header chunk is {len(data)} bytes, not 15")
        _seq, _kind, take, audio_format, rate, total, chunks = _HEADER.unpack_from(data)
        return cls(take, audio_format, rate, total, chunks)

    @property
    def width(self) -> int:
        return SAMPLE_WIDTH[self.audio_format]


@dataclass(frozen=True)
class AudioEnd:
    seq: int
    take: int
    status: int
    sent: int

    def encode(self) -> bytes:
        return _END.pack(self.seq, KIND_END, self.take, self.status, self.sent)

    @classmethod
    def decode(cls, data: bytes) -> AudioEnd:
        if len(data) < _END.size:
            raise NiclaVoiceError(f"the recording's end marker is {len(data)} bytes, not 7")
        seq, _kind, take, status, sent = _END.unpack_from(data)
        return cls(seq, take, status, sent)


def data_chunk(seq: int, payload: bytes) -> bytes:
    return _CHUNK.pack(seq, KIND_DATA) + payload


def audio_chunks(
    take: int, audio_format: int, rate: int, audio: bytes, max_chunk: int
) -> list[bytes]:
    """Every notification of one take as the sketch sends it: header, data..., end."""
    size = max_chunk - CHUNK_HEADER
    pieces = [audio[i : i + size] for i in range(0, len(audio), size)]
    header = AudioHeader(take, audio_format, rate, len(audio), len(pieces))
    data = [data_chunk(seq, piece) for seq, piece in enumerate(pieces, start=1)]
    end = AudioEnd(len(pieces) + 1, take, STATUS_OK, len(pieces))
    return [header.encode(), *data, end.encode()]


@dataclass(frozen=True)
class BoardStatus:
    battery: int | None
    recording: bool
    firmware: str

    @classmethod
    def decode(cls, data: bytes) -> BoardStatus:
        if len(data) < _STATUS.size:
            raise NiclaVoiceError(f"a status value of {len(data)} bytes is too short")
        battery, state = _STATUS.unpack_from(data)
        firmware = data[_STATUS.size :].decode("ascii", "replace").strip("\0 ")
        return cls(None if battery > 100 else battery, state == 1, firmware)

    def encode(self) -> bytes:
        battery = BATTERY_UNKNOWN if self.battery is None else self.battery
        return _STATUS.pack(battery, int(self.recording)) + self.firmware.encode()[:18]


def _mulaw_table() -> np.ndarray:
    """The 256 μ-law codes as PCM16 (G.711: inverted bits, sign, 3-bit exponent, mantissa)."""
    code = ~np.arange(256, dtype=np.int32) & 0xFF
    exponent = (code >> 4) & 0x07
    mantissa = code & 0x0F
    magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS
    return np.where(code & 0x80, -magnitude, magnitude).astype("<i2")


_MULAW = _mulaw_table()


def mulaw_decode(data: bytes) -> bytes:
    """G.711 μ-law bytes → PCM 16-bit little-endian (two bytes per input byte)."""
    return _MULAW[np.frombuffer(data, np.uint8)].tobytes()


def decode_audio(header: AudioHeader, audio: bytes) -> Pcm:
    """A take's bytes as 16-bit mono PCM at the header's rate."""
    if header.audio_format == FORMAT_MULAW:
        return Pcm(mulaw_decode(audio), header.rate)
    return Pcm(audio, header.rate)


# -- reassembly --------------------------------------------------------------------------------


class Reassembly:
    """The chunks of one take put back together; every way a take can go wrong is an error.

    ``feed`` takes each audio notification in arrival order and returns True once the take is
    complete (then ``header`` and ``audio`` hold it); it raises :class:`NiclaVoiceError` for a
    malformed chunk, a duplicate that differs, a gap or a bad end. Chunks before this take's
    header, and header/end markers of other takes, are ignored (``ignored`` counts them);
    identical duplicates are dropped (``duplicates`` counts them).
    """

    def __init__(self, take: int, max_payload: int) -> None:
        self.take = take
        self.max_payload = max_payload
        self.header: AudioHeader | None = None
        self.ended = False
        self.duplicates = 0
        self.ignored = 0
        self._chunks: dict[int, bytes] = {}
        self._audio: bytes | None = None

    @property
    def audio(self) -> bytes:
        if self._audio is None:
            raise NiclaVoiceError("the recording is not complete")
        return self._audio

    def progress(self) -> str:
        """Where the take got to, for an error message."""
        if self.header is None:
            return "its header never arrived"
        last = max(self._chunks, default=0)
        return (
            f"{len(self._chunks)} of {self.header.chunks} chunks had arrived, the last was "
            f"chunk {last}"
        )

    def feed(self, chunk: bytes) -> bool:
        if self.ended:
            return self._audio is not None
        if len(chunk) < CHUNK_HEADER:
            raise NiclaVoiceError(f"an audio chunk of {len(chunk)} bytes cannot carry its seq")
        seq, kind = _CHUNK.unpack_from(chunk)
        if kind == KIND_HEADER:
            self._on_header(AudioHeader.decode(chunk))
        elif kind == KIND_DATA:
            self._on_data(seq, chunk[CHUNK_HEADER:])
        elif kind == KIND_END:
            return self._on_end(AudioEnd.decode(chunk))
        else:
            raise NiclaVoiceError(f"audio chunk {seq} is of unknown kind 0x{kind:02x}")
        return False

    def _on_header(self, header: AudioHeader) -> None:
        if header.take != self.take:
            self.ignored += 1
            return
        if self.header is not None:
            if header == self.header:
                self.duplicates += 1
                return
            raise NiclaVoiceError("the recording's header arrived twice, saying different things")
        _check_header(header, self.max_payload)
        self.header = header

    def _on_data(self, seq: int, payload: bytes) -> None:
        header = self.header
        if header is None:
            self.ignored += 1  # an earlier take's tail, still in flight
            return
        if not 1 <= seq <= header.chunks:
            raise NiclaVoiceError(f"audio chunk {seq} is outside this take's 1..{header.chunks}")
        if not 1 <= len(payload) <= self.max_payload:
            raise NiclaVoiceError(
                f"audio chunk {seq} carries {len(payload)} bytes (1..{self.max_payload} allowed)"
            )
        kept = self._chunks.get(seq)
        if kept is None:
            self._chunks[seq] = payload
        elif kept == payload:
            self.duplicates += 1
        else:
            raise NiclaVoiceError(
                f"audio chunk {seq} of {header.chunks} arrived twice with different bytes; "
                "the recording cannot be trusted"
            )

    def _on_end(self, end: AudioEnd) -> bool:
        if end.take != self.take:
            self.ignored += 1
            return False
        self.ended = True
        if end.status != STATUS_OK:
            reason = END_REASONS.get(end.status, f"the board ended with status {end.status}")
            raise NiclaVoiceError(f"{reason} ({self.progress()})")
        header = self.header
        if header is None:
            raise NiclaVoiceError("the recording's header chunk never arrived")
        if end.sent != header.chunks:
            raise NiclaVoiceError(
                f"the board says it sent {end.sent} chunks, its header announced {header.chunks}"
            )
        missing = [seq for seq in range(1, header.chunks + 1) if seq not in self._chunks]
        if missing:
            more = f" ({len(missing)} chunks are missing in all)" if len(missing) > 1 else ""
            raise NiclaVoiceError(
                f"chunk {missing[0]} of {header.chunks} never arrived{more}; "
                "an incomplete recording is not glued together"
            )
        audio = b"".join(self._chunks[seq] for seq in range(1, header.chunks + 1))
        if len(audio) != header.total_bytes:
            raise NiclaVoiceError(
                f"received {len(audio)} of {header.total_bytes} audio bytes (chunks were cut "
                "short: is the link's MTU smaller than the hub was told?)"
            )
        self._audio = audio
        return True


def _check_header(header: AudioHeader, max_payload: int) -> None:
    if header.audio_format not in SAMPLE_WIDTH:
        raise NiclaVoiceError(f"the board sends audio format {header.audio_format}, unknown here")
    if not 1000 <= header.rate <= 96000:
        raise NiclaVoiceError(f"the board announces a sample rate of {header.rate} Hz")
    if header.total_bytes % header.width:
        raise NiclaVoiceError(f"{header.total_bytes} bytes is not a whole number of samples")
    if header.chunks > MAX_SEQ - 1 or not (
        header.chunks <= header.total_bytes <= header.chunks * max_payload
    ):
        raise NiclaVoiceError(
            f"the header announces {header.total_bytes} bytes in {header.chunks} chunks of at "
            f"most {max_payload}"
        )
