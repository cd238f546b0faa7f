"""The Arduino Nicla Voice over Bluetooth LE: wake words as events, recordings as WAV.

The board (nRF52832 radio + Syntiant NDP120, docs/hardware.md) matches wake words on the NDP and
reads its microphone only through the NDP (``NDP.extractData``). It runs either the project's
sketch (``firmware_bridges/nicla_voice/nicla_voice.ino``), which offers the service below, or
Arduino's stock ``BLExaDemo`` example, which only raises an Immediate Alert on a match: that
still gives wake events (label ``"match"``), and nothing else (the FALLBACK).

The driver keeps the link for as long as it runs: ``start`` connects and subscribes, ``probe``
answers from the link (no polling traffic: the board tells us things), and a connected board
stops advertising, so the driver holds its address in ``drivers/transports/ble_presence.py``.

The bytes on the air are in :mod:`drivers.nicla_voice.wire`.

Settings (``[drivers.nicla_voice]``): ``service_uuid``, ``max_record_s`` (default 30),
``audio_format`` (``"mulaw"``, the default, or ``"pcm16"``: twice the bytes for the same
seconds). ``backend`` in its config is bleak's client backend class (None for the real stack).
Every command written to the board is audited first (``Driver.audit``), and every wake is an
event (``Driver.emit``) of kind ``"nicla_wake"`` with ``{"label", "uptime_ms", "at"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from drivers.base import BleMatcher, Driver, DriverStatus, Setting
from drivers.nicla_voice.wire import (
    ALERT_LEVEL_CHAR,
    AUDIO_CHAR,
    CANCEL_REQUEST,
    CHUNK_HEADER,
    CONTROL_CHAR,
    FORMAT_NAMES,
    FORMATS,
    IMMEDIATE_ALERT_SERVICE,
    MAX_CHUNK,
    MAX_SEQ,
    MIN_CHUNK,
    SAMPLE_WIDTH,
    SERVICE_UUID,
    STATUS_CHAR,
    STOCK_LABEL,
    STOCK_NAME,
    WAKE_CHAR,
    WAKE_EVENT,
    AudioHeader,
    BoardStatus,
    NiclaVoiceError,
    Reassembly,
    RecordRequest,
    Wake,
    characteristic_uuid,
    checked_service_uuid,
    decode_audio,
)
from drivers.transports.ble import BleError, BleLink, ClientBackend
from drivers.transports.ble_presence import hold, release
from media.audio import wav_bytes

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)


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
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "service_uuid",
            "",
            "the GATT service UUID of your Nicla Voice sketch; empty means the one in "
            "firmware_bridges/nicla_voice",
            env="TINY_HUB_NICLA_VOICE_SERVICE",
        ),
        Setting("max_record_s", 30.0, "the longest recording, in seconds"),
        Setting(
            "audio_format",
            "mulaw",
            "how a recording travels: mulaw (8-bit) or pcm16 (twice the bytes)",
            choices=tuple(FORMATS),
        ),
    )
    event_kinds: ClassVar[tuple[str, ...]] = (WAKE_EVENT,)

    @classmethod
    def agent_tools(cls) -> Sequence[AgentTool]:
        from drivers.nicla_voice.tools import TOOLS  # loads strands (~0.4 s): when first mounted

        return TOOLS

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
        self.audit(described)
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
        try:
            self.emit(WAKE_EVENT, {"label": label, "uptime_ms": uptime_ms, "at": at})
        except Exception:
            log.exception("%s: the wake event could not be kept", self.device_id)

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
