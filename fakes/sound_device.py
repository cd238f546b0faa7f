"""A microphone shaped like the ``sounddevice`` module, for the microphone driver's seam.

It is one module on purpose: it stands in for one module, ``sounddevice``, and its names are
found where the driver looks for them.

``FakeSoundDevice`` is a module object (a ``types.ModuleType``) with the names of
``sounddevice`` 0.5 that recording uses, behaving as the real ones do on PortAudio:

- ``query_devices(device=None, kind=None)``: the device list, one device's dict, or the
  default input's; ``PortAudioError("Error querying device -1")`` when there is no default
  input, ``ValueError("No input device matching ...")`` for a name nothing matches;
- ``default``: ``default.device`` is the (input, output) pair, -1 where there is none;
- ``RawInputStream(samplerate, blocksize, device, channels, dtype, latency, ...,
  callback, finished_callback)``: plain-buffer PCM in the dtype and channel count asked for
  (int16, int32, float32, int8, uint8), either through the callback
  ``callback(indata, frames, time, status)`` on a stream thread, or through ``read(frames)``
  → ``(buffer, overflowed)``; ``start``/``stop``/``abort``/``close``, ``with``, ``active``,
  ``stopped``, ``closed``, ``read_available``; ``CallbackStop``/``CallbackAbort`` end it;
- ``PortAudioError`` whose ``str()`` carries ``[PaErrorCode N]`` like the real one.

What it hears is a WAV file (any rate and width; converted to the stream's rate, channels and
dtype), then silence, paced in real time or ``speed`` times faster. It can also have no input
device (``FakeSoundDevice.without_input()``), refuse to open (``open_error``), support only
some rates or channel counts (as ``hw:`` ALSA devices do), and fail ``fail_after_s`` seconds
into a stream: ``failure="error"`` (a callback stream goes inactive and calls its
``finished_callback``; ``read()`` raises ``Unanticipated host error``, as on an unplugged USB
microphone) or ``failure="stall"`` (no more audio, the stream stays active).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar, Literal

import numpy as np

from media.audio import read_wav, resample, to_float_mono

Failure = Literal["error", "stall"]

PA_INVALID_CHANNEL_COUNT = -9998
PA_INVALID_SAMPLE_RATE = -9997
PA_UNANTICIPATED_HOST_ERROR = -9999
PA_STREAM_IS_STOPPED = -9983
PA_BAD_STREAM_PTR = -9988
PA_CANNOT_READ_FROM_CALLBACK_STREAM = -9977
PA_DEVICE_UNAVAILABLE = -9985

SAMPLE_SIZES = {"float32": 4, "int32": 4, "int16": 2, "int8": 1, "uint8": 1}


class PortAudioError(Exception):
    """Like ``sounddevice.PortAudioError``: args are (text, PaErrorCode[, host error])."""

    def __str__(self) -> str:
        text = str(self.args[0]) if self.args else ""
        if len(self.args) > 1:
            text = f"{text} [PaErrorCode {self.args[1]}]"
        if len(self.args) > 2:
            _host_api, code, host_text = self.args[2]
            text = f"{text}: '{host_text}' [ALSA error {code}]"
        return text


class CallbackStop(Exception):
    """Raised in a callback: the stream finishes after this block."""


class CallbackAbort(Exception):
    """Raised in a callback: the stream stops at once."""


class CallbackFlags:
    """The *status* argument of a callback (PortAudio's paInputUnderflow ... bits)."""

    _names = ("input_underflow", "input_overflow", "output_underflow", "output_overflow")

    def __init__(self, flags: int = 0) -> None:
        self._flags = flags

    def __bool__(self) -> bool:
        return bool(self._flags)

    def __str__(self) -> str:
        return ", ".join(
            n.replace("_", " ") for i, n in enumerate(self._names) if self._flags >> i & 1
        )

    def __repr__(self) -> str:
        return f"<sounddevice.CallbackFlags: {self or 'no flags set'}>"

    @property
    def input_underflow(self) -> bool:
        return bool(self._flags & 1)

    @property
    def input_overflow(self) -> bool:
        return bool(self._flags & 2)


class StreamTime:
    """The callback's *time* argument (a CFFI struct in sounddevice)."""

    def __init__(self, adc: float, now: float) -> None:
        self.inputBufferAdcTime = adc
        self.currentTime = now
        self.outputBufferDacTime = 0.0


class _Pair:
    """``default.device`` and friends: an (input, output) pair indexable by 0/1 or name."""

    def __init__(self, input_value: Any, output_value: Any) -> None:
        self._pair = [input_value, output_value]

    def __getitem__(self, index: int | str) -> Any:
        return self._pair[{"input": 0, "output": 1}.get(index, index)]  # type: ignore[call-overload]

    def __setitem__(self, index: int | str, value: Any) -> None:
        self._pair[{"input": 0, "output": 1}.get(index, index)] = value  # type: ignore[call-overload]

    def __iter__(self) -> Any:
        return iter(self._pair)

    def __repr__(self) -> str:
        return f"[{self._pair[0]!r}, {self._pair[1]!r}]"


class _Default:
    def __init__(self, device: tuple[int, int]) -> None:
        self.device = _Pair(*device)
        self.samplerate: float | None = None
        self.blocksize = 0
        self.channels = _Pair(None, None)
        self.dtype = _Pair("float32", "float32")
        self.latency = _Pair("high", "high")
        self.extra_settings = _Pair(None, None)
        self.clip_off = False
        self.dither_off = False
        self.never_drop_input = False
        self.prime_output_buffers_using_stream_callback = False


class DeviceList(tuple):  # type: ignore[type-arg]
    """What ``query_devices()`` returns: a tuple of dicts that prints as a table."""

    def __repr__(self) -> str:
        return "\n".join(
            f"  {d['index']} {d['name']}, ALSA ({d['max_input_channels']} in, "
            f"{d['max_output_channels']} out)"
            for d in self
        )


def input_device(
    name: str = "Fake USB Microphone: Audio (hw:1,0)",
    *,
    index: int = 0,
    channels: int = 1,
    samplerate: float = 48_000.0,
    output_channels: int = 0,
) -> dict[str, Any]:
    """A device dict with the keys ``sounddevice.query_devices`` gives."""
    return {
        "name": name,
        "index": index,
        "hostapi": 0,
        "max_input_channels": channels,
        "max_output_channels": output_channels,
        "default_low_input_latency": 0.0087 if channels else -1.0,
        "default_low_output_latency": 0.0087 if output_channels else -1.0,
        "default_high_input_latency": 0.0348 if channels else -1.0,
        "default_high_output_latency": 0.0348 if output_channels else -1.0,
        "default_samplerate": samplerate,
    }


class FakeSoundDevice(ModuleType):
    """A stand-in for the ``sounddevice`` module whose microphone hears ``wav``."""

    def __init__(
        self,
        wav: bytes | None = None,
        *,
        speed: float = 1.0,
        devices: Sequence[dict[str, Any]] | None = None,
        default_input: int | None = None,
        rates: Sequence[float] | None = None,
        channel_counts: Sequence[int] | None = None,
        open_error: str | None = None,
        fail_after_s: float | None = None,
        failure: Failure = "error",
        block_s: float = 0.02,
    ) -> None:
        super().__init__("sounddevice", "An emulated sounddevice module (tiny-hub tests).")
        if not speed > 0:
            raise ValueError("speed must be positive")
        self.__version__ = "0.5.0+emulated"
        self.devices = [dict(d) for d in ([input_device()] if devices is None else devices)]
        for position, device in enumerate(self.devices):
            device["index"] = position
        if default_input is None:
            inputs = [d["index"] for d in self.devices if d["max_input_channels"] > 0]
            default_input = inputs[0] if inputs else -1
        self.default = _Default((default_input, -1))
        self.speed = speed
        self.rates = None if rates is None else {float(r) for r in rates}
        self.channel_counts = None if channel_counts is None else set(channel_counts)
        self.open_error = open_error
        self.fail_after_s = fail_after_s
        self.failure: Failure = failure
        self.block_s = block_s
        self.source = np.zeros(0, np.float32)
        self.source_rate = 16_000
        if wav is not None:
            pcm = read_wav(wav)
            self.source, self.source_rate = to_float_mono(pcm), pcm.rate
        self.streams: list[RawInputStream] = []
        self.active_streams = 0
        self.peak_active_streams = 0
        self._count_lock = threading.Lock()
        self.PortAudioError = PortAudioError
        self.CallbackStop = CallbackStop
        self.CallbackAbort = CallbackAbort
        self.CallbackFlags = CallbackFlags
        self.RawInputStream = type("RawInputStream", (RawInputStream,), {"_board": self})

    @classmethod
    def without_input(cls, **kwargs: Any) -> FakeSoundDevice:
        """PortAudio with no input device at all (a server, a container)."""
        return cls(devices=[], default_input=-1, **kwargs)

    def get_portaudio_version(self) -> tuple[int, str]:
        return 1246720, "PortAudio V19.6.0-devel, revision 396fe4b6699ae929d3a685b3ef8a7e97396139a4"

    def query_hostapis(self, index: int | None = None) -> Any:
        api = {
            "name": "ALSA",
            "devices": [d["index"] for d in self.devices],
            "default_input_device": self.default.device[0],
            "default_output_device": -1,
        }
        return api if index is not None else (api,)

    def _device_id(self, device: int | str | None, kind: str | None) -> int:
        if device is None:
            device = self.default.device[kind] if kind else self.default.device[0]
        if isinstance(device, int):
            return device
        wanted = device.lower().split()
        matches = []
        for info in self.devices:
            if kind and info[f"max_{kind}_channels"] < 1:
                continue
            full = f"{info['name']}, ALSA".lower()
            position = 0
            for part in wanted:
                position = full.find(part, position)
                if position < 0:
                    break
                position += len(part)
            else:
                matches.append(info["index"])
        if not matches:
            raise ValueError(f"No {kind or 'input/output'} device matching {device!r}")
        if len(matches) > 1:
            raise ValueError(f"Multiple {kind or 'input/output'} devices found for {device!r}")
        return int(matches[0])

    def query_devices(self, device: int | str | None = None, kind: str | None = None) -> Any:
        if kind not in ("input", "output", None):
            raise ValueError(f"Invalid kind: {kind!r}")
        if device is None and kind is None:
            return DeviceList(dict(d) for d in self.devices)
        index = self._device_id(device, kind)
        if not 0 <= index < len(self.devices):
            raise PortAudioError(f"Error querying device {index}")
        info = dict(self.devices[index])
        if kind and info[f"max_{kind}_channels"] < 1:
            raise ValueError(f"Not an {kind} device: {info['name']!r}")
        return info

    def samples(self, rate: float, start: int, frames: int) -> np.ndarray:
        """``frames`` mono float samples at ``rate`` from frame ``start``: the WAV, then silence."""
        source = self._resampled(rate)
        out = np.zeros(frames, np.float32)
        if start < len(source):
            chunk = source[start : start + frames]
            out[: len(chunk)] = chunk
        return out

    def _resampled(self, rate: float) -> np.ndarray:
        cache: dict[float, np.ndarray] = self.__dict__.setdefault("_resample_cache", {})
        if rate not in cache:
            cache[rate] = resample(self.source, self.source_rate, round(rate))
        return cache[rate]


def _encode(samples: np.ndarray, channels: int, dtype: str) -> bytes:
    """Mono float samples as interleaved PCM of ``dtype`` on ``channels`` channels."""
    clipped = np.clip(samples, -1.0, 1.0)
    if dtype == "float32":
        data: np.ndarray = clipped.astype("<f4")
    elif dtype == "int32":
        data = (clipped * 2147483647.0).astype("<i4")
    elif dtype == "int16":
        data = (clipped * 32767.0).astype("<i2")
    elif dtype == "int8":
        data = (clipped * 127.0).astype("i1")
    else:
        data = (clipped * 127.0 + 128.0).astype("u1")
    if channels > 1:
        data = np.repeat(data, channels)
    return data.tobytes()


class RawInputStream:
    """``sounddevice.RawInputStream`` on the fake (its ``_board``); see the module docstring."""

    _board: ClassVar[FakeSoundDevice]

    def __init__(
        self,
        samplerate: float | None = None,
        blocksize: int | None = None,
        device: int | str | None = None,
        channels: int | None = None,
        dtype: str | None = None,
        latency: float | str | None = None,
        extra_settings: Any = None,
        callback: Callable[[Any, int, Any, CallbackFlags], None] | None = None,
        finished_callback: Callable[[], None] | None = None,
        clip_off: bool | None = None,
        dither_off: bool | None = None,
        never_drop_input: bool | None = None,
        prime_output_buffers_using_stream_callback: bool | None = None,
    ) -> None:
        board = self._board
        self._closed = True  # until it opens
        index = board._device_id(device, "input")
        info = board.query_devices(index)
        dtype = str(np.dtype(dtype or board.default.dtype[0]).name)
        if dtype not in SAMPLE_SIZES:
            raise ValueError("Invalid input sample format")
        if channels is None:
            channels = board.default.channels[0] or info["max_input_channels"]
        if samplerate is None:
            samplerate = board.default.samplerate or info["default_samplerate"]
        if latency in (None, "high", "low"):
            latency = info[f"default_{latency or 'high'}_input_latency"]
        opening = "Error opening RawInputStream"
        if board.open_error is not None:
            raise PortAudioError(f"{opening}: {board.open_error}", PA_DEVICE_UNAVAILABLE)
        if not 1 <= int(channels) <= info["max_input_channels"] or (
            board.channel_counts is not None and channels not in board.channel_counts
        ):
            raise PortAudioError(f"{opening}: Invalid number of channels", PA_INVALID_CHANNEL_COUNT)
        if board.rates is not None and float(samplerate) not in board.rates:
            raise PortAudioError(f"{opening}: Invalid sample rate", PA_INVALID_SAMPLE_RATE)
        self._samplerate = float(samplerate)
        self._blocksize = int(blocksize or 0)
        self._device = index
        self._channels = int(channels)
        self._dtype = dtype
        self._latency = float(latency)  # type: ignore[arg-type]
        self._callback = callback
        self._finished_callback = finished_callback
        self._closed = False
        self._started_at: float | None = None
        self._frames_done = 0  # frames handed to the callback or read()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._active = False
        self._finished_called = False
        self._lock = threading.Lock()
        board.streams.append(self)

    # ---- properties as in sounddevice ------------------------------------------------------

    @property
    def samplerate(self) -> float:
        return self._samplerate

    @property
    def blocksize(self) -> int:
        return self._blocksize

    @property
    def device(self) -> int:
        return self._device

    @property
    def channels(self) -> int:
        return self._channels

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def samplesize(self) -> int:
        return SAMPLE_SIZES[self._dtype]

    @property
    def latency(self) -> float:
        return self._latency

    @property
    def active(self) -> bool:
        return not self._closed and self._active

    @property
    def stopped(self) -> bool:
        return self._closed or self._started_at is None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def time(self) -> float:
        return time.monotonic()

    @property
    def cpu_load(self) -> float:
        return 0.0

    @property
    def read_available(self) -> int:
        self._check_open("Error getting read available")
        if self._started_at is None:
            return 0
        return max(0, self._frames_clock() - self._frames_done)

    # ---- life cycle --------------------------------------------------------------------

    def __enter__(self) -> RawInputStream:
        self.start()
        return self

    def __exit__(self, *args: object) -> None:
        self.stop()
        self.close()

    def start(self) -> None:
        self._check_open("Error starting stream")
        if self._started_at is not None:
            return  # paStreamIsNotStopped is ignored, as sounddevice does
        self._halt.clear()
        self._finished_called = False
        self._started_at = time.monotonic()
        self._active = True
        board = self._board
        with board._count_lock:
            board.active_streams += 1
            board.peak_active_streams = max(board.peak_active_streams, board.active_streams)
        if self._callback is not None:
            self._thread = threading.Thread(
                target=self._run_callbacks, name="emulated-portaudio", daemon=True
            )
            self._thread.start()

    def stop(self, ignore_errors: bool = True) -> None:
        self._halt_stream()

    def abort(self, ignore_errors: bool = True) -> None:
        self._halt_stream()

    def close(self, ignore_errors: bool = True) -> None:
        if self._closed:
            return
        self._halt_stream()
        self._closed = True

    def _halt_stream(self) -> None:
        if self._closed or self._started_at is None:
            return
        self._halt.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._thread = None
        self._started_at = None
        self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._active = False
            if self._finished_called:
                return
            self._finished_called = True
        with self._board._count_lock:
            self._board.active_streams -= 1
        if self._finished_callback is not None:
            self._finished_callback()

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise PortAudioError(f"{what}: Invalid stream pointer", PA_BAD_STREAM_PTR)

    # ---- audio -------------------------------------------------------------------------

    def _frames_clock(self) -> int:
        """Frames the device has captured since start (at ``speed`` times real time)."""
        assert self._started_at is not None
        elapsed = (time.monotonic() - self._started_at) * self._board.speed
        return int(elapsed * self._samplerate)

    def _fail_frame(self) -> int | None:
        fail = self._board.fail_after_s
        return None if fail is None else int(fail * self._samplerate)

    def _block(self, frames: int) -> bytes:
        samples = self._board.samples(self._samplerate, self._frames_done, frames)
        return _encode(samples, self._channels, self._dtype)

    def _wait_until(self, frame: int) -> bool:
        """Sleep until the device has captured ``frame`` frames; False if halted first."""
        assert self._started_at is not None
        due = self._started_at + frame / self._samplerate / self._board.speed
        return not self._halt.wait(max(0.0, due - time.monotonic()))

    def _run_callbacks(self) -> None:
        block = self._blocksize or max(1, round(self._samplerate * self._board.block_s))
        fail_at = self._fail_frame()
        callback = self._callback
        assert callback is not None
        while not self._halt.is_set():
            frames = block
            if fail_at is not None and self._frames_done + frames > fail_at:
                frames = fail_at - self._frames_done
                if frames <= 0:
                    if self._board.failure == "stall":
                        self._halt.wait()
                        return
                    break  # the host API gave up: the stream goes inactive
            if not self._wait_until(self._frames_done + frames):
                return
            data = memoryview(self._block(frames))
            now = time.monotonic()
            try:
                callback(
                    data, frames, StreamTime(now - frames / self._samplerate, now), CallbackFlags()
                )
            except (CallbackStop, CallbackAbort):
                self._frames_done += frames
                break
            except Exception:
                traceback.print_exc()  # sounddevice prints it; the stream aborts
                break
            self._frames_done += frames
        self._finish()

    def read(self, frames: int) -> tuple[bytes, bool]:
        """Blocks until ``frames`` frames are captured; ``(buffer, overflowed)``."""
        self._check_open("Error reading stream")
        if self._callback is not None:
            raise PortAudioError(
                "Can't read from a callback stream", PA_CANNOT_READ_FROM_CALLBACK_STREAM
            )
        if self._started_at is None:
            raise PortAudioError("Stream is stopped", PA_STREAM_IS_STOPPED)
        fail_at = self._fail_frame()
        if fail_at is not None and self._frames_done + frames > fail_at:
            self._wait_until(fail_at)
            if self._board.failure == "stall":
                self._halt.wait()
                raise PortAudioError("Stream is stopped", PA_STREAM_IS_STOPPED)
            self._active = False
            raise PortAudioError("Unanticipated host error", PA_UNANTICIPATED_HOST_ERROR)
        if not self._wait_until(self._frames_done + frames):
            raise PortAudioError("Stream is stopped", PA_STREAM_IS_STOPPED)
        data = self._block(frames)
        self._frames_done += frames
        return data, False
