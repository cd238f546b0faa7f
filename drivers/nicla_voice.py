"""The Arduino Nicla Voice over Bluetooth LE: wake words as events, recordings as WAV.

The board (nRF52832 radio + Syntiant NDP120, hardware.md §2.4) matches wake words on the NDP and
reads its microphone only through the NDP (``NDP.extractData``). It runs either the project's
sketch (``firmware_bridges/nicla_voice/nicla_voice.ino``), which offers the service below, or
Arduino's stock ``BLExaDemo`` example, which only raises an Immediate Alert on a match: that
still gives wake events (label ``"match"``), and nothing else (the FALLBACK).

The driver keeps the link for as long as it runs: ``start`` connects and subscribes, ``probe``
answers from the link (no polling traffic: the board tells us things), and a connected board
stops advertising, so the driver holds its address in ``drivers/ble_presence.py``.

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

Config (the manager's ``nicla_voice`` section): ``enabled``; ``backend`` (bleak's client
backend class, None for the real stack); ``audit`` (called ``(device_id, command)`` before
every command written to the board); ``on_event`` (called ``(kind, detail, device_id)`` — the
hub's event sink, ``hub/hardware.py`` — with ``"nicla_wake"`` and ``{"label", "uptime_ms",
"at"}`` for every wake); ``service_uuid``; ``max_record_s`` (default 30); ``audio_format``
(``"mulaw"``, the default, or ``"pcm16"``: twice the bytes for the same seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import struct
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from drivers.audio import Pcm, wav_bytes
from drivers.base import BleMatcher, Driver, DriverStatus, normalize_uuid
from drivers.ble_presence import hold, release
from drivers.transports.ble import BleError, BleLink, ClientBackend

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
_REQUIRED_PARTS = ((CONTROL_CHAR, "control"), (AUDIO_CHAR, "audio"), (STATUS_CHAR, "status"))

_WAKE = struct.Struct("<IB")
_RECORD = struct.Struct("<BIBBB")
_CHUNK = struct.Struct("<HB")
_HEADER = struct.Struct("<HBBBIIH")
_END = struct.Struct("<HBBBH")
_STATUS = struct.Struct("<BB")

MULAW_BIAS = 0x84
MULAW_CLIP = 32635
MULAW_MAX = 32124  # the largest magnitude a μ-law byte decodes to

EventSink = Callable[[str, dict[str, Any], str | None], None]
AuditSink = Callable[[str, str], None]


class NiclaVoiceError(Exception):
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


# -- the driver --------------------------------------------------------------------------------


@dataclass
class _Recording:
    reassembly: Reassembly
    done: asyncio.Future[tuple[AudioHeader, bytes]]

    def fail(self, problem: str) -> None:
        if not self.done.done():
            self.done.set_exception(NiclaVoiceError(f"{problem} ({self.reassembly.progress()})"))


class NiclaVoiceDriver(Driver):
    """One Nicla Voice over BLE; see the module docstring for the protocol and the config."""

    name: ClassVar[str] = "nicla_voice"
    ble: ClassVar[tuple[BleMatcher, ...]] = (
        BleMatcher(service_uuid=SERVICE_UUID),
        BleMatcher(local_name=STOCK_NAME, service_uuid=IMMEDIATE_ALERT_SERVICE),
        BleMatcher(local_name="Nicla Voice*"),
    )
    capabilities: ClassVar[tuple[str, ...]] = ("wake_word", "microphone")

    record_factor = 2.0
    record_margin_s = 10.0
    """A recording may take ``seconds * record_factor + record_margin_s`` before it fails."""

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        self.service = checked_service_uuid(config.get("service_uuid") or SERVICE_UUID)
        self.max_record_s = _positive(config.get("max_record_s", 30), "max_record_s")
        audio_format = str(config.get("audio_format", "mulaw"))
        if audio_format not in FORMATS:
            raise NiclaVoiceError(f"audio_format is mulaw or pcm16, not {audio_format!r}")
        self.audio_format = FORMATS[audio_format]
        backend: ClientBackend | None = config.get("backend")
        self._audit: AuditSink = config.get("audit") or (lambda _d, _c: None)
        self._on_event: EventSink | None = config.get("on_event")
        self._link = BleLink(backend=backend, on_lost=self._lost)
        self._chars = {n: characteristic_uuid(self.service, n) for n in range(1, 5)}
        self._stock = False
        self._name: str | None = None
        self._battery: int | None = None
        self._firmware: str | None = None
        self._last_seen: float | None = None
        self._last_wake: dict[str, Any] | None = None
        self._recording: _Recording | None = None
        self._take = 0
        self._aborts: set[asyncio.Task[None]] = set()

    # --- the manager's side -------------------------------------------------------------------

    async def start(self) -> None:
        async with self._ble_errors("connecting"):
            await self._link.connect(self.port)
            self._name = self._link.name
            if self._link.has(self._chars[WAKE_CHAR], service=self.service):
                await self._start_project()
            elif self._link.has(ALERT_LEVEL_CHAR, service=IMMEDIATE_ALERT_SERVICE):
                await self._start_stock()
            else:
                raise NiclaVoiceError(
                    f"{self.port} offers neither the Nicla Voice service {self.service} nor "
                    "the stock example's Immediate Alert (0x1802); flash "
                    "firmware_bridges/nicla_voice/nicla_voice.ino"
                )
        self._heard()
        advertised = IMMEDIATE_ALERT_SERVICE if self._stock else self.service
        hold(self.port, self.device_name, (advertised,))

    async def stop(self) -> None:
        release(self.port)
        recording = self._recording
        if recording is not None:
            recording.fail("the Nicla Voice driver stopped during the recording")
        await self._link.disconnect()

    def status(self) -> DriverStatus:
        if not self._link.is_connected:
            return DriverStatus(
                "offline", "Nicla Voice is not connected (the Bluetooth link is down)"
            )
        if self._stock:
            return DriverStatus(
                "online",
                f"{self.device_name} runs Arduino's stock BLExaDemo sketch (wake words only, "
                "no recording), over Bluetooth LE",
            )
        battery = f", battery {self._battery}%" if self._battery is not None else ""
        return DriverStatus(
            "online",
            f"{self.device_name}, firmware {self._firmware or '?'}{battery}, over Bluetooth LE",
        )

    async def probe(self) -> bool:
        # The board notifies; the link layer's supervision timeout notices a silent board.
        return self._link.is_connected

    # --- what the tools ask -------------------------------------------------------------------

    @property
    def device_name(self) -> str:
        return self._name or "Nicla Voice"

    def summary(self) -> dict[str, Any]:
        return {
            "connected": self._link.is_connected,
            "address": self.port,
            "name": self.device_name,
            "last_seen": self._last_seen,
            "battery": self._battery,
            "firmware": self._firmware,
            "last_wake": dict(self._last_wake) if self._last_wake else None,
            "fallback": self._stock,
            "recording": self._recording is not None,
        }

    async def record(self, seconds: float) -> bytes:
        """Record ``seconds`` on the board and return them as a 16-bit mono WAV.

        One recording at a time: a second caller is refused at once (waiting could take as long
        as the first recording). Everything is checked before anything is written to the board.
        """
        duration_ms = self._duration_ms(seconds)
        self._check_can_record()
        max_chunk = self._max_chunk(duration_ms)
        recording = _Recording(
            Reassembly(self._next_take(), max_chunk - CHUNK_HEADER),
            asyncio.get_running_loop().create_future(),
        )
        self._recording = recording
        try:
            header, audio = await self._run(recording, seconds, duration_ms, max_chunk)
        except asyncio.CancelledError:
            self._abort_later(recording)
            raise
        except NiclaVoiceError:
            await self._abort(recording)
            raise
        finally:
            self._recording = None
        return wav_bytes(decode_audio(header, audio))

    # --- recording ------------------------------------------------------------------------------

    def _duration_ms(self, seconds: float) -> int:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise NiclaVoiceError(f"seconds must be a number, not {seconds!r}")
        if not (math.isfinite(seconds) and 0 < seconds <= self.max_record_s):
            raise NiclaVoiceError(
                f"a Nicla Voice recording lasts more than 0 and at most {self.max_record_s:g} s, "
                f"not {seconds:g} s"
            )
        return max(1, round(seconds * 1000))

    def _check_can_record(self) -> None:
        if self._stock:
            raise NiclaVoiceError(
                f"{self.device_name} runs Arduino's stock BLExaDemo sketch, which only reports "
                "wake words; flash firmware_bridges/nicla_voice/nicla_voice.ino to record"
            )
        if self._recording is not None:
            raise NiclaVoiceError(
                "the Nicla Voice is already recording (one recording at a time); "
                "ask again when it has finished"
            )
        if not self._link.is_connected:
            raise NiclaVoiceError("Nicla Voice is not connected (the Bluetooth link is down)")

    def _max_chunk(self, duration_ms: int) -> int:
        """The notification size to ask for, checked against the u16 chunk count."""
        try:
            payload = self._link.payload_size(self._chars[AUDIO_CHAR], service=self.service)
        except BleError as exc:
            raise NiclaVoiceError(f"Nicla Voice is not connected over Bluetooth ({exc})") from None
        max_chunk = max(MIN_CHUNK, min(MAX_CHUNK, payload))
        # The board records at 16 kHz (the NDP's rate); it announces the real rate in the header.
        total = duration_ms * 16 * SAMPLE_WIDTH[self.audio_format]
        if math.ceil(total / (max_chunk - CHUNK_HEADER)) > MAX_SEQ - 1:
            raise NiclaVoiceError(
                f"{duration_ms / 1000:g} s does not fit one take at this link's "
                f"{max_chunk}-byte notifications; record less"
            )
        return max_chunk

    def _next_take(self) -> int:
        self._take = self._take % 255 + 1
        return self._take

    async def _run(
        self, recording: _Recording, seconds: float, duration_ms: int, max_chunk: int
    ) -> tuple[AudioHeader, bytes]:
        request = RecordRequest(
            duration_ms, self.audio_format, max_chunk, recording.reassembly.take
        )
        described = f"record {duration_ms} ms {FORMAT_NAMES[self.audio_format]}"
        await self._command(request.encode(), described)
        limit = seconds * self.record_factor + self.record_margin_s
        try:
            async with asyncio.timeout(limit):
                return await recording.done
        except TimeoutError:
            raise NiclaVoiceError(
                f"the recording did not finish within {limit:g} s "
                f"({recording.reassembly.progress()})"
            ) from None

    async def _abort(self, recording: _Recording) -> None:
        """Ask the board to stop a take that may still be streaming (best effort)."""
        if recording.reassembly.ended or not self._link.is_connected:
            return
        try:
            await self._command(CANCEL_REQUEST, "cancel")
        except NiclaVoiceError as exc:
            log.info("%s: could not cancel the recording: %s", self.device_id, exc)

    def _abort_later(self, recording: _Recording) -> None:
        task = asyncio.get_running_loop().create_task(self._abort(recording))
        self._aborts.add(task)
        task.add_done_callback(self._aborts.discard)

    async def _command(self, data: bytes, described: str) -> None:
        """One audited write to the control characteristic."""
        self._audit(self.device_id, described)
        async with self._ble_errors(described):
            await self._link.write(self._chars[CONTROL_CHAR], data, service=self.service)

    # --- the link -----------------------------------------------------------------------------

    async def _start_project(self) -> None:
        missing = [
            what
            for number, what in (
                (CONTROL_CHAR, "control"),
                (AUDIO_CHAR, "audio"),
                (STATUS_CHAR, "status"),
            )
            if not self._link.has(self._chars[number], service=self.service)
        ]
        if missing:
            raise NiclaVoiceError(
                f"the Nicla Voice service lacks its {' and '.join(missing)} characteristic "
                "(flash the current firmware_bridges/nicla_voice sketch)"
            )
        link, service = self._link, self.service
        await link.subscribe(self._chars[STATUS_CHAR], self._on_status, service=service)
        await link.subscribe(self._chars[WAKE_CHAR], self._on_wake, service=service)
        await link.subscribe(self._chars[AUDIO_CHAR], self._on_audio, service=service)
        self._on_status(await link.read(self._chars[STATUS_CHAR], service=service))

    async def _start_stock(self) -> None:
        self._stock = True
        await self._link.subscribe(
            ALERT_LEVEL_CHAR, self._on_alert, service=IMMEDIATE_ALERT_SERVICE
        )

    def _heard(self) -> float:
        self._last_seen = time.time()
        return self._last_seen

    def _on_status(self, data: bytes) -> None:
        self._heard()
        try:
            status = BoardStatus.decode(data)
        except NiclaVoiceError as exc:
            log.warning("%s: %s", self.device_id, exc)
            return
        self._battery, self._firmware = status.battery, status.firmware or None

    def _on_wake(self, data: bytes) -> None:
        at = self._heard()
        try:
            wake = Wake.decode(data)
        except NiclaVoiceError as exc:
            log.warning("%s: %s", self.device_id, exc)
            return
        self._wake(wake.label, wake.uptime_ms, at)

    def _on_alert(self, data: bytes) -> None:
        at = self._heard()
        if data and data[0] != 0:  # 2 on a match, then 0 a second later
            self._wake(STOCK_LABEL, None, at)

    def _wake(self, label: str, uptime_ms: int | None, at: float) -> None:
        self._last_wake = {"label": label, "at": at}
        if self._on_event is None:
            return
        try:
            self._on_event(
                WAKE_EVENT, {"label": label, "uptime_ms": uptime_ms, "at": at}, self.device_id
            )
        except Exception:
            log.exception("%s: the wake event sink failed", self.device_id)

    def _on_audio(self, data: bytes) -> None:
        self._heard()
        recording = self._recording
        if recording is None or recording.done.done():
            return  # a take nobody waits for any more (cancelled, timed out)
        try:
            complete = recording.reassembly.feed(data)
        except NiclaVoiceError as exc:
            recording.done.set_exception(exc)
            return
        if complete:
            header = recording.reassembly.header
            assert header is not None
            recording.done.set_result((header, recording.reassembly.audio))

    def _lost(self, reason: str) -> None:
        log.info("%s: %s", self.device_id, reason)
        recording = self._recording
        if recording is not None:
            recording.fail("the Bluetooth link to the Nicla Voice dropped during the recording")

    @contextlib.asynccontextmanager
    async def _ble_errors(self, what: str) -> AsyncIterator[None]:
        try:
            yield
        except BleError as exc:
            raise NiclaVoiceError(f"Nicla Voice over Bluetooth: {what} failed: {exc}") from None


def _positive(value: object, key: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise NiclaVoiceError(f"{key} must be a positive number of seconds, not {value!r}")
    return number
