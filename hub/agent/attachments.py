"""Pictures and sound in a chat body (docs/http-api.md, chat): read, then taken in.

A message's content may hold image and audio blocks beside its text. The hub never fetches a
URL for them: the bytes come in the body, base64 or as a ``data:`` URL. Taken in before the
turn: an audio block is transcribed on this hub and its words join the message's text; an image
goes to a model that can see, and for one that cannot it becomes a sentence in the message
("an image the model cannot see") and a notice in the stream, so nothing the person sent is
dropped without their being told.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hub.devices.transcripts import transcribe_media
from media.audio import AudioError
from media.speech import SpeechUnavailable

Kind = Literal["image", "audio"]
AUDIO_TYPES = frozenset(
    {"audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/ogg", "audio/mp4", "audio/webm"}
)
# OpenAI's input_audio names a format rather than a type.
AUDIO_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg", "webm": "audio/webm"}
DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[\w=.+-]+)*;base64,(.*)$", re.DOTALL)
UNSEEN = "[an image the user sent, which this model cannot see]"
UNHEARD = "[an audio clip the user sent, which could not be transcribed]"


class BlockError(ValueError):
    """A content block the hub cannot take; ``str()`` names what is wrong, for a 400."""


@dataclass(frozen=True)
class Attachment:
    kind: Kind
    data: bytes
    content_type: str  # image/jpeg, audio/wav, ...

    @property
    def image_format(self) -> str:
        """strands' image block format: jpeg, png, gif, webp."""
        return self.content_type.removeprefix("image/")


def read_block(where: str, block: dict[str, Any]) -> Attachment | None:
    """The image or audio in one content block, or None for a block of another kind.

    Taken: ``{type: "image", image | data: <base64 | data URL>, mimeType?}``, ``{type:
    "image", source: {type: "base64", media_type, data}}``, ``{type: "image_url", image_url:
    {url: <data URL>}}``, ``{type: "audio", audio | data, mimeType?}``, ``{type: "input_audio",
    input_audio: {data, format}}`` and ``{type: "file", data, mediaType | mimeType}`` of an
    image or audio type."""
    kind = block.get("type")
    if kind == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, dict) else inner
        return _image(where, url)
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict):
            return _image(where, source.get("data"))
        return _image(where, block.get("image", block.get("data")))
    if kind == "input_audio":
        inner = block.get("input_audio")
        inner = inner if isinstance(inner, dict) else {}
        declared = AUDIO_FORMATS.get(str(inner.get("format", "wav")).lower())
        return _audio(where, inner.get("data"), declared)
    if kind == "audio":
        return _audio(where, block.get("audio", block.get("data")), _declared(block))
    if kind == "file":
        declared = _declared(block) or ""
        if declared.startswith("image/"):
            return _image(where, block.get("data"))
        if declared.startswith("audio/"):
            return _audio(where, block.get("data"), declared)
    return None


def content_block(where: str, block: Any) -> str | Attachment:
    """One content block of a message: its text (``{type: "text", text}`` or ``{text}``), its
    image or audio (:func:`read_block`), or "" for a kind that carries neither."""
    if not isinstance(block, dict):
        raise BlockError(f"{where} must be an object")
    attachment = read_block(where, block)
    if attachment is not None:
        return attachment
    text = block.get("text")
    if text is None:
        return ""
    if not isinstance(text, str):
        raise BlockError(f"{where}.text must be a string")
    return text


def _declared(block: dict[str, Any]) -> str | None:
    found = block.get("mimeType", block.get("mediaType", block.get("media_type")))
    return found.lower() if isinstance(found, str) else None


def _bytes(where: str, value: Any) -> tuple[bytes, str | None]:
    """Base64 (plain, or in a data: URL, whose type is returned too); never a URL to fetch."""
    if not isinstance(value, str) or not value:
        raise BlockError(f"{where} needs its bytes as base64 or a data: URL")
    declared = None
    if value.startswith(("http://", "https://")):
        raise BlockError(f"{where}: the hub does not fetch URLs; send the bytes (base64)")
    if value.startswith("data:"):
        match = DATA_URL.match(value)
        if match is None:
            raise BlockError(f"{where} is not a base64 data: URL")
        declared, value = match.group(1), match.group(2)
    try:
        return base64.b64decode(value, validate=True), declared.lower() if declared else None
    except (binascii.Error, ValueError):
        raise BlockError(f"{where} is not valid base64") from None


def _image(where: str, value: Any) -> Attachment:
    """What the bytes are wins over what they are called: the type is read from them."""
    data, _called = _bytes(where, value)
    found = sniff_image(data)
    if found is None:
        raise BlockError(f"{where} is not a JPEG, PNG, GIF or WebP image")
    return Attachment("image", data, found)


def _audio(where: str, value: Any, declared: str | None) -> Attachment:
    data, in_url = _bytes(where, value)
    content_type = declared or in_url or "audio/wav"
    if content_type not in AUDIO_TYPES:
        raise BlockError(f"{where}: {content_type} is not audio the hub reads")
    return Attachment("audio", data, content_type)


def sniff_image(data: bytes) -> str | None:
    """The image type the bytes begin with, or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class TakenIn:
    """A message after its attachments were taken in: audio as text, images kept or described."""

    texts: tuple[str, ...]
    images: tuple[Attachment, ...]
    notices: tuple[str, ...]


async def take_in(
    speech: Any,
    texts: Sequence[str],
    attachments: Sequence[Attachment],
    *,
    sees: bool,
    model_id: str,
) -> TakenIn:
    """``texts`` plus what ``attachments`` hold, for a model that ``sees`` images or not."""
    said, images, notices = list(texts), [], []
    unseen = 0
    for attachment in attachments:
        if attachment.kind == "image":
            if sees:
                images.append(attachment)
            else:
                unseen += 1
                said.append(UNSEEN)
            continue
        try:
            heard = await transcribe_media(
                speech, attachment.data, attachment.content_type, source="chat"
            )
        except (AudioError, SpeechUnavailable) as exc:
            said.append(UNHEARD)
            notices.append(f"The audio you sent could not be transcribed: {exc}")
            continue
        said.append(f"(voice message) {heard.text}" if heard.text else "(voice message: silence)")
    if unseen:
        notices.append(
            f"{model_id} cannot see images, so {_images(unseen)} not shown to it; choose a "
            "model that can (one Ollama lists with 'vision')."
        )
    return TakenIn(tuple(said), tuple(images), tuple(notices))


def _images(count: int) -> str:
    return "the image you sent was" if count == 1 else f"the {count} images you sent were"
