"""The machine's own microphone, through sounddevice (PortAudio).

Nothing here is needed for the hub to start: ``status()`` never raises and says why there is no
microphone (PortAudio not installed, no input device) and what fixes it. ``sounddevice`` is
imported on first use, not at import time, because importing it without the PortAudio library
raises ``OSError``.

A recording runs on a worker thread with a callback ``RawInputStream`` (16-bit mono, 16 kHz
when the device takes it, else its own rate: speech resamples). The callback only copies
blocks into a queue; the worker collects them until it has the seconds asked for, and gives
up with ``MicrophoneError`` when the stream ends early or stops sending audio (an unplugged USB
microphone does either), so a caller never gets half a recording or waits forever. Cancelling
the caller stops and closes the stream before the cancellation goes on.
:class:`MicrophoneDriver` runs it behind the same ``DriverHost`` as every board.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from drivers.base import (
    DriverError,
    DriverStatus,
    Setting,
)
from drivers.machine.device import MachineDevice
from media.audio import Pcm, wav_bytes

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)

PORTAUDIO_FIX = "sudo apt-get install libportaudio2"
DEVICE_FIX = "plug in a microphone or set drivers.microphone.device"


class MicrophoneError(DriverError):
    """A recording could not be made; ``str()`` says why, for a person."""


class MicrophoneUnavailable(MicrophoneError):
    """There is no microphone to record with (PortAudio missing, no input device)."""


class _Cancelled(Exception):
    pass


def _import_sounddevice() -> ModuleType:
    return importlib.import_module("sounddevice")


class Microphone:
    """One input device; records fixed-length WAV clips, one at a time."""

    def __init__(
        self,
        device: int | str | None = None,
        *,
        rate: int = 16_000,
        max_seconds: float = 60.0,
        sounddevice: ModuleType | None = None,
        loader: Callable[[], ModuleType] | None = None,
        stall_s: float = 2.0,
    ) -> None:
        """``device``: a PortAudio index or name (substring), None for the default input.

        ``sounddevice`` is the module to use (tests pass an emulated one); when None,
        ``loader()`` imports it on first use (default: ``import sounddevice``).
        ``stall_s``: how long a started stream may send nothing before it counts as dead.
        """
        if isinstance(device, str):
            device = device.strip()
            device = int(device) if device.isdigit() else (device or None)
        if rate < 1:
            raise ValueError(f"rate must be positive, not {rate}")
        if not max_seconds > 0:
            raise ValueError(f"max_seconds must be positive, not {max_seconds}")
        self.device = device
        self.rate = rate
        self.max_seconds = float(max_seconds)
        self.stall_s = stall_s
        self._sounddevice = sounddevice
        self._loader = loader or _import_sounddevice
        self._busy = threading.Lock()  # one recording at a time on this device

    # ---- availability ------------------------------------------------------------------

    def _module(self) -> Any:
        if self._sounddevice is None:
            try:
                self._sounddevice = self._loader()
            except OSError as exc:  # "PortAudio library not found": libportaudio is missing
                log.debug("microphone: importing sounddevice failed: %s", exc)
                raise MicrophoneUnavailable(
                    f"microphone unavailable: PortAudio is not installed; fix: {PORTAUDIO_FIX}"
                ) from None
            except ImportError as exc:
                raise MicrophoneUnavailable(
                    f"microphone unavailable: the sounddevice package is missing ({exc}); "
                    f"fix: pip install sounddevice"
                ) from None
        return self._sounddevice

    def _no_device(self, reason: str) -> MicrophoneUnavailable:
        return MicrophoneUnavailable(
            f"microphone unavailable: no input device ({reason}); fix: {DEVICE_FIX}"
        )

    def _input_info(self, sd: Any) -> dict[str, Any]:
        """The chosen input device's dict; MicrophoneUnavailable if there is none."""
        try:
            devices = list(sd.query_devices())
            if not any(int(d.get("max_input_channels", 0)) > 0 for d in devices):
                raise self._no_device("PortAudio lists no device with an input channel")
            info = sd.query_devices(self.device, "input")
        except (sd.PortAudioError, ValueError) as exc:
            raise self._no_device(str(exc).strip() or type(exc).__name__) from None
        return dict(info)

    def status(self) -> tuple[bool, str]:
        """(available, detail): what would record, or why nothing can and the fix."""
        try:
            info = self._input_info(self._module())
        except MicrophoneUnavailable as exc:
            return False, str(exc)
        except Exception as exc:  # never stop the hub over a microphone
            return False, f"microphone unavailable: {type(exc).__name__}: {exc}"
        return True, (
            f"microphone: {info.get('name', '?')} (device {info.get('index', '?')}, "
            f"{info.get('max_input_channels', '?')} in, "
            f"{float(info.get('default_samplerate', 0)):g} Hz native)"
        )

    # ---- recording ---------------------------------------------------------------------

    async def record(self, seconds: float) -> bytes:
        """A 16-bit mono WAV of ``seconds`` of what the microphone hears."""
        if not (isinstance(seconds, int | float) and 0 < seconds <= self.max_seconds):
            raise MicrophoneError(
                f"a recording must be longer than 0 s and at most {self.max_seconds:g} s, "
                f"not {seconds}"
            )
        sd = self._module()
        info = self._input_info(sd)
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(None, self._record_blocking, sd, info, float(seconds), cancel)
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            cancel.set()
            await asyncio.wait({job})  # the stream is closed before the cancellation goes on
            if not job.cancelled():
                job.exception()  # retrieved: it is _Cancelled or an error nobody waits for
            raise

    def _candidates(self, info: dict[str, Any]) -> list[tuple[int, int]]:
        """(rate, channels) to try: 16 kHz mono, then the device's own rate, then stereo."""
        native = int(float(info.get("default_samplerate") or self.rate))
        tries = [(self.rate, 1), (native, 1)]
        if int(info.get("max_input_channels", 1)) >= 2:
            tries.append((native, 2))
        return list(dict.fromkeys(tries))

    def _open(
        self, sd: Any, info: dict[str, Any], blocks: queue.SimpleQueue[bytes | None]
    ) -> tuple[Any, int, int]:
        overflows = 0

        def on_block(indata: Any, frames: int, when: Any, status: Any) -> None:
            nonlocal overflows
            if status:
                overflows += 1
                if overflows == 1:
                    log.warning("microphone: %s (samples were lost)", status)
            blocks.put(bytes(indata))

        def on_finished() -> None:
            blocks.put(None)

        first_error: Exception | None = None
        for rate, channels in self._candidates(info):
            try:
                stream = sd.RawInputStream(
                    samplerate=rate,
                    device=info.get("index", self.device),
                    channels=channels,
                    dtype="int16",
                    callback=on_block,
                    finished_callback=on_finished,
                )
            except (sd.PortAudioError, ValueError) as exc:
                first_error = first_error or exc
                continue
            return stream, rate, channels
        raise self._no_device(f"cannot open {info.get('name', self.device)!r}: {first_error}")

    def _record_blocking(
        self, sd: Any, info: dict[str, Any], seconds: float, cancel: threading.Event
    ) -> bytes:
        while not self._busy.acquire(timeout=0.05):
            if cancel.is_set():
                raise _Cancelled
        try:
            return self._record_locked(sd, info, seconds, cancel)
        finally:
            self._busy.release()

    def _record_locked(
        self, sd: Any, info: dict[str, Any], seconds: float, cancel: threading.Event
    ) -> bytes:
        if cancel.is_set():
            raise _Cancelled
        blocks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        stream, rate, channels = self._open(sd, info, blocks)
        frame_bytes = 2 * channels
        needed = math.ceil(seconds * rate) * frame_bytes
        chunks: list[bytes] = []
        got = 0
        try:
            try:
                stream.start()
            except sd.PortAudioError as exc:
                raise MicrophoneError(f"the microphone could not start: {exc}") from None
            last = time.monotonic()
            while got < needed:
                if cancel.is_set():
                    raise _Cancelled
                try:
                    block = blocks.get(timeout=0.05)
                except queue.Empty:
                    if time.monotonic() - last > self.stall_s:
                        raise MicrophoneError(
                            f"the microphone stopped sending audio after "
                            f"{got / frame_bytes / rate:.1f} s of {seconds:g} s "
                            f"(unplugged?); nothing was kept"
                        ) from None
                    continue
                if block is None:
                    raise MicrophoneError(
                        f"the microphone stream ended after {got / frame_bytes / rate:.1f} s "
                        f"of {seconds:g} s (unplugged?); nothing was kept"
                    )
                last = time.monotonic()
                chunks.append(block)
                got += len(block)
        finally:
            with contextlib.suppress(Exception):
                stream.abort()
            with contextlib.suppress(Exception):
                stream.close()
        data = b"".join(chunks)[:needed]
        if channels > 1:
            both = np.frombuffer(data, "<i2").reshape(-1, channels).astype(np.int32)
            data = both.mean(axis=1).round().astype("<i2").tobytes()
        return wav_bytes(Pcm(data, rate))


DEFAULT_INPUT = "default"


class MicrophoneDriver(MachineDevice):
    """The machine's microphone: online while PortAudio has the input device (asked afresh
    each time)."""

    name: ClassVar[str] = "microphone"
    what: ClassVar[str] = "this machine's microphone"
    off: ClassVar[str] = "off"
    default: ClassVar[str] = DEFAULT_INPUT  # an empty device is the default input
    capabilities: ClassVar[tuple[str, ...]] = ("microphone",)
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "device",
            "",
            "the machine's microphone: a PortAudio device index or name; empty means the "
            "default input; off turns it off",
            env="TINY_HUB_MICROPHONE",
        ),
    )

    @classmethod
    def agent_tools(cls) -> Sequence[AgentTool]:
        from drivers.machine.tools import MICROPHONE_TOOLS  # loads strands: when mounted

        return MICROPHONE_TOOLS

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        device = None if port == DEFAULT_INPUT else port
        self.microphone = Microphone(device, sounddevice=config.get("sounddevice"))

    async def stop(self) -> None:
        pass

    def status(self) -> DriverStatus:
        available, detail = self.microphone.status()
        return DriverStatus("online" if available else "offline", detail)

    async def listen(self, seconds: float) -> bytes:
        return await self.microphone.record(seconds)
