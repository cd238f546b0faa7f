"""A device asks its owner's tiny (``POST /api/devices/ask``): what it sent, as a question, and
the answer, as text and as a card.

The device sends text, or the key of media it uploaded (a recording, a photo), or both. A
recording is transcribed on this hub and kept with the owner's transcripts (its words are the
question); a photo goes with the question to a model that can see. The card is the answer
shaped for a small screen an e-ink can draw without a layout engine: a title (what was asked)
and a body (the answer), both plain text and short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hub.agent.attachments import Attachment, sniff_image
from hub.devices.registry import Device, DeviceError
from hub.devices.transcripts import transcribe_media
from hub.runtime.hub import Hub
from media.soundtrack import has_sound

CARD_TITLE_MAX = 60
CARD_BODY_MAX = 280
MARKUP = re.compile(r"[*_`#>]+")


@dataclass(frozen=True)
class Question:
    text: str
    attachments: tuple[Attachment, ...] = ()
    heard: str | None = None  # the recording's words, when the question was spoken


async def question_from(hub: Hub, device: Device, text: str | None, media_id: str) -> Question:
    """The question in ``device``'s media ``media_id`` (with ``text`` beside it, if any).

    Raises DeviceError for media that is neither a picture nor a recording with speech;
    AudioError and SpeechUnavailable pass through for the route to answer."""
    data, content_type = hub.devices.media.get(device.owner, media_id)
    if content_type.startswith("image/"):
        found = sniff_image(data)
        if found is None:
            raise DeviceError(f"media {media_id} is not a readable image")
        return Question(text or "What do you see?", (Attachment("image", data, found),))
    if not has_sound(content_type):
        raise DeviceError(f"media {media_id} is {content_type}: neither a picture nor a recording")
    heard = await transcribe_media(hub.speech, data, content_type, source=device.name)
    if not heard.text:
        raise DeviceError(f"no speech was heard in media {media_id}")
    hub.transcripts.add(
        device.owner,
        device.name,
        heard.text,
        device_id=device.id,
        language=heard.language,
        audio_s=heard.audio_s,
        media_key=media_id,
    )
    return Question(f"{text}\n{heard.text}" if text else heard.text, heard=heard.text)


def card(question: str, answer: str) -> dict[str, Any]:
    """The answer for a small screen: ``{title, body}``, plain text, cut at a word."""
    return {"title": _short(question, CARD_TITLE_MAX), "body": _short(answer, CARD_BODY_MAX)}


def _short(text: str, limit: int) -> str:
    plain = " ".join(MARKUP.sub("", text).split())
    if len(plain) <= limit:
        return plain
    cut = plain[: limit - 1].rsplit(" ", 1)[0] or plain[: limit - 1]
    return cut + "…"
