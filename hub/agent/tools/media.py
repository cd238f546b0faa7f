"""What every camera and microphone tool answers: the capture kept in the owner's media store,
recordings transcribed on this hub. Every driver's camera and microphone tools answer so."""

from __future__ import annotations

from typing import Any

from hub.agent.tools.results import failed, ok, with_image
from hub.devices.registry import DeviceError
from hub.devices.transcripts import transcribe_recording
from hub.runtime.hub import Hub
from media.audio import AudioError
from media.speech import SpeechUnavailable
from media.video import CLIP_TYPE


def seen(hub: Hub, camera: str, device_id: str | None, jpeg: bytes) -> dict[str, Any]:
    """The answer of every photo tool: the JPEG kept in the media store and shown to the model."""
    try:
        key = hub.devices.media.put(hub.owner.id, device_id, jpeg, "image/jpeg")
    except DeviceError as exc:  # the store refused it (too big, full): the model is told why
        return failed(str(exc))
    return with_image(
        f"Photo taken with {camera} ({len(jpeg) // 1024} KB), kept as /media/{key}.",
        jpeg,
        media=f"/media/{key}",
        bytes=len(jpeg),
    )


def filmed(
    hub: Hub, camera: str, device_id: str | None, mp4: bytes, seconds: float
) -> dict[str, Any]:
    """The answer of every video tool: the clip kept in the media store."""
    try:
        key = hub.devices.media.put(hub.owner.id, device_id, mp4, CLIP_TYPE)
    except DeviceError as exc:
        return failed(str(exc))
    return ok(
        f"Recorded {seconds:g} s with {camera}, kept as /media/{key}.",
        media=f"/media/{key}",
        bytes=len(mp4),
        seconds=seconds,
    )


async def heard(hub: Hub, source: str, device_id: str | None, wav: bytes) -> dict[str, Any]:
    """The answer of every listening tool: the recording kept, transcribed, announced."""
    try:
        record, transcript = await transcribe_recording(
            hub.speech,
            hub.devices.media,
            hub.transcripts,
            owner=hub.owner.id,
            source=source,
            device_id=device_id,
            wav=wav,
        )
    except (SpeechUnavailable, AudioError, DeviceError) as exc:
        return failed(str(exc))
    said = f'"{transcript.text}"' if transcript.text else "no speech"
    return ok(f"Heard {transcript.audio_s:.1f} s: {said}.", transcript=record.as_json())
