"""An Arduino Nicla Vision running ``firmware_bridges/nicla_vision/main.py``, on a pseudo-terminal.

It is one module on purpose: the RPC slave, the camera, the microphone and the pty are one
board, started and stopped as one.

Why
---
The hub reaches a Nicla Vision through OpenMV's RPC library over the board's USB virtual COM port.
Tests, benchmarks and demos must run with no board plugged in, so this plays the camera's side of
a real pty: the hub's driver talks to it through real pyserial, exactly as to ``/dev/ttyACM0``.

What it speaks
--------------
The slave side of the RPC protocol, step for step as ``rpc_slave.loop`` in openmv/openmv
``scripts/libraries/rpc.py`` with ``rpc_usb_vcp_slave``'s byte transport (summary in
``drivers/nicla_vision/openmv_rpc.py`` and ``docs/hardware.md``):

- wait for a 12-byte command header with a short per-byte timeout (the board script's
  ``FIRST_WAIT_MS``, 250 ms, where the library's own is 2 ms; +1 ms per failed try, reset after a
  second without a command), emptying the input before every try;
- acknowledge it with an empty ``0x1209`` packet, read the data packet (5 s per byte), acknowledge
  with an empty ``0xABD1``, run the callback (an unregistered name gives ``b""``);
- serve the result the same way: flush, wait for an empty ``0x9021`` poll, answer the length,
  wait for an empty ``0x1DBA`` poll, send the result; give up after ``SEND_TIMEOUT_MS`` (the
  board script's ``RESULT_HOLD_MS``, 5 s) without a delivered result;
- run a callback scheduled with ``schedule_callback`` after a delivered result (the upstream
  cut-through read of ``jpeg_image_read`` with no arguments).

The codec here is the emulator's own (upstream's CRC loop, tabulated; not
``drivers.nicla_vision.openmv_rpc``): the two only meet on the wire. The callbacks are the board
script's, with the same argument and result formats (see
``firmware_bridges/nicla_vision/README.md``): photos and video frames are JPEGs drawn with OpenCV (a
scene with a frame counter and the time, so every frame differs), audio is a WAV file's speech
(``tests/fixtures/speech/kitchen.wav``, else a tone) looped and delivered in real time through a 64
KiB ring as the board's microphone fills it.

The pty, the host's open/close detection, unplugging and the stable link are the USB cable's, not
the board's: they come from ``firmware_bridges/emulators/usb_pty.py`` (``PtyPort``, ``PtyDevice``),
shared with the Flipper emulator rather than copied; only the session differs.

Fault knobs (each acts once): ``corrupt_next_packet`` (flip the CRC of the next packet of a kind,
by default a result), ``truncate_next_packet`` (send half of it and nothing more),
``vanish_mid_next_result`` (send half of the next result, then pull the cable), ``go_silent`` /
``resume`` (answer nothing). An unknown function needs no knob: the board answers ``b""``, so
``unregister(name)`` makes a firmware without that callback.

Timing: the board answers at once; so that the emulator does too on a busy computer, the thread
serving the port asks for real-time scheduling (``real_time_thread``) where the OS grants it.

Not emulated: Wi-Fi, the IMU and ToF sensor, the BLE status service (the board script's BLE side),
frame-buffer streaming to the OpenMV IDE, and a callback's exception (on the board the script
stops; the script catches them and answers ``ERR:...`` instead, as here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from drivers.base import PortInfo
from firmware_bridges.emulators.usb_pty import PtyDevice, PtyPort, Unplugged
from media.audio import AudioError, read_wav, resample, to_float_mono

__all__ = [
    "DEFAULT_WAV",
    "FRAME_SIZES",
    "NiclaVisionEmulator",
    "main",
    "run",
]

COMMAND_HEADER = 0x1209
COMMAND_DATA = 0xABD1
RESULT_HEADER = 0x9021
RESULT_DATA = 0x1DBA

SHORT_RESET_MS = 2  # rpc_slave's short timeouts (sending)
FIRST_WAIT_MS = 250
"""The first wait for a packet of the host: the board script's ``FIRST_WAIT_MS`` (it sets the
library's ``_get_short_timeout_reset``, 2 ms upstream); it grows 1 ms a miss from there."""
LONG_MS = 5000
RECV_TIMEOUT_MS = 1000  # the board script's loop(recv_timeout=COMMAND_WAIT_MS, ...)
SEND_TIMEOUT_MS = 5000
"""How long a result waits for the host's polls: the board script's ``RESULT_HOLD_MS``, its
loop's ``send_timeout`` (the library's default is 1 s; a busy host backs off longer)."""
MAX_DATA = 1 << 16  # a longer "data length" is noise (the board would fail to allocate it)

FIRMWARE = "tiny-hub-nicla 1.0"
OPENMV_VERSION = "4.6.20"
BOARD = "Arduino Nicla Vision"
BLE_NAME = "Nicla Vision"
FRAME_SIZES = {"QQVGA": (160, 120), "QVGA": (320, 240), "HVGA": (480, 320), "VGA": (640, 480)}
PIXFORMATS = ("RGB565", "GRAYSCALE")
AUDIO_RATE = 16_000
AUDIO_BLOCK = 1024  # bytes per microphone callback on the Nicla Vision (512 samples, DFSDM)
AUDIO_RING = 64 * AUDIO_BLOCK
AUDIO_MAX_MS = 60_000
VIDEO_MAX_FRAMES = 120
VIDEO_RAM = 200 * 1024  # heap the board can give a burst of frames
DEFAULT_WAV = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "speech" / "kitchen.wav"

Fault = Literal["corrupt", "truncate", "vanish"]


# --- the emulator's own codec (upstream's arithmetic) -------------------------------------------


def _crc_table() -> list[int]:
    """Upstream's bit-by-bit CRC-16 (poly 0x1021), run once per byte value."""
    table = []
    for value in range(256):
        crc = value << 8
        for _ in range(8):
            crc = ((crc << 1) ^ (0x1021 if crc & 0x8000 else 0)) & 0xFFFF
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def _crc16(data: bytes) -> int:
    """CRC-16, initial 0xFFFF: the bit loop of ``rpc.__def_crc_16`` a byte at a time."""
    crc = 0xFFFF
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[(crc >> 8) ^ byte]
    return crc


def _hash(name: str) -> int:
    h = 5381
    for byte in name.encode():
        h = ((h << 5) + h) ^ byte
    return h & 0xFFFFFFFF


def _packet(magic: int, payload: bytes = b"") -> bytes:
    body = struct.pack("<H", magic) + payload
    return body + struct.pack("<H", _crc16(body))


def _valid(packet: bytes | None, magic: int) -> bool:
    """``rpc._get_packet``'s test: the magic, and the CRC over everything before it."""
    if packet is None or len(packet) < 4:
        return False
    return (packet[0] | packet[1] << 8) == magic and (packet[-2] | packet[-1] << 8) == _crc16(
        packet[:-2]
    )


# --- what the board shows and hears --------------------------------------------------------------


def scene(width: int, height: int, frame: int, *, gray: bool = False) -> np.ndarray:
    """A BGR (or gray) picture that changes every frame: a moving ball, the counter, the time."""
    x = np.linspace(0, 1, width, dtype=np.float32)
    y = np.linspace(0, 1, height, dtype=np.float32)[:, None]
    image = np.empty((height, width, 3), np.uint8)
    image[..., 0] = (120 + 100 * x * (1 - y)).astype(np.uint8)
    image[..., 1] = (60 + 120 * y + 0 * x).astype(np.uint8)
    image[..., 2] = (200 - 150 * x * y).astype(np.uint8)
    radius = max(4, height // 8)
    cx = int((0.5 + 0.4 * math.sin(frame / 5)) * width)
    cy = int((0.5 + 0.3 * math.cos(frame / 7)) * height)
    cv2.circle(image, (cx, cy), radius, (40, 220, 250), -1)
    scale = width / 640
    text = datetime.now().strftime("%H:%M:%S.%f")[:-3]
    for row, line in enumerate((BLE_NAME, f"frame {frame}", text)):
        origin = (int(10 * scale) + 2, int((30 + 32 * row) * scale) + 10)
        cv2.putText(
            image, line, origin, cv2.FONT_HERSHEY_SIMPLEX, 0.9 * scale + 0.2, (255, 255, 255), 1
        )
    return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if gray else image


def jpeg(image: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - OpenCV always encodes these
        raise RuntimeError("JPEG encoding failed")
    return bytes(buf.tobytes())


def _tone(seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(AUDIO_RATE * seconds), dtype=np.float32) / AUDIO_RATE
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 2 * t)
    return (0.3 * envelope * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def room_audio(wav: Path | None) -> bytes:
    """16 kHz mono 16-bit PCM the microphone "hears": the WAV resampled, or a tone without it."""
    samples: np.ndarray | None = None
    if wav is not None:
        try:
            pcm = read_wav(wav.read_bytes())
            samples = resample(to_float_mono(pcm), pcm.rate, AUDIO_RATE)
        except (OSError, AudioError):
            samples = None
    if samples is None or len(samples) == 0:
        samples = _tone()
    return bytes((np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes())


@dataclass
class _Recording:
    started: float
    total: int
    data: bytes

    def recorded(self, now: float) -> int:
        """Bytes the microphone has delivered by ``now``: whole 1024-byte callbacks."""
        blocks = int((now - self.started) * AUDIO_RATE * 2) // AUDIO_BLOCK
        return min(self.total, blocks * AUDIO_BLOCK)


def _fields(data: bytes) -> list[str]:
    return [part.strip() for part in data.decode().split(",")] if data else []


def _choice(name: str, allowed: Collection[str]) -> str:
    key = name.removeprefix("sensor.")
    if key not in allowed:
        raise ValueError(f"unknown {name}")
    return key


# --- one plug-in of the cable ---------------------------------------------------------------------


class _VcpSlave(PtyPort):
    """One plug-in of the cable (``usb_pty.PtyPort``: the pty and its thread), playing
    ``rpc_usb_vcp_slave`` on it."""

    NAME = "nicla-vision-emulator"

    def __init__(self, emulator: NiclaVisionEmulator) -> None:
        super().__init__(emulator)
        self.nicla = emulator
        self.put_short, self.get_short = SHORT_RESET_MS, FIRST_WAIT_MS
        self.scheduled: Callable[[], None] | None = None
        self.current: str | None = None  # the call being answered (for the fault knobs)

    # --- rpc_usb_vcp_slave's transport ---

    def get_bytes(self, size: int, timeout_ms: int) -> bytes | None:
        """``usb_vcp.recv(buf, timeout)``: every byte within ``timeout_ms`` of the one before."""
        buf = bytearray()
        while len(buf) < size:
            byte = self.getc(timeout_ms / 1000)
            if byte is None:
                return None
            buf.append(byte)
        return bytes(buf)

    def flush(self) -> None:
        """``usb_vcp.read()``: drop whatever has arrived."""
        while True:
            self.inbuf.clear()
            self._fill(0)
            if not self.inbuf:
                return

    def put_bytes(self, data: bytes) -> None:
        self.out(data)

    def send(self, magic: int, packet: bytes) -> None:
        """Send a packet, through the fault knobs."""
        fault = self.nicla._take_fault(magic, self.current)
        if fault == "corrupt":
            packet = packet[:-2] + bytes([packet[-2] ^ 0xFF, packet[-1] ^ 0x5A])
        elif fault in ("truncate", "vanish"):
            packet = packet[: max(1, len(packet) // 2)]
        self.put_bytes(packet)
        if fault == "vanish":
            self.nicla.unplug()
            raise Unplugged

    def wait(self, seconds: float) -> None:
        """Sleep in a callback, still pullable: an unplug ends the session."""
        if self.closing.wait(max(0.0, seconds)):
            raise Unplugged

    # --- rpc_slave ---

    def _session(self) -> None:
        real_time_thread()
        while True:  # rpc_slave.loop()
            command, data = self._get_command(RECV_TIMEOUT_MS)
            if command is None or data is None:
                continue
            result = self.nicla._dispatch(self, command, data)
            if self._put_result(result, SEND_TIMEOUT_MS) and self.scheduled is not None:
                self.scheduled()
            self.scheduled = None

    def _silent(self) -> bool:
        if not self.nicla.silent:
            return False
        self.flush()
        self.wait(0.01)
        return True

    def _grow(self, limit_ms: int) -> None:
        self.put_short = min(self.put_short + 1, limit_ms)
        self.get_short = min(self.get_short + 1, limit_ms)

    def _get_command(self, timeout_ms: int) -> tuple[int | None, bytes | None]:
        self.put_short, self.get_short = SHORT_RESET_MS, FIRST_WAIT_MS
        self.current = None
        start = time.monotonic()
        while (time.monotonic() - start) * 1000 < timeout_ms:
            if self._silent():
                continue
            self.flush()
            packet = self.get_bytes(12, self.get_short)
            if packet is not None and _valid(packet, COMMAND_HEADER):
                command, size = struct.unpack("<II", packet[2:10])
                if size <= MAX_DATA:
                    self.send(COMMAND_HEADER, _packet(COMMAND_HEADER))
                    body = self.get_bytes(size + 4, LONG_MS)
                    if _valid(body, COMMAND_DATA):
                        assert body is not None
                        self.send(COMMAND_DATA, _packet(COMMAND_DATA))
                        return command, body[2:-2]
            self._grow(timeout_ms)
        return None, None

    def _put_result(self, data: bytes, timeout_ms: int) -> bool:
        self.put_short, self.get_short = SHORT_RESET_MS, FIRST_WAIT_MS
        header = _packet(RESULT_HEADER, struct.pack("<I", len(data)))
        body = _packet(RESULT_DATA, data)
        start = time.monotonic()
        while (time.monotonic() - start) * 1000 < timeout_ms:
            if self._silent():
                continue
            self.flush()
            if _valid(self.get_bytes(4, self.get_short), RESULT_HEADER):
                self.send(RESULT_HEADER, header)
                if _valid(self.get_bytes(4, self.get_short), RESULT_DATA):
                    self.send(RESULT_DATA, body)
                    return True
            self._grow(timeout_ms)
        return False


def real_time_thread() -> bool:
    """Ask the OS to run the calling thread as a real-time one (``SCHED_FIFO``, the lowest
    priority). The board answers within a millisecond whatever its host is doing; software on
    a busy computer answers when it gets a core, tens of ms later, and OpenMV's host library
    gives up on an answer 10 ms late. Where the OS refuses (not Linux, or neither root nor
    CAP_SYS_NICE) the thread runs as any other: the board is then as late as the computer is
    busy. True when granted."""
    set_scheduler = getattr(os, "sched_setscheduler", None)
    if set_scheduler is None:
        return False
    try:
        set_scheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        return False
    return True


# --- the board ------------------------------------------------------------------------------------


class NiclaVisionEmulator(PtyDevice[_VcpSlave]):
    """A Nicla Vision with the tiny-hub board script, on a pty. ``start()`` returns the path a
    client opens with pyserial; ``link`` keeps a symlink to the current pty across replugs
    (plugging, unplugging and the link: ``usb_pty.PtyDevice``).

    ``calls`` lists every function the host called (its name, or ``#<hash>`` for one the board
    does not know), in order: the audit of what reached the "hardware".
    """

    def __init__(
        self,
        *,
        link: Path | None = None,
        wav: Path | None = DEFAULT_WAV,
        video_ram: int = VIDEO_RAM,
        settle: float = 0.02,
    ) -> None:
        super().__init__(link=link, settle=settle)
        self.video_ram = video_ram
        self.calls: list[str] = []
        self.silent = False
        self._audio = room_audio(wav)
        self._audio_at = 0
        self._faults: deque[tuple[Fault, int, str | None]] = deque()
        self._frame = 0
        self._photo: bytes | None = None
        self._frames: list[bytes] = []
        self._recording: _Recording | None = None
        self._handlers: dict[int, tuple[str, Callable[[_VcpSlave, bytes], bytes]]] = {}
        for name, handler in (
            ("jpeg_image_snapshot", self._jpeg_image_snapshot),
            ("jpeg_image_read", self._jpeg_image_read),
            ("video_burst", self._video_burst),
            ("video_frame_read", self._video_frame_read),
            ("audio_record", self._audio_record),
            ("audio_read", self._audio_read),
            ("status", self._status),
        ):
            self._handlers[_hash(name)] = (name, handler)

    def usb_descriptor(self, path: str) -> PortInfo:
        """OpenMV's firmware on the Nicla Vision: Arduino's vendor id, OpenMV's product id."""
        return PortInfo(
            device=path,
            vid=0x2341,
            pid=0x055F,
            serial_number="EMULATED-NICLA-VISION",
            manufacturer="OpenMV",
            product="OpenMV Virtual Comm Port in FS Mode",
            description="OpenMV Virtual Comm Port in FS Mode",
        )

    def _new_port(self) -> _VcpSlave:
        """Each plug-in (start, replug) is a new RPC slave on a new pty, over this one board."""
        return _VcpSlave(self)

    # --- fault knobs ---

    def corrupt_next_packet(self, magic: int = RESULT_DATA, *, call: str | None = None) -> None:
        """Damage the CRC of the next packet with this magic the board sends (while answering
        ``call``, if given; acknowledgements of a command belong to no call yet)."""
        with self._lock:
            self._faults.append(("corrupt", magic, call))

    def truncate_next_packet(self, magic: int = RESULT_DATA, *, call: str | None = None) -> None:
        """Send only the first half of the next such packet, then nothing of it."""
        with self._lock:
            self._faults.append(("truncate", magic, call))

    def vanish_mid_next_result(self, *, call: str | None = None) -> None:
        """Send half of the next result packet (of ``call``, if given), then pull the cable."""
        with self._lock:
            self._faults.append(("vanish", RESULT_DATA, call))

    def go_silent(self) -> None:
        """Answer nothing (a hung script) until ``resume()``."""
        self.silent = True

    def resume(self) -> None:
        self.silent = False

    def unregister(self, name: str) -> None:
        """Forget a callback, as a firmware without it: the board then answers ``b""``."""
        with self._lock:
            self._handlers.pop(_hash(name), None)

    def _take_fault(self, magic: int, call: str | None) -> Fault | None:
        with self._lock:
            for index, (fault, target, only) in enumerate(self._faults):
                if target == magic and only in (None, call):
                    del self._faults[index]
                    return fault
        return None

    # --- the board script's callbacks ---

    def _dispatch(self, port: _VcpSlave, command: int, data: bytes) -> bytes:
        with self._lock:
            name, handler = self._handlers.get(command, (f"#{command:08x}", None))
            self.calls.append(name)
        port.current = name
        if handler is None:
            return b""
        try:
            return handler(port, data)
        except (ValueError, IndexError, struct.error) as exc:  # the script's _guard()
            reading = name.endswith("_read")
            return b"" if reading else f"ERR:{type(exc).__name__}: {exc}".encode()

    def _capture(self, fields: list[str], quality: int) -> bytes:
        pixformat = _choice(fields[0] if fields else "RGB565", PIXFORMATS)
        width, height = FRAME_SIZES[_choice(fields[1] if len(fields) > 1 else "QVGA", FRAME_SIZES)]
        if not 1 <= quality <= 100:
            raise ValueError("quality is 1 to 100")
        self._frame += 1
        return jpeg(scene(width, height, self._frame, gray=pixformat == "GRAYSCALE"), quality)

    def _jpeg_image_snapshot(self, port: _VcpSlave, data: bytes) -> bytes:
        """ "sensor.RGB565,sensor.QVGA[,quality]" -> <I JPEG size."""
        fields = _fields(data)
        self._photo = self._capture(fields, int(fields[2]) if len(fields) > 2 else 90)
        return struct.pack("<I", len(self._photo))

    def _jpeg_image_read(self, port: _VcpSlave, data: bytes) -> bytes:
        """<II offset,size -> that slice; no data -> upstream's cut-through (raw bytes after)."""
        photo = self._photo
        if photo is None:
            return b""
        if not data:
            port.scheduled = lambda: port.put_bytes(photo)
            return b""
        offset, size = struct.unpack("<II", data)
        return photo[offset : offset + size]

    def _video_burst(self, port: _VcpSlave, data: bytes) -> bytes:
        """ "pixformat,framesize,quality,frames,interval_ms" -> <II count,span_ms + count x <I."""
        fields = _fields(data)
        quality, count, interval_ms = (int(v) for v in fields[2:5])
        if not 1 <= count <= VIDEO_MAX_FRAMES or not 0 <= interval_ms <= 2000:
            raise ValueError(f"1 to {VIDEO_MAX_FRAMES} frames, 0 to 2000 ms apart")
        self._frames = []
        used, first = 0, 0.0
        for index in range(count):
            if index:
                port.wait(interval_ms / 1000)
            frame = self._capture(fields, quality)
            if used + len(frame) > self.video_ram:
                break  # the board's heap is full: the burst ends early
            if not index:
                first = time.monotonic()
            self._frames.append(frame)
            used += len(frame)
        span_ms = int((time.monotonic() - first) * 1000) if len(self._frames) > 1 else 0
        sizes = [len(f) for f in self._frames]
        return struct.pack(f"<II{len(sizes)}I", len(sizes), span_ms, *sizes)

    def _video_frame_read(self, port: _VcpSlave, data: bytes) -> bytes:
        """<III frame,offset,size -> that slice of that frame."""
        index, offset, size = struct.unpack("<III", data)
        return self._frames[int(index)][int(offset) : int(offset) + int(size)]

    def _audio_record(self, port: _VcpSlave, data: bytes) -> bytes:
        """<I milliseconds -> <I bytes it will record; recording runs on while the host reads."""
        (ms,) = struct.unpack("<I", data)
        if not 1 <= ms <= AUDIO_MAX_MS:
            raise ValueError(f"record 1 to {AUDIO_MAX_MS} ms")
        total = ms * AUDIO_RATE // 1000 * 2
        with self._lock:
            self._recording = _Recording(time.monotonic(), total, self._take_audio(total))
        return struct.pack("<I", total)

    def _take_audio(self, size: int) -> bytes:
        room = self._audio
        out = bytearray()
        while len(out) < size:
            piece = room[self._audio_at : self._audio_at + size - len(out)]
            out += piece
            self._audio_at = (self._audio_at + len(piece)) % len(room)
        return bytes(out)

    def _audio_read(self, port: _VcpSlave, data: bytes) -> bytes:
        """<II offset,size -> those bytes once recorded; b"" if never recorded or overwritten."""
        offset, size = struct.unpack("<II", data)
        recording = self._recording
        if recording is None:
            return b""
        end = min(offset + size, recording.total)
        if offset >= end:
            return b""
        deadline = time.monotonic() + (end - recording.recorded(time.monotonic())) / 32_000 + 2
        while recording.recorded(time.monotonic()) < end and time.monotonic() < deadline:
            port.wait(0.005)
        recorded = recording.recorded(time.monotonic())
        if recorded < end or offset < recorded - AUDIO_RING:
            return b""
        return recording.data[offset:end]

    def _status(self, port: _VcpSlave, data: bytes) -> bytes:
        recording = self._recording
        busy = recording is not None and recording.recorded(time.monotonic()) < recording.total
        return json.dumps(
            {
                "board": BOARD,
                "firmware": FIRMWARE,
                "openmv": OPENMV_VERSION,
                "id": "4E49434C41454D55",
                "uptime_ms": int((time.monotonic() - self._boot) * 1000),
                "battery": None,
                "mem_free": self.video_ram + 48 * 1024,
                "usb": True,
                "ble": {"name": BLE_NAME, "advertising": True, "connected": 0},
                "audio": {"rate": AUDIO_RATE, "channels": 1, "width": 2, "recording": busy},
                "video": {"max_frames": VIDEO_MAX_FRAMES},
            },
            separators=(",", ":"),
        ).encode()


# --- running it by hand -----------------------------------------------------------------------


def run(link: Path | None = None, *, wav: Path | None = DEFAULT_WAV) -> None:
    """``tiny-hub emulate nicla-vision``: print the pty path, serve until Ctrl+C (or SIGTERM)."""
    NiclaVisionEmulator(link=link, wav=wav).serve()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m firmware_bridges.emulators.nicla_vision [--link PATH] [--wav FILE]``."""
    parser = argparse.ArgumentParser(
        prog="python -m firmware_bridges.emulators.nicla_vision",
        description="Emulate an Arduino Nicla Vision (OpenMV RPC over USB) on a pseudo-terminal.",
    )
    parser.add_argument("--link", type=Path, help="keep a symlink here to the current pty")
    parser.add_argument("--wav", type=Path, default=DEFAULT_WAV, help="what the microphone hears")
    options = parser.parse_args(argv)
    run(options.link, wav=options.wav)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
