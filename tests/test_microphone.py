"""The machine's microphone: the driver through the emulated sounddevice, and the real one.

The emulated module replays the espeak-ng fixture through ``RawInputStream`` faster than real
time; what the driver records goes through the real speech engine. The real sounddevice runs
too, on whatever this machine has (CI machines have no audio device, so it must say so).
"""

from __future__ import annotations

import asyncio
import importlib
import math
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from drivers.machine.microphone import Microphone, MicrophoneError, MicrophoneUnavailable
from fakes.sound_device import (
    CallbackStop,
    FakeSoundDevice,
    PortAudioError,
    input_device,
)
from media.audio import read_wav, speech_samples, to_float_mono
from media.speech import SpeechEngine

KITCHEN = (Path(__file__).parent / "fixtures" / "speech" / "kitchen.wav").read_bytes()
FAST = 8.0  # the emulated microphone runs eight times faster than real time


@pytest.fixture(scope="module")
def engine() -> SpeechEngine:
    return SpeechEngine()


def portaudio_missing() -> ModuleType:
    raise OSError("PortAudio library not found")


# ---- recording ----------------------------------------------------------------------------


async def test_a_recording_is_a_wav_of_the_words_spoken(engine: SpeechEngine) -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST)
    microphone = Microphone(sounddevice=board)
    assert microphone.status() == (
        True,
        "microphone: Fake USB Microphone: Audio (hw:1,0) (device 0, 1 in, 48000 Hz native)",
    )
    wav = await microphone.record(2.5)
    pcm = read_wav(wav)
    assert (pcm.rate, pcm.channels, pcm.width) == (16_000, 1, 2)
    assert pcm.frames == 40_000
    stream = board.streams[-1]
    assert (stream.samplerate, stream.channels, stream.dtype) == (16_000, 1, "int16")
    assert stream.closed and not stream.active
    heard = await engine.transcribe(wav, source="microphone")
    assert "kitchen light" in heard.text.lower()
    assert heard.audio_s == pytest.approx(2.5)


async def test_a_device_that_only_takes_its_own_rate_in_stereo(engine: SpeechEngine) -> None:
    """Like an ALSA ``hw:`` device: 48 kHz stereo or nothing. The clip is mixed to mono."""
    board = FakeSoundDevice(
        KITCHEN,
        speed=FAST,
        devices=[input_device("USB Audio CODEC: (hw:2,0)", channels=2)],
        rates=[48_000],
        channel_counts=[2],
    )
    wav = await Microphone("codec", sounddevice=board).record(2.0)
    pcm = read_wav(wav)
    assert (pcm.rate, pcm.channels, pcm.frames) == (48_000, 1, 96_000)
    assert board.streams[-1].channels == 2
    heard = await engine.transcribe(wav)
    assert "kitchen light" in heard.text.lower()


async def test_the_recording_is_what_the_microphone_heard() -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST)
    wav = await Microphone(sounddevice=board).record(1.0)
    recorded = to_float_mono(read_wav(wav))
    expected = speech_samples(KITCHEN)[:16_000]
    assert np.max(np.abs(recorded - expected)) < 2 / 32768


async def test_a_fraction_of_a_second_and_the_limit(engine: SpeechEngine) -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST)
    microphone = Microphone(sounddevice=board, max_seconds=3)
    assert read_wav(await microphone.record(0.01)).frames == 160
    assert read_wav(await microphone.record(3)).frames == 48_000


@pytest.mark.parametrize("seconds", [0, -1, 60.5, 1e9, math.nan, math.inf])
async def test_lengths_out_of_bounds_are_refused(seconds: float) -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST)
    with pytest.raises(MicrophoneError, match="at most 60 s"):
        await Microphone(sounddevice=board).record(seconds)
    assert board.streams == []


async def test_a_custom_limit_is_named() -> None:
    microphone = Microphone(sounddevice=FakeSoundDevice(KITCHEN, speed=FAST), max_seconds=5)
    with pytest.raises(MicrophoneError, match="at most 5 s"):
        await microphone.record(6)


async def test_recordings_on_one_microphone_take_turns() -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST)
    microphone = Microphone(sounddevice=board)
    first, second = await asyncio.gather(microphone.record(1.0), microphone.record(1.5))
    assert read_wav(first).frames == 16_000
    assert read_wav(second).frames == 24_000
    assert len(board.streams) == 2
    assert board.peak_active_streams == 1
    assert all(stream.closed for stream in board.streams)


async def test_cancelling_stops_the_stream() -> None:
    board = FakeSoundDevice(KITCHEN, speed=1.0)
    task = asyncio.create_task(Microphone(sounddevice=board).record(30))
    for _ in range(200):
        if board.streams and board.streams[-1].active:
            break
        await asyncio.sleep(0.01)
    assert board.streams and board.streams[-1].active
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert board.streams[-1].closed and not board.streams[-1].active
    assert board.active_streams == 0


# ---- failures -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "says"),
    [("error", "stream ended after 0.5 s of 2 s"), ("stall", "stopped sending audio after 0.5 s")],
)
async def test_a_microphone_failing_mid_recording_keeps_nothing(failure: Any, says: str) -> None:
    board = FakeSoundDevice(KITCHEN, speed=FAST, fail_after_s=0.5, failure=failure)
    microphone = Microphone(sounddevice=board, stall_s=0.3)
    with pytest.raises(MicrophoneError, match=says) as caught:
        await microphone.record(2)
    assert not isinstance(caught.value, MicrophoneUnavailable)
    assert "nothing was kept" in str(caught.value)
    assert board.streams[-1].closed
    assert board.active_streams == 0


async def test_no_input_device() -> None:
    microphone = Microphone(sounddevice=FakeSoundDevice.without_input())
    available, detail = microphone.status()
    assert not available
    assert detail == (
        "microphone unavailable: no input device (PortAudio lists no device with an input "
        "channel); fix: plug in a microphone or set drivers.microphone.device"
    )
    with pytest.raises(MicrophoneUnavailable) as caught:
        await microphone.record(1)
    assert str(caught.value) == detail


async def test_devices_but_no_default_input() -> None:
    board = FakeSoundDevice(KITCHEN, default_input=-1)
    available, detail = Microphone(sounddevice=board).status()
    assert not available
    assert "no input device (Error querying device -1)" in detail
    assert "fix: plug in a microphone or set drivers.microphone.device" in detail


async def test_a_device_name_nothing_matches() -> None:
    microphone = Microphone("Blue Yeti", sounddevice=FakeSoundDevice(KITCHEN))
    available, detail = microphone.status()
    assert not available
    assert "No input device matching 'Blue Yeti'" in detail
    with pytest.raises(MicrophoneUnavailable, match="Blue Yeti"):
        await microphone.record(1)


def test_a_device_index_from_the_settings_is_a_number() -> None:
    assert Microphone("1", sounddevice=FakeSoundDevice()).device == 1
    assert Microphone(" ", sounddevice=FakeSoundDevice()).device is None
    two = [input_device("first"), input_device("second")]
    available, detail = Microphone("1", sounddevice=FakeSoundDevice(devices=two)).status()
    assert available and "second (device 1" in detail


async def test_a_device_that_will_not_open() -> None:
    board = FakeSoundDevice(KITCHEN, open_error="Device unavailable")
    with pytest.raises(MicrophoneUnavailable, match="Device unavailable"):
        await Microphone(sounddevice=board).record(1)


async def test_portaudio_not_installed() -> None:
    calls = 0

    def loader() -> ModuleType:
        nonlocal calls
        calls += 1
        return portaudio_missing()

    microphone = Microphone(loader=loader)
    assert calls == 0  # nothing is imported until the microphone is asked about
    assert microphone.status() == (
        False,
        "microphone unavailable: PortAudio is not installed; fix: sudo apt-get install "
        "libportaudio2",
    )
    with pytest.raises(MicrophoneUnavailable, match="PortAudio is not installed"):
        await microphone.record(1)


# ---- this machine -------------------------------------------------------------------------


def machine_sounddevice() -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module("sounddevice"), ""
    except OSError as exc:
        return None, str(exc)


async def test_the_real_sounddevice_on_this_machine() -> None:
    real, error = machine_sounddevice()
    available, detail = Microphone().status()
    if real is None:
        assert "PortAudio library not found" in error
        assert (available, detail) == (
            False,
            "microphone unavailable: PortAudio is not installed; fix: sudo apt-get install "
            "libportaudio2",
        )
        return
    inputs = [d for d in real.query_devices() if d["max_input_channels"] > 0]
    if inputs:  # a machine with a microphone
        assert available, detail
        return
    assert not available
    assert detail.startswith("microphone unavailable: no input device (")
    assert detail.endswith("; fix: plug in a microphone or set drivers.microphone.device")
    with pytest.raises(MicrophoneUnavailable):
        await Microphone().record(1)


# ---- the emulated module is faithful to sounddevice ---------------------------------------


def test_the_emulator_answers_as_the_real_module_does_with_no_device() -> None:
    fake = FakeSoundDevice.without_input()
    real, _ = machine_sounddevice()
    with pytest.raises(PortAudioError) as emulated:
        fake.query_devices(kind="input")
    assert str(emulated.value) == "Error querying device -1"
    assert list(fake.default.device) == [-1, -1]
    with pytest.raises(PortAudioError, match="Error querying device -1"):
        fake.RawInputStream(samplerate=16_000, channels=1, dtype="int16")
    with pytest.raises(ValueError, match="No input device matching 'usb'"):
        fake.RawInputStream(device="usb", samplerate=16_000, channels=1, dtype="int16")
    if real is None or list(real.query_devices()):
        return  # the comparison needs PortAudio with no devices, as on CI
    with pytest.raises(real.PortAudioError) as actual:
        real.query_devices(kind="input")
    assert str(actual.value) == str(emulated.value)
    assert list(real.default.device) == list(fake.default.device)
    with pytest.raises(ValueError) as actual_name:
        real.RawInputStream(device="usb", samplerate=16_000, channels=1, dtype="int16")
    assert str(actual_name.value) == "No input device matching 'usb'"


def test_the_emulator_read_api_in_every_dtype() -> None:
    board = FakeSoundDevice(KITCHEN, speed=100, devices=[input_device(channels=2)])
    expected = speech_samples(KITCHEN)[:1600]
    for dtype, size, decode in [
        ("int16", 2, lambda b: np.frombuffer(b, "<i2") / 32767),
        ("int32", 4, lambda b: np.frombuffer(b, "<i4") / 2147483647),
        ("float32", 4, lambda b: np.frombuffer(b, "<f4")),
        ("uint8", 1, lambda b: (np.frombuffer(b, "u1").astype(float) - 128) / 127),
    ]:
        stream = board.RawInputStream(samplerate=16_000, channels=2, dtype=dtype)
        assert stream.samplesize == size
        with pytest.raises(PortAudioError, match="Stream is stopped"):
            stream.read(10)
        with stream:
            data, overflowed = stream.read(1600)
        assert not overflowed and len(data) == 1600 * 2 * size
        left = decode(data)[::2]
        assert np.max(np.abs(left - expected)) < 0.02, dtype
        assert stream.closed


def test_the_emulator_callback_api() -> None:
    board = FakeSoundDevice(KITCHEN, speed=100)
    got: list[tuple[int, int]] = []
    finished: list[bool] = []

    def callback(indata: Any, frames: int, when: Any, status: Any) -> None:
        got.append((len(bytes(indata)), frames))
        assert not status and when.inputBufferAdcTime <= when.currentTime
        if len(got) == 3:
            raise CallbackStop

    stream = board.RawInputStream(
        samplerate=8_000,
        blocksize=80,
        channels=1,
        dtype="int16",
        callback=callback,
        finished_callback=lambda: finished.append(True),
    )
    with pytest.raises(PortAudioError, match="Can't read from a callback stream"):
        stream.read(80)
    stream.start()
    for _ in range(500):
        if not stream.active:
            break
        time.sleep(0.01)
    assert got == [(160, 80)] * 3
    assert finished == [True] and not stream.active and not stream.closed
    stream.close()
    assert stream.closed and finished == [True]
    with pytest.raises(PortAudioError, match="Invalid stream pointer"):
        stream.start()
