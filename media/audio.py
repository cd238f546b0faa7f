"""PCM and WAV: the one audio format every source here ends in (microphone, Nicla Vision,
Nicla Voice) and the speech engine reads.

The standard library's ``wave`` does the container; this module adds the checks a recording
from a device needs (a header that lies about its size, a format speech cannot read) and the
conversions to 16 kHz mono 16-bit, which is what Whisper wants.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import numpy as np

SPEECH_RATE = 16_000
"""Whisper's sample rate; every recording is stored at its source rate and resampled here."""


class AudioError(ValueError):
    """The bytes are not audio this hub can read; ``str()`` says why, for a person."""


@dataclass(frozen=True)
class Pcm:
    """Interleaved little-endian signed PCM."""

    data: bytes
    rate: int
    channels: int = 1
    width: int = 2  # bytes per sample: 1 (unsigned 8-bit, as WAV stores it), 2 or 4

    @property
    def frames(self) -> int:
        return len(self.data) // (self.channels * self.width)

    @property
    def seconds(self) -> float:
        return self.frames / self.rate if self.rate else 0.0


def wav_bytes(pcm: Pcm) -> bytes:
    """``pcm`` in a RIFF/WAVE container."""
    if pcm.width not in (1, 2, 4) or pcm.channels < 1 or pcm.rate < 1:
        raise AudioError(f"cannot write {pcm.width}-byte, {pcm.channels}-channel PCM")
    usable = pcm.frames * pcm.channels * pcm.width
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(pcm.channels)
        w.setsampwidth(pcm.width)
        w.setframerate(pcm.rate)
        w.writeframes(pcm.data[:usable])
    return out.getvalue()


def read_wav(data: bytes) -> Pcm:
    """The PCM inside a WAV file; AudioError for anything else (or a truncated header)."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            pcm = Pcm(
                w.readframes(w.getnframes()), w.getframerate(), w.getnchannels(), w.getsampwidth()
            )
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"not a PCM WAV file: {exc}") from None
    if pcm.width not in (1, 2, 4):
        raise AudioError(f"{pcm.width * 8}-bit samples are not supported")
    return pcm


def to_float_mono(pcm: Pcm) -> np.ndarray:
    """Samples in [-1, 1], channels averaged, at the source rate (float32)."""
    usable = pcm.frames * pcm.channels * pcm.width
    raw = pcm.data[:usable]
    if pcm.width == 1:
        samples = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif pcm.width == 2:
        samples = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    else:
        samples = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
    if pcm.channels > 1:
        samples = samples.reshape(-1, pcm.channels).mean(axis=1)
    return samples.astype(np.float32)


def resample(samples: np.ndarray, rate: int, target: int = SPEECH_RATE) -> np.ndarray:
    """Linear-interpolation resampling: enough for speech recognition, no SciPy needed."""
    if rate == target or len(samples) == 0:
        return samples.astype(np.float32)
    count = max(1, round(len(samples) * target / rate))
    positions = np.linspace(0, len(samples) - 1, count)
    resampled: np.ndarray = np.interp(positions, np.arange(len(samples)), samples)
    return resampled.astype(np.float32)


def speech_samples(wav: bytes) -> np.ndarray:
    """A WAV file as Whisper's input: 16 kHz mono float32."""
    pcm = read_wav(wav)
    return resample(to_float_mono(pcm), pcm.rate)
