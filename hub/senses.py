"""The hub's eyes and ears: the machine's own camera and microphone, the speech engine, and the
one path every recording takes (media store → speech-to-text → transcript → event ring).

The camera and microphone are not plug-in drivers: they are the machine's own, found by OpenCV
and PortAudio rather than by a USB matcher, and they are opened per request, not held. Neither
is needed for the hub to start; each says why it is unavailable.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from drivers.machine.camera import Camera
from drivers.machine.microphone import Microphone
from hub.config import Settings
from hub.devices.media import MediaStore
from hub.devices.transcripts import TranscriptRecord, TranscriptStore
from media.soundtrack import wav_of
from media.speech import SpeechEngine, Transcript

WAV_TYPE = "audio/wav"
OFF = "off"


@dataclass
class Senses:
    camera: Camera | None
    microphone: Microphone | None
    speech: SpeechEngine

    @classmethod
    def from_settings(cls, settings: Settings) -> Senses:
        camera = Camera(settings.camera_device) if settings.camera_device.strip() else None
        mic_setting = settings.microphone_device.strip()
        microphone = Microphone(mic_setting or None) if mic_setting.lower() != OFF else None
        speech = SpeechEngine(
            settings.speech_model,
            cache_dir=settings.home / "models",
            threads=settings.speech_threads,
            language=settings.speech_language or None,
        )
        return cls(camera, microphone, speech)

    def camera_status(self) -> tuple[bool, str]:
        if self.camera is None:
            return False, "camera unavailable: turned off (camera.device is empty)"
        return self.camera.status()

    def microphone_status(self) -> tuple[bool, str]:
        if self.microphone is None:
            return False, "microphone unavailable: turned off (microphone.device is off)"
        return self.microphone.status()

    def capabilities(self) -> list[str]:
        """What the machine itself can do now (to add to the drivers' capabilities)."""
        found = []
        if self.camera_status()[0]:
            found += ["camera", "video"]
        if self.microphone_status()[0]:
            found.append("microphone")
        return found

    def close(self) -> None:
        if self.camera is not None:
            self.camera.close()


async def transcribe_recording(
    speech: SpeechEngine,
    media: MediaStore,
    transcripts: TranscriptStore,
    *,
    owner: str,
    source: str,
    device_id: str | None,
    wav: bytes,
) -> tuple[TranscriptRecord, Transcript]:
    """Keep the recording, transcribe it, keep the transcript (which announces it).

    The transcription runs first: a recording speech cannot read is refused before anything is
    stored, so a failure leaves nothing half-kept.
    """
    heard = await speech.transcribe(wav, source=source)
    key = media.put(owner, device_id, wav, WAV_TYPE)
    record = transcripts.add(
        owner,
        source,
        heard.text,
        device_id=device_id,
        language=heard.language,
        audio_s=heard.audio_s,
        media_key=key,
    )
    return record, heard


async def transcribe_media(
    speech: SpeechEngine, data: bytes, content_type: str, *, source: str = ""
) -> Transcript:
    """What was said in a recording or a clip of any type with sound (a phone's WAV, the MP4
    its glasses filmed). Raises AudioError for one without readable sound, SpeechUnavailable
    when the model cannot be had."""
    wav = await asyncio.to_thread(wav_of, data, content_type)
    return await speech.transcribe(wav, source=source)
