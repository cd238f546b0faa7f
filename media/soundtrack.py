"""The sound of a recording or a clip, as the WAV the speech engine reads.

A phone sends what it recorded as it recorded it: a WAV, an MP3, an Ogg, or the MP4 its glasses
filmed. Speech-to-text reads WAV, so anything else is decoded to 16 kHz mono with
faster-whisper's own decoder (PyAV, which ships FFmpeg in its wheel: the library the speech
engine already depends on, made for exactly this), then written as 16-bit WAV.
"""

from __future__ import annotations

import io
import logging

import numpy as np

from media.audio import SPEECH_RATE, AudioError, Pcm, wav_bytes

log = logging.getLogger(__name__)

WAV_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave"})
DECODED_TYPES = frozenset(
    {"audio/mpeg", "audio/ogg", "audio/mp4", "audio/webm", "video/mp4", "video/webm"}
)


def has_sound(content_type: str) -> bool:
    """Whether a recording of this type may carry speech this module can read."""
    return content_type in WAV_TYPES or content_type in DECODED_TYPES


def wav_of(data: bytes, content_type: str) -> bytes:
    """The recording as WAV: a WAV as it is, anything else decoded (its sound track only).

    Raises AudioError for a type without sound, bytes the decoder cannot read, or a clip with
    no sound track."""
    if content_type in WAV_TYPES:
        return data
    if content_type not in DECODED_TYPES:
        raise AudioError(f"{content_type} carries no sound to transcribe")
    samples = _decode(data)
    if samples.size == 0:
        raise AudioError("its sound track is empty")
    pcm16 = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    return wav_bytes(Pcm(pcm16, SPEECH_RATE))


def _decode(data: bytes) -> np.ndarray:
    from faster_whisper.audio import decode_audio  # imported on first use: it loads PyAV

    try:
        decoded = decode_audio(io.BytesIO(data), sampling_rate=SPEECH_RATE)
    except IndexError:  # it takes the container's first audio stream: there is none
        raise AudioError("it has no sound track") from None
    except Exception as exc:  # PyAV raises its own error types for every kind of bad input
        log.info("could not decode a recording: %s", exc)
        raise AudioError(f"not a recording this hub can decode: {exc}") from None
    return np.asarray(decoded, dtype=np.float32)
