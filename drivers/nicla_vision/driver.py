"""The Arduino Nicla Vision over USB: photos, short video clips, microphone audio, its status.

The board runs OpenMV with ``firmware_bridges/nicla_vision/main.py`` saved as its ``main.py``:
OpenMV's RPC library on the USB virtual COM port (``openmv_rpc.py`` is the host side).
The callbacks and their formats are documented in ``firmware_bridges/nicla_vision/README.md``:

- a photo is ``jpeg_image_snapshot`` (the board captures and compresses, answers the size), then
  ``jpeg_image_read`` in 32 KiB slices, each CRC-checked and read again if it arrives damaged;
- a clip is ``video_burst`` (frames captured into the board's RAM at a steady interval; it stops
  early when the heap is full, so a long clip takes several bursts), then ``video_frame_read``
  slices, made into an MP4 here (``media/video.py``);
- audio is ``audio_record`` (the board's microphone fills a 2 s ring while the host reads), then
  ``audio_read`` in half-second slices, which the board answers as soon as they are recorded;
  16 kHz mono 16-bit, wrapped as WAV (``media/audio.py``).

Every RPC call is audited through the hub (``Driver.audit``) before it is sent (the probe's
``status`` excepted, as the Flipper driver's probe). Every call is safe to repeat (a read, or a
capture that simply starts again), so a result that arrives damaged is asked for again, three
calls at most. One operation holds the line from its first call to its last, so a probe or a
second tool never interleaves with a photo being read. Every failure is a NiclaError whose text
is for a person; NiclaNotConnected when the board is gone (the driver then reads offline).

The board also advertises a BLE status service for when it is worn away from USB (UUIDs below);
this driver does not use it: the hub's BLE side would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import struct
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from drivers.base import (
    Driver,
    DriverError,
    DriverStatus,
    Setting,
    UsbMatcher,
)
from drivers.nicla_vision.openmv_rpc import (
    BAUDRATE,
    READ_TIMEOUT_S,
    RpcHost,
    RpcLinkError,
    RpcUnknownFunction,
)
from drivers.transports.serial import SerialLine, SerialLineError
from media.audio import Pcm, wav_bytes
from media.video import VideoError, is_jpeg, jpegs_to_mp4

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

ARDUINO_VID = 0x2341
OPENMV_PID = 0x055F
ARDUINO_CORE_PIDS = (0x025F, 0x035F, 0x045F)

BLE_NAME = "Nicla Vision"
BLE_STATUS_SERVICE_UUID = "0272c15a-f467-488a-88e5-6b474a7fc499"
BLE_STATUS_CHARACTERISTIC_UUID = "0272c15b-f467-488a-88e5-6b474a7fc499"
"""Project-defined (firmware_bridges/nicla_vision/main.py): read/notify, compact status JSON."""

PHOTO_FORMAT = "sensor.RGB565,sensor.QVGA"
CLIP_FORMAT = "sensor.RGB565,sensor.QVGA"
CLIP_QUALITY = 50
CLIP_FPS = 8
MAX_BURSTS = 16
CHUNK = 32 * 1024  # upstream's example reads JPEGs in 32 KiB CRC-checked slices
MAX_JPEG = 1 << 20
AUDIO_RATE = 16_000
AUDIO_CHUNK = 16_000  # half a second of 16-bit mono: the board's ring holds four
READ_ATTEMPTS = 3
STATUS_S = 2.0
PROBE_S = 1.0
SNAPSHOT_S = 5.0
READ_S = 3.0
RECENT_S = 2.0
LIMIT_S = 60.0  # the board records at most 60 s of audio; clips are held to the same


class NiclaError(DriverError):
    """What went wrong with the Nicla Vision, in words for a person."""


class NiclaNotConnected(NiclaError):
    """No Nicla Vision is attached (or it went away mid-operation)."""


def _limit(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= LIMIT_S:
        raise ValueError(
            f"drivers.nicla_vision.{key} must be a number of seconds, 0 to {LIMIT_S:g}"
        )
    return float(value)


def checked_seconds(seconds: Any, limit: float, what: str) -> float:
    """``seconds`` as a float in (0, limit], or NiclaError saying what is allowed."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or math.isnan(seconds):
        raise NiclaError(f"give the {what} length in seconds (more than 0, at most {limit:g})")
    if not 0 < seconds <= limit:
        raise NiclaError(f"a {what} is more than 0 and at most {limit:g} seconds long")
    return float(seconds)


def _quality(quality: Any) -> int:
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise NiclaError("JPEG quality is a whole number from 1 to 100")
    return quality


def _failed(result: bytes, what: str) -> None:
    """The board script answers ``ERR:<exception>`` when a callback raised."""
    if result.startswith(b"ERR:"):
        reason = result[4:].decode("utf-8", "replace").strip()
        raise NiclaError(f"the Nicla Vision could not {what}: {reason}")


def _size(result: bytes, what: str, limit: int) -> int:
    _failed(result, what)
    if len(result) != 4:
        raise NiclaError(f"the Nicla Vision answered {what} with {len(result)} bytes, not a size")
    size = int.from_bytes(result, "little")
    if not 0 < size <= limit:
        raise NiclaError(f"the Nicla Vision announced {size} bytes for {what} (limit {limit})")
    return size


def _fps(intervals: int, span_s: float) -> float:
    """Frames per second as captured (so the clip plays in real time), within what MP4 takes."""
    if intervals <= 0 or span_s <= 0:
        return float(CLIP_FPS)
    return min(30.0, max(1.0, intervals / span_s))


class NiclaVisionDriver(Driver):
    name: ClassVar[str] = "nicla_vision"
    usb: ClassVar[tuple[UsbMatcher, ...]] = (
        UsbMatcher(vid=ARDUINO_VID, pid=OPENMV_PID),
        *(UsbMatcher(vid=ARDUINO_VID, pid=pid) for pid in ARDUINO_CORE_PIDS),
    )
    capabilities: ClassVar[tuple[str, ...]] = ("camera", "video", "microphone")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "port",
            "",
            "pin the Nicla Vision to this path (a port, a pseudo-terminal or a symlink); empty "
            "finds it by its USB id",
        ),
        Setting("max_clip_s", 10.0, f"the longest clip, in seconds (at most {LIMIT_S:g})"),
        Setting("max_listen_s", 30.0, f"the longest recording, in seconds (at most {LIMIT_S:g})"),
    )

    @classmethod
    def agent_tools(cls) -> Sequence[AgentTool]:
        from drivers.nicla_vision.tools import TOOLS  # loads strands (~0.4 s): when first mounted

        return TOOLS

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        self._line = SerialLine(baudrate=BAUDRATE, read_timeout_s=READ_TIMEOUT_S)
        self._rpc = RpcHost(self._line)
        self.max_clip_s = _limit(config, "max_clip_s", 10.0)
        self.max_listen_s = _limit(config, "max_listen_s", 30.0)
        self.info: dict[str, Any] = {}
        self._last_ok = 0.0

    # --- the manager's side -------------------------------------------------------------------

    async def start(self) -> None:
        await self._line.open(self.port)
        try:
            self.info = await self._status(audited=True)
        except NiclaNotConnected:
            raise
        except NiclaError as exc:
            raise NiclaError(
                f"{exc} (is firmware_bridges/nicla_vision/main.py saved on the board as main.py, "
                "and the OpenMV IDE disconnected?)"
            ) from None

    async def stop(self) -> None:
        await self._line.close()

    def status(self) -> DriverStatus:
        if not self._line.is_open:
            return DriverStatus("offline", "Nicla Vision is not connected")
        firmware = self.info.get("firmware", "?")
        return DriverStatus("online", f"{self.device_name} on {self.port}, firmware {firmware}")

    async def probe(self) -> bool:
        if not self._line.is_open:
            return False
        heard = max(self._last_ok, self._line.last_rx)
        if self._line.busy or time.monotonic() - heard < RECENT_S:
            return True
        try:
            await self._status(audited=False, timeout_s=PROBE_S)
        except NiclaError:
            return False
        return True

    # --- what the tools ask -------------------------------------------------------------------

    @property
    def device_name(self) -> str:
        ble = self.info.get("ble")
        name = ble.get("name") if isinstance(ble, dict) else None
        return str(name or BLE_NAME)

    async def snapshot(self, *, quality: int = 90) -> bytes:
        """One photo (QVGA colour) as a complete JPEG; never a half-read one."""
        quality = _quality(quality)
        async with self._operation():
            answer = await self._call(
                "jpeg_image_snapshot",
                f"{PHOTO_FORMAT},{quality}".encode(),
                audit=f"jpeg_image_snapshot RGB565 QVGA q{quality}",
                timeout_s=SNAPSHOT_S,
            )
            size = _size(answer, "take a photo", MAX_JPEG)
            photo = await self._read_all("jpeg_image_read", size, "the photo")
        if not is_jpeg(photo):
            raise NiclaError("the photo from the Nicla Vision arrived incomplete")
        return photo

    async def clip(self, seconds: float) -> bytes:
        """About ``seconds`` of video (QVGA, ~8 frames a second) as an MP4 clip."""
        seconds = checked_seconds(seconds, self.max_clip_s, "clip")
        wanted = max(2, round(seconds * CLIP_FPS))
        frames: list[bytes] = []
        intervals, span_s = 0, 0.0
        async with self._operation():
            for _ in range(MAX_BURSTS):
                if len(frames) >= wanted:
                    break
                sizes, burst_span_s = await self._burst(wanted - len(frames))
                for index, size in enumerate(sizes):
                    frames.append(await self._read_frame(index, size))
                intervals += len(sizes) - 1
                span_s += burst_span_s
        try:
            return await asyncio.to_thread(jpegs_to_mp4, frames, _fps(intervals, span_s))
        except VideoError as exc:
            raise NiclaError(
                f"the frames from the Nicla Vision did not make a clip: {exc}"
            ) from None

    async def listen(self, seconds: float) -> bytes:
        """``seconds`` of the board's microphone as a WAV file (16 kHz, mono, 16-bit)."""
        seconds = checked_seconds(seconds, self.max_listen_s, "recording")
        ms = max(1, round(seconds * 1000))
        async with self._operation():
            answer = await self._call(
                "audio_record",
                struct.pack("<I", ms),
                audit=f"audio_record {ms} ms",
                timeout_s=STATUS_S,
            )
            total = _size(answer, "record", int(LIMIT_S) * AUDIO_RATE * 2)
            pcm = bytearray()
            for offset in range(0, total, AUDIO_CHUNK):
                pcm += await self._read_audio(offset, min(AUDIO_CHUNK, total - offset))
        return wav_bytes(Pcm(bytes(pcm), AUDIO_RATE, channels=1, width=2))

    async def board_status(self) -> dict[str, Any]:
        """The board's own status (firmware, uptime, battery when known, ...) and the link."""
        async with self._operation():
            self.info = await self._status(audited=True)
        return {**self.info, "port": self.port, "connection": f"USB serial on {self.port}"}

    # --- below: one RPC call at a time -------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _operation(self) -> AsyncIterator[None]:
        """Hold the line for a whole operation; NiclaNotConnected when there is no line."""
        if not self._line.is_open:
            raise NiclaNotConnected("Nicla Vision is not connected")
        async with self._line.transaction():
            yield

    async def _call(
        self,
        name: str,
        data: bytes = b"",
        *,
        audit: str | None,
        timeout_s: float,
        send_timeout_s: float | None = None,
        empty_ok: bool = False,
    ) -> bytes:
        """One audited RPC call, every failure as a NiclaError (``b""`` kept if ``empty_ok``).

        Every call here is safe to repeat (a read, or a capture that simply starts again), so a
        result that arrives damaged is asked for again, up to READ_ATTEMPTS calls in all.
        """
        if not self._line.is_open:
            raise NiclaNotConnected("Nicla Vision is not connected")
        if audit is not None:
            self.audit(audit)
        try:
            result = await self._rpc.call(
                name,
                data,
                timeout_s=timeout_s,
                attempts=READ_ATTEMPTS,
                send_timeout_s=send_timeout_s,
            )
        except RpcUnknownFunction as exc:
            if not empty_ok:
                raise NiclaError(str(exc)) from None
            result = b""
        except RpcLinkError as exc:
            if exc.gone or not self._line.is_open:
                await self._line.close()
                raise NiclaNotConnected(
                    f"Nicla Vision is not connected (it went away during {name})"
                ) from None
            raise NiclaError(str(exc)) from None
        except SerialLineError as exc:  # pragma: no cover - RpcHost maps these
            raise NiclaError(str(exc)) from None
        self._last_ok = time.monotonic()
        return result

    async def _status(self, *, audited: bool, timeout_s: float = STATUS_S) -> dict[str, Any]:
        answer = await self._call(
            "status",
            audit="status" if audited else None,
            timeout_s=timeout_s,
            send_timeout_s=timeout_s,
        )
        _failed(answer, "report its status")
        try:
            status = json.loads(answer)
        except ValueError:
            raise NiclaError("the Nicla Vision's status is not JSON") from None
        if not isinstance(status, dict):
            raise NiclaError("the Nicla Vision's status is not a JSON object")
        return status

    async def _read_all(self, name: str, size: int, what: str, *prefix: int) -> bytes:
        """``size`` bytes in CHUNK slices: ``name(<I..prefix, offset, size>)`` each, re-asked when
        a slice arrives damaged."""
        data = bytearray()
        for offset in range(0, size, CHUNK):
            count = min(CHUNK, size - offset)
            where = " ".join(str(p) for p in prefix)
            chunk = await self._call(
                name,
                struct.pack(f"<{len(prefix) + 2}I", *prefix, offset, count),
                audit=f"{name} {where + ' ' if where else ''}{offset}+{count}",
                timeout_s=READ_S,
                empty_ok=True,
            )
            if len(chunk) != count:
                raise NiclaError(
                    f"the Nicla Vision sent {len(chunk)} of bytes {offset}-{offset + count} of "
                    f"{what} (it no longer has them, or its firmware lacks {name}: "
                    "flash firmware_bridges/nicla_vision/main.py)"
                )
            data += chunk
        return bytes(data)

    async def _burst(self, frames: int) -> tuple[list[int], float]:
        """Capture up to ``frames`` frames on the board: their sizes and the time they spanned."""
        interval_ms = round(1000 / CLIP_FPS)
        answer = await self._call(
            "video_burst",
            f"{CLIP_FORMAT},{CLIP_QUALITY},{frames},{interval_ms}".encode(),
            audit=f"video_burst RGB565 QVGA q{CLIP_QUALITY} {frames} frames {interval_ms} ms",
            timeout_s=frames * interval_ms / 1000 + SNAPSHOT_S,
        )
        _failed(answer, "record video")
        if len(answer) < 8:
            raise NiclaError("the Nicla Vision's video_burst answer is too short")
        count, span_ms = struct.unpack_from("<II", answer)
        if count == 0:
            raise NiclaError("the Nicla Vision had no memory free for video")
        if len(answer) != 8 + 4 * count or count > frames:
            raise NiclaError("the Nicla Vision's video_burst answer does not add up")
        sizes = list(struct.unpack_from(f"<{count}I", answer, 8))
        if not all(0 < size <= MAX_JPEG for size in sizes):
            raise NiclaError("the Nicla Vision announced a video frame of an impossible size")
        return sizes, span_ms / 1000

    async def _read_frame(self, index: int, size: int) -> bytes:
        frame = await self._read_all("video_frame_read", size, f"video frame {index}", index)
        if not is_jpeg(frame):
            raise NiclaError(f"video frame {index} from the Nicla Vision arrived incomplete")
        return frame

    async def _read_audio(self, offset: int, count: int) -> bytes:
        chunk = await self._call(
            "audio_read",
            struct.pack("<II", offset, count),
            audit=f"audio_read {offset}+{count}",
            timeout_s=count / (AUDIO_RATE * 2) + READ_S,
            empty_ok=True,
        )
        if len(chunk) != count:
            raise NiclaError(
                f"the Nicla Vision lost part of the recording (bytes {offset}-{offset + count}: "
                f"{len(chunk)} came); try again"
            )
        return chunk
