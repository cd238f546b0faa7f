"""A dial-in device asks its owner's tiny (``POST /api/devices/ask``): text, or a recording
transcribed, or a picture shown to a model that can see."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.agent.asking import Question, card, question_from
from hub.agent.compose import AnswerFailed, answer_with_images
from hub.api.auth import Access, access
from hub.api.dial_in import DIAL_IN, dial_in
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.lengths import MAX_TEXT
from hub.api.spec import STRING, Operation, documented, obj
from hub.devices.registry import Device
from media.audio import AudioError
from media.speech import SpeechUnavailable

routes = web.RouteTableDef()


@routes.post("/api/devices/ask")
@access(Access.DEVICE)
@documented(
    Operation(
        "ask the owner's tiny",
        answers={200: obj({"text": STRING, "card": obj({"title": STRING, "body": STRING})})},
        body=obj(DIAL_IN, text=STRING, mediaId=STRING),
        errors=(404, 502, 503),
    )
)
async def ask(request: web.Request) -> web.Response:
    """A device asks its owner's tiny: ``{text}``, ``{mediaId}`` (a recording is transcribed, a
    picture shown to a model that can see) or both → ``{text, card, heard?, notices?}``."""
    device, body = await dial_in(request)
    hub = request.app[HUB]
    text, media_id = body.get("text"), body.get("mediaId")
    if text is not None and (not isinstance(text, str) or len(text) > MAX_TEXT):
        raise http_error(web.HTTPBadRequest, f"text must be 1-{MAX_TEXT} characters (or mediaId)")
    if media_id is not None and not isinstance(media_id, str):
        raise http_error(web.HTTPBadRequest, "mediaId must be the key POST /api/media returned")
    if media_id:
        question = await _question(request, device, text.strip() if text else None, media_id)
    elif text and text.strip():
        question = Question(text)
    else:
        raise http_error(web.HTTPBadRequest, f"text must be 1-{MAX_TEXT} characters (or mediaId)")
    owner = hub.identity.user(device.owner)
    prompt = f"(from your device {device.name}) {question.text}"
    try:
        answered = await answer_with_images(hub, owner, prompt, attachments=question.attachments)
    except AnswerFailed as exc:
        raise http_error(web.HTTPBadGateway, str(exc)) from None
    answer_body: dict[str, Any] = {
        "text": answered.text,
        "card": card(question.text, answered.text),
    }
    if question.heard is not None:
        answer_body["heard"] = question.heard
    if answered.notices:
        answer_body["notices"] = list(answered.notices)
    return web.json_response(answer_body)


async def _question(
    request: web.Request, device: Device, text: str | None, media_id: str
) -> Question:
    """The question in the device's media: a recording's words, or a picture to look at."""
    try:
        return await question_from(request.app[HUB], device, text, media_id)
    except AudioError as exc:
        raise http_error(web.HTTPBadRequest, f"media {media_id}: {exc}") from None
    except SpeechUnavailable as exc:
        raise http_error(web.HTTPServiceUnavailable, str(exc)) from None
