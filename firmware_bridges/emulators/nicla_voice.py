"""An Arduino Nicla Voice behind bleak's backend seam: the GATT table of the project's sketch.

Why
---
``drivers/nicla_voice/driver.py`` must be tested with no radio and no board. Like the Flipper
(``firmware_bridges.emulators.ble``), this is a :class:`GattPeripheral`: the hub's REAL
``BleakClient``/``BleakScanner`` run, and only the OS layer below them is emulated.

What is emulated
----------------
* ``firmware_bridges/nicla_voice/nicla_voice.ino``'s GATT table and bytes (the layouts are in
  that directory's README and in ``drivers/nicla_voice/driver.py``; they are written here again with
  ``struct``, not imported, so that a mistake in the driver's codec is not mirrored here):
  wake (NOTIFY), control (WRITE), audio (NOTIFY), status (READ|NOTIFY); advertised under the
  service UUID with the local name "Nicla Voice". A connected board stops advertising.
* ``wake(label)``: the NDP matched; a wake notification (uptime ms, label).
* A RECORD request streams ``source`` (default ``tests/fixtures/speech/kitchen.wav``, or a
  generated tone when that file is absent) resampled to the NDP's 16 kHz, cut or padded with
  silence to the requested length, encoded as the sketch encodes it (G.711 μ-law, the same
  C-style integer algorithm, or PCM16), in chunks of the requested size: header, data, end.
  Pacing: the board records live, so chunk N leaves when its audio has been recorded;
  ``pace`` = 1.0 is real time, 10 is ten times faster, 0 is as fast as the event loop goes.
  CANCEL (or a new RECORD) ends the running take with status 1; a request longer than
  ``max_seconds`` (or malformed) is refused with status 3.
* Notifications are cut to MTU-3 as ArduinoBLE's ``ATT.handleNotify`` cuts them.
* Fault injection: ``drop_chunks`` (data seqs that never reach the hub), ``repeat_chunks`` (sent
  twice; ``alter_repeats`` makes the copy differ), ``drop_link_at`` (the link drops instead of
  sending that data chunk), ``audio_fails_at`` (the NDP fails there: end with status 2),
  ``ignore_requests`` (the board hears control writes and does nothing).
* ``stock_example=True``: Arduino's stock BLExaDemo instead: local name "BLExaDemo", only the
  Immediate Alert service 0x1802 with Alert Level 0x2A06 (READ|NOTIFY); ``wake`` writes 2,
  then 0 after ``alert_reset_s`` (the example's ``delay(1000)``).

Records a test reads: ``requests`` (every control write), ``takes``, ``chunks_sent``.

For ``tiny-hub emulate nicla-voice``: a BLE emulator cannot be reached from another process, so
:func:`demo_backend` returns the bleak backends and the board for a hub started in-process, and
:func:`demo_wakes` makes it say a wake word now and then.
"""

from __future__ import annotations

import asyncio
import math
import struct
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from drivers.base import normalize_uuid
from firmware_bridges.emulators.ble import (
    DEFAULT_MTU,
    EmulatedBleakClient,
    EmulatedBleakScanner,
    GattChar,
    GattPeripheral,
    GattService,
)
from media.audio import AudioError, read_wav, resample, to_float_mono

# The project sketch's service (firmware_bridges/nicla_voice/nicla_voice.ino), written here
# again rather than imported from the driver, so a wrong UUID in the driver fails against the
# board instead of agreeing with it.
SERVICE_UUID = "e0c80000-7a4b-4f4e-9a2f-6e6963766f69"


def characteristic_uuid(service: str, number: int) -> str:
    """Characteristic ``number`` (1..4): the service UUID with the last four hex digits of its
    first group replaced by the number, as the sketch derives them."""
    text = normalize_uuid(service)
    return f"{text[:4]}{number:04x}{text[8:]}"


DEFAULT_SOURCE = Path(__file__).resolve().parents[2] / "tests/fixtures/speech/kitchen.wav"
BOARD_RATE = 16_000  # the NDP120's audio rate
FIRMWARE = "tiny-nv 0.1.0"
MAX_VALUE = 244  # the sketch declares the audio characteristic 244 bytes long
IMMEDIATE_ALERT = normalize_uuid("1802")
ALERT_LEVEL = normalize_uuid("2a06")

MULAW_BIAS = 0x84
MULAW_CLIP = 32635

_SERVICE_HANDLE = 16
_WAKE_HANDLE = 17
_CONTROL_HANDLE = 20
_AUDIO_HANDLE = 22
_STATUS_HANDLE = 25


def linear_to_mulaw(sample: int) -> int:
    """One PCM16 sample as G.711 μ-law, written as the sketch's C function is."""
    sign = 0
    if sample < 0:
        sign = 0x80
        sample = -sample
    sample = min(sample, MULAW_CLIP) + MULAW_BIAS
    exponent = 7
    mask = 0x4000
    while exponent > 0 and not sample & mask:
        exponent -= 1
        mask >>= 1
    mantissa = (sample >> (exponent + 3)) & 0x0F
    return ~(sign | exponent << 4 | mantissa) & 0xFF


_encode_table: np.ndarray | None = None


def mulaw_encode(samples: np.ndarray) -> bytes:
    """int16 samples → μ-law bytes (through a table of ``linear_to_mulaw``, built once)."""
    global _encode_table
    if _encode_table is None:
        _encode_table = np.array([linear_to_mulaw(s) for s in range(-32768, 32768)], dtype=np.uint8)
    return bytes(_encode_table[samples.astype(np.int32) + 32768])


def tone(seconds: float = 2.0, rate: int = BOARD_RATE) -> np.ndarray:
    """A stand-in for speech when no recording is at hand: two tones with a slow wobble."""
    t = np.arange(int(seconds * rate)) / rate
    wave = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.15 * np.sin(2 * np.pi * 660 * t)
    wave *= 0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)
    return (wave * 32767).astype(np.int16)


def load_source(source: Path | None) -> np.ndarray:
    """What the board's microphone hears: a WAV at 16 kHz mono int16, or a tone without one."""
    path = source or DEFAULT_SOURCE
    try:
        pcm = read_wav(path.read_bytes())
    except (OSError, AudioError):
        if source is not None:
            raise
        return tone()
    floats = resample(to_float_mono(pcm), pcm.rate, BOARD_RATE)
    return np.asarray(np.clip(np.round(floats * 32768), -32768, 32767), dtype=np.int16)


def _project_services(service: str) -> tuple[GattService, ...]:
    chars = (
        GattChar(characteristic_uuid(service, 1), _WAKE_HANDLE, ("notify",)),
        GattChar(characteristic_uuid(service, 2), _CONTROL_HANDLE, ("write",)),
        GattChar(characteristic_uuid(service, 3), _AUDIO_HANDLE, ("notify",)),
        GattChar(characteristic_uuid(service, 4), _STATUS_HANDLE, ("read", "notify")),
    )
    return (GattService(service, _SERVICE_HANDLE, chars),)


def _stock_services() -> tuple[GattService, ...]:
    alert = GattChar(ALERT_LEVEL, _WAKE_HANDLE, ("read", "notify"), value=b"\0")
    return (GattService(IMMEDIATE_ALERT, _SERVICE_HANDLE, (alert,)),)


class _Take:
    """The recording being streamed: its take number and how far it got."""

    def __init__(self, take: int) -> None:
        self.take = take
        self.sent = 0


class EmulatedNiclaVoice(GattPeripheral):
    """A Nicla Voice running the project's sketch (or the stock BLExaDemo); see the module doc."""

    def __init__(
        self,
        *,
        address: str = "F4:12:FA:6C:9D:21",
        name: str | None = None,
        stock_example: bool = False,
        service_uuid: str = SERVICE_UUID,
        source: Path | None = None,
        pace: float = 1.0,
        mtu: int = DEFAULT_MTU,
        battery: int | None = 87,
        firmware: str = FIRMWARE,
        alert_reset_s: float = 1.0,
        max_seconds: float = 60.0,
        rssi: int = -61,
    ) -> None:
        service = normalize_uuid(service_uuid)
        super().__init__(
            address=address,
            name=name or ("BLExaDemo" if stock_example else "Nicla Voice"),
            services=_stock_services() if stock_example else _project_services(service),
            mtu=mtu,
            rssi=rssi,
        )
        self.stock_example = stock_example
        self.service_uuid = service
        self.samples = load_source(source)
        """The board-rate int16 samples a recording streams (then silence)."""
        self.pace = pace
        self.battery = battery
        self.firmware = firmware
        self.alert_reset_s = alert_reset_s
        self.max_seconds = max_seconds
        self.drop_chunks: set[int] = set()
        self.repeat_chunks: set[int] = set()
        self.alter_repeats = False
        self.drop_link_at: int | None = None
        self.audio_fails_at: int | None = None
        self.ignore_requests = False
        self.requests: list[bytes] = []
        self.takes = 0
        self.chunks_sent = 0
        self._booted = time.monotonic()
        self._take: _Take | None = None
        self._task: asyncio.Task[None] | None = None
        self._alert_reset: asyncio.TimerHandle | None = None

    # -- what the board does --------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._take is not None

    def uptime_ms(self) -> int:
        return int((time.monotonic() - self._booted) * 1000) & 0xFFFFFFFF

    def wake(self, label: str = "NN0:hey_arduino") -> bool:
        """The NDP matched ``label``: notify it (True when a subscribed hub was told)."""
        if self.stock_example:
            delivered = self.notify(ALERT_LEVEL, b"\x02")
            if self._alert_reset is not None:
                self._alert_reset.cancel()
            loop = asyncio.get_running_loop()
            self._alert_reset = loop.call_later(self.alert_reset_s, self._reset_alert)
            return delivered
        raw = label.encode()[:32].decode("utf-8", "ignore").encode()
        wake = struct.pack("<IB", self.uptime_ms(), len(raw)) + raw
        return self.notify(characteristic_uuid(self.service_uuid, 1), wake)

    def set_battery(self, percent: int | None) -> None:
        self.battery = percent
        self._notify_status()

    def expected(self, duration_ms: int) -> np.ndarray:
        """The int16 samples a take of ``duration_ms`` carries (before μ-law)."""
        count = duration_ms * BOARD_RATE // 1000
        taken = self.samples[:count]
        return np.concatenate([taken, np.zeros(count - len(taken), dtype=np.int16)])

    # -- hooks ----------------------------------------------------------------------------------

    def on_disconnect(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        self._take = None
        if self._alert_reset is not None:
            self._alert_reset.cancel()
            self._alert_reset = None

    def on_read(self, char: GattChar) -> bytes:
        if not self.stock_example and char.handle == _STATUS_HANDLE:
            return self._status_value()
        return char.value

    def on_write(self, char: GattChar, data: bytes) -> None:
        char.value = data
        if char.handle != _CONTROL_HANDLE or self.stock_example:
            return
        self.requests.append(data)
        if self.ignore_requests:
            return
        if data == b"\x02":
            self._cancel()
            return
        if len(data) != 8 or data[0] != 0x01:
            self._send_end(0, data[-1] if len(data) == 8 else 0, 3, 0)
            return
        _op, duration_ms, audio_format, max_chunk, take = struct.unpack("<BIBBB", data)
        self._cancel()
        if (
            audio_format not in (0, 1)
            or not max_chunk >= 4
            or not 0 < duration_ms <= self.max_seconds * 1000
        ):
            self._send_end(0, take, 3, 0)
            return
        self._take = _Take(take)
        self.takes += 1
        stream = self._stream(self._take, duration_ms, audio_format, min(max_chunk, MAX_VALUE))
        self._task = asyncio.get_running_loop().create_task(stream)

    # -- streaming ------------------------------------------------------------------------------

    async def _stream(self, take: _Take, duration_ms: int, audio_format: int, chunk: int) -> None:
        self._notify_status()
        samples = self.expected(duration_ms)
        audio = mulaw_encode(samples) if audio_format == 0 else samples.astype("<i2").tobytes()
        size = chunk - 3
        count = math.ceil(len(audio) / size)
        header = struct.pack(
            "<HBBBIIH", 0, 0x48, take.take, audio_format, BOARD_RATE, len(audio), count
        )
        self._notify_audio(header)
        loop = asyncio.get_running_loop()
        started = loop.time()
        byte_rate = BOARD_RATE * (1 if audio_format == 0 else 2)
        for seq in range(1, count + 1):
            piece = audio[(seq - 1) * size : seq * size]
            await self._wait_for(started, min(seq * size, len(audio)) / byte_rate, seq)
            if seq == self.drop_link_at:
                self.drop_connection()
                return
            if seq == self.audio_fails_at:
                self._finish(take, seq, 2)
                return
            self._send_data(seq, piece)
            take.sent = seq
        self._finish(take, count + 1, 0)

    async def _wait_for(self, started: float, recorded_s: float, seq: int) -> None:
        """Chunk ``seq`` leaves once its audio (``recorded_s`` into the take) is recorded."""
        if self.pace <= 0:
            if seq % 16 == 0:
                await asyncio.sleep(0)  # let the hub's side run, as a radio would
            return
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, started + recorded_s / self.pace - loop.time()))

    def _send_data(self, seq: int, piece: bytes) -> None:
        self.chunks_sent += 1
        if seq in self.drop_chunks:
            return  # lost on the air
        chunk = struct.pack("<HB", seq, 0x44) + piece
        self._notify_audio(chunk)
        if seq in self.repeat_chunks:
            again = chunk[:-1] + bytes([chunk[-1] ^ 0x55]) if self.alter_repeats else chunk
            self._notify_audio(again)

    def _finish(self, take: _Take, seq: int, status: int) -> None:
        self._send_end(seq, take.take, status, take.sent)
        if self._take is take:
            self._take = None
            self._task = None
            self._notify_status()

    def _cancel(self) -> None:
        task, take = self._task, self._take
        self._task = None
        if task is not None and not task.done():
            task.cancel()
        if take is not None:
            self._take = None
            self._send_end(take.sent + 1, take.take, 1, take.sent)
            self._notify_status()

    def _send_end(self, seq: int, take: int, status: int, sent: int) -> None:
        self._notify_audio(struct.pack("<HBBBH", seq, 0x45, take, status, sent))

    def _notify_audio(self, data: bytes) -> None:
        self.notify(characteristic_uuid(self.service_uuid, 3), data)

    def _status_value(self) -> bytes:
        battery = 0xFF if self.battery is None else self.battery
        return struct.pack("<BB", battery, int(self.recording)) + self.firmware.encode()[:18]

    def _notify_status(self) -> None:
        if not self.stock_example:
            self.notify(characteristic_uuid(self.service_uuid, 4), self._status_value())

    def _reset_alert(self) -> None:
        self._alert_reset = None
        self.notify(ALERT_LEVEL, b"\x00")


def demo_backend(
    **options: object,
) -> tuple[type[EmulatedBleakClient], type[EmulatedBleakScanner], EmulatedNiclaVoice]:
    """(client backend, scanner backend, board) for a hub started in-process with the board.

    Pass the client backend as the ``nicla_voice`` driver's ``backend`` and the scanner backend
    to ``BleAdvertisements(seconds, backend)``; ``options`` go to :class:`EmulatedNiclaVoice`.
    """
    board = EmulatedNiclaVoice(**options)  # type: ignore[arg-type]
    return board.client_backend(), board.scanner_backend(), board


async def demo_wakes(
    board: EmulatedNiclaVoice,
    every_s: float = 30.0,
    labels: Sequence[str] = ("NN0:hey_arduino",),
) -> None:
    """Say a wake word every ``every_s`` while a hub is connected (run it as a task)."""
    index = 0
    while True:
        await asyncio.sleep(every_s)
        if board.connected:
            board.wake(labels[index % len(labels)])
            index += 1
