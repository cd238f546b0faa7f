"""Devices over HTTP (docs/protocol.md, devices): the owner's enrollment routes, and the dial-in
protocol.

It is one module on purpose: the owner's enrollment routes and the dial-in protocol are one
resource, the device, and share its checks (ids, tokens, lengths).

Dial-in calls carry ``{deviceId, token}`` in the body and no user: they are anonymous to the
auth middleware and authenticated here, and each acts only inside the device owner's world.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import sqlite_utils
from aiohttp import web

from drivers.audio import AudioError
from drivers.speech import SpeechUnavailable
from hub import contracts as c
from hub.agent.asking import Question, card, question_from
from hub.agent.compose import AnswerFailed, answer_with_images
from hub.api.auth import Access, access, signed_in
from hub.api.body import query_int, read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.lengths import MAX_TEXT, check_lengths
from hub.api.parts import PARTS
from hub.api.quotas import QUOTAS, person_of
from hub.api.spec import (
    ANY,
    BOOLEAN,
    EVENT_STREAM,
    INTEGER,
    JSON,
    OK,
    STRING,
    Operation,
    array,
    bounded,
    documented,
    matching,
    nullable,
    obj,
)
from hub.devices.endpoint import EndpointError, EndpointRefused, check_endpoint_url
from hub.devices.events import DEVICE_EVENT_KINDS, RingEvent
from hub.devices.idempotency import idempotency_key
from hub.devices.notify import Notice, push_notice
from hub.devices.registry import MAX_CAPABILITIES, Device, DeviceNotFound
from hub.devices.relay import check_limit, check_wait
from hub.devices.service import DeviceAnswer, Devices
from hub.devices.transcripts import TRANSCRIPT_EVENT

routes = web.RouteTableDef()
# Every dial-in request names the device and carries its token (see `_dial_in`).
DIAL_IN = {"deviceId": STRING, "token": STRING}


def _devices(request: web.Request) -> Devices:
    return request.app[HUB].devices


async def _run(action: Callable[[], Any]) -> Any:
    """Run a store call or a dial-out; a device that fails us is a 502, a refused URL a 400."""
    try:
        result = action()
        return await result if asyncio.iscoroutine(result) else result
    except EndpointRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    except EndpointError as exc:
        raise http_error(web.HTTPBadGateway, str(exc)) from None


async def _object(request: web.Request) -> dict[str, Any]:
    body = await read_json_body(request, c.MAX_REQUEST_BYTES)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, "body must be a JSON object")
    check_lengths(body)
    return body


async def _dial_in(request: web.Request) -> tuple[Device, dict[str, Any]]:
    body = await _object(request)
    device = await _run(lambda: _devices(request).registry.authenticate(body))
    return device, body


def _once(
    request: web.Request,
    device: Device,
    body: dict[str, Any],
    work: Callable[[], dict[str, Any]],
) -> web.Response:
    """Answer a dial-in call that may carry ``idempotencyKey``: a replay of a call already done
    (a sender's outbox resending after a lost answer) gets the stored answer, not a second run."""
    key = idempotency_key(body)
    route = f"{request.method} {request.path}"
    return web.json_response(_devices(request).idempotency.once(device, key, route, work))


# --- the owner's routes ---------------------------------------------------------------------


@routes.post("/api/devices")
@access(Access.OWNER)
@documented(
    Operation(
        "enroll a device",
        answers={200: obj({"ok": BOOLEAN, "device_id": STRING})},
        body=obj(
            {
                "name": matching(r"^[\w .'-]{1,64}$"),
                "kind": {"enum": ["daemon", "browser", "cli"]},  # endpoint: its url and secret
            },
            platform={"type": "string", "maxLength": 64},
            capabilities={
                **array({"type": "string", "minLength": 1, "maxLength": 64}),
                "maxItems": MAX_CAPABILITIES,
            },
        ),
        errors=(409, 502),
    )
)
async def enroll(request: web.Request) -> web.Response:
    body = await _object(request)
    devices, owner = _devices(request), signed_in(request)
    url = body.get("url")
    if body.get("kind") == "endpoint":
        if not isinstance(url, str):
            raise http_error(web.HTTPBadRequest, "an endpoint device needs its https url")
        given: str = url
        url = await _run(lambda: check_endpoint_url(given, devices.endpoint.policy))
    device, token = await _run(
        lambda: devices.registry.enroll(
            owner.id,
            name=body.get("name"),
            kind=body.get("kind"),
            platform=body.get("platform", ""),
            capabilities=body.get("capabilities"),
            url=url,
            secret=body.get("secret"),
        )
    )
    if token is None:
        return web.json_response(
            {"ok": True, "device_id": device.id, "kind": "endpoint", "url": device.url}
        )
    return web.json_response({"ok": True, "device_id": device.id, "device_token": token})


@routes.get("/api/devices")
@access(Access.USER)
@documented(Operation("your devices", answers={200: obj({"devices": array(obj())})}))
async def list_devices(request: web.Request) -> web.Response:
    devices, now = _devices(request), _devices(request).now()
    listed = devices.registry.list(signed_in(request).id)
    return web.json_response({"devices": [d.as_json(now) for d in listed]})


@routes.delete("/api/devices")
@access(Access.USER)
@documented(
    Operation("remove one of your devices", answers={200: OK}, query={"id": STRING}, errors=(404,))
)
async def remove_device(request: web.Request) -> web.Response:
    device_id = request.query.get("id", "")
    owner = signed_in(request).id
    await _run(lambda: _devices(request).registry.remove(owner, device_id))
    return web.json_response({"ok": True})


@routes.post("/api/devices/adopt")
@access(Access.USER)
@documented(
    Operation(
        "a new token for one of your devices",
        answers={200: obj({"device_id": STRING, "device_token": STRING})},
        body=obj({"deviceId": STRING}),
        errors=(404,),
    )
)
async def adopt(request: web.Request) -> web.Response:
    body, owner = await _object(request), signed_in(request).id
    device_id = body.get("deviceId")
    if not isinstance(device_id, str):
        raise http_error(web.HTTPBadRequest, "deviceId is required")
    token = await _run(lambda: _devices(request).registry.adopt(owner, device_id))
    return web.json_response({"ok": True, "device_id": device_id, "device_token": token})


@routes.get("/api/devices/endpoint")
@access(Access.USER)
@documented(
    Operation(
        "dial an endpoint device now",
        answers={200: obj()},
        query={
            "deviceId": STRING,
            "action": {"enum": ["telemetry", "snapshot", "chat"]},
            "prompt": STRING,
        },
        errors=(404, 502, 504),
        content_types=(JSON, "image/*"),
    )
)
async def endpoint_call(request: web.Request) -> web.StreamResponse:
    """Dial an endpoint device now: ``?deviceId=&action=telemetry|snapshot|chat&prompt=``."""
    devices, owner = _devices(request), signed_in(request).id
    device = await _run(lambda: devices.registry.get(owner, request.query.get("deviceId", "")))
    if device.dial_in or device.url is None:
        raise http_error(web.HTTPBadRequest, f"{device.name} is a dial-in device, not an endpoint")
    secret, action = devices.registry.secret_of(device), request.query.get("action", "telemetry")
    if action == "telemetry":
        data = await _run(lambda: devices.endpoint.telemetry(device.url or "", secret))
        return web.json_response({"ok": True, "telemetry": data})
    if action == "snapshot":
        image, content_type = await _run(
            lambda: devices.endpoint.snapshot(device.url or "", secret)
        )
        return web.Response(body=image, content_type=content_type)
    if action == "chat":
        prompt = request.query.get("prompt", "")
        reply = await _run(lambda: devices.endpoint.chat(device.url or "", secret, prompt))
        return web.json_response({"ok": True, "reply": reply})
    raise http_error(web.HTTPBadRequest, "action must be telemetry, snapshot or chat")


@routes.post("/api/devices/invoke")
@access(Access.USER)
@documented(
    Operation(
        "send a dial-in device a prompt and wait for its answer",
        answers={200: obj({"ok": BOOLEAN})},
        body=obj(
            {
                "deviceId": STRING,
                "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
            }
        ),
        errors=(404, 502, 504),
    )
)
async def invoke(request: web.Request) -> web.Response:
    """What ``use_device`` does, for the TUI and scripts: ``{deviceId, prompt}`` → the answer,
    or ``{pending: true, id}`` after about 45 s (redeem with ``GET /api/devices/invoke?id=``)."""
    body, owner = await _object(request), signed_in(request).id
    devices, prompt = _devices(request), body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_TEXT:
        raise http_error(web.HTTPBadRequest, f"prompt must be 1-{MAX_TEXT} characters")
    device = await _run(lambda: devices.registry.get(owner, str(body.get("deviceId", ""))))
    answered = await _run(lambda: devices.ask_device(device, prompt))
    return web.json_response(_answer_json(answered))


@routes.get("/api/devices/invoke")
@access(Access.USER)
@documented(
    Operation(
        "redeem a pending answer",
        answers={200: obj({"ok": BOOLEAN})},
        query={"id": STRING},
        errors=(404,),
    )
)
async def invoke_result(request: web.Request) -> web.Response:
    owner, message_id = signed_in(request).id, request.query.get("id", "")
    answered = await _run(lambda: _devices(request).result(owner, message_id))
    return web.json_response(_answer_json(answered))


def _answer_json(answered: DeviceAnswer) -> dict[str, Any]:
    if answered.pending_id:
        return {"ok": True, "pending": True, "id": answered.pending_id}
    return {"ok": True, "result": answered.text, "images": len(answered.images)}


@routes.get("/api/events")
@access(Access.USER)
@documented(
    Operation(
        "your event ring as Server-Sent Events",
        answers={200: ANY},
        query={"after": bounded(0, 2**62)},
        content_types=(EVENT_STREAM,),
    )
)
async def events(request: web.Request) -> web.StreamResponse:
    """The caller's event ring as SSE: what is stored after ``?after=``, then live events."""
    after = query_int(request, "after", 0, 0, 2**62)
    me, most = signed_in(request).id, request.app[HUB].settings.quota_open_streams
    with request.app[QUOTAS].stream(person_of(request, me), most):
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await response.prepare(request)
        ring = _devices(request).events
        with contextlib.suppress(ConnectionResetError):
            async for event in ring.follow(me, after):
                await response.write(_frame(event))
        return response


def _frame(event: RingEvent) -> bytes:
    return f"id: {event.id}\ndata: {json.dumps(event.as_json())}\n\n".encode()


@routes.get("/media/{key}")
@access(Access.USER)
@documented(Operation("media your devices uploaded", answers={200: ANY}, content_types=("*/*",)))
async def media(request: web.Request) -> web.Response:
    owner = signed_in(request).id
    data, content_type = await _run(
        lambda: _devices(request).media.get(owner, request.match_info["key"])
    )
    return web.Response(
        body=data, content_type=content_type, headers={"X-Content-Type-Options": "nosniff"}
    )


# --- the dial-in protocol -----------------------------------------------------------------------


@routes.post("/api/devices/heartbeat")
@access(Access.DEVICE)
@documented(
    Operation(
        "a dial-in device's heartbeat",
        answers={200: OK},
        body=obj(
            DIAL_IN,
            capabilities=array(STRING),
            lanUrl=nullable(STRING),
            wantUnread=BOOLEAN,
        ),
        errors=(404,),
    )
)
async def heartbeat(request: web.Request) -> web.Response:
    device, body = await _dial_in(request)
    devices = _devices(request)
    await _run(
        lambda: devices.registry.heartbeat(device, body.get("capabilities"), body.get("lanUrl"))
    )
    answer_body: dict[str, Any] = {"ok": True}
    if body.get("wantUnread"):
        answer_body["unread"] = devices.mailbox.unread(device)
    return web.json_response(answer_body)


@routes.put("/api/devices/relay")
@access(Access.DEVICE)
@documented(
    Operation(
        "pull envelopes from the device's mailbox",
        answers={200: obj({"messages": array(obj())})},
        body=obj(DIAL_IN, max=INTEGER),
        errors=(404,),
    )
)
async def pull(request: web.Request) -> web.Response:
    """``{max?, wait?}``: without ``wait`` the answer is at once; with it the pull is held up to
    ``wait`` seconds (at most 25) for an envelope. A held pull counts as the device being seen
    when it starts: it ends within 25 s and the device pulls again, well inside the 60 s presence
    window, so a device that long-polls needs no separate heartbeat to stay online (and the
    answer that carries an envelope waits for no write)."""
    device, body = await _dial_in(request)
    devices = _devices(request)
    limit = await _run(lambda: check_limit(body.get("max")))
    wait = await _run(lambda: check_wait(body.get("wait")))
    if wait:
        _seen(devices, device)
    messages = await _run(
        lambda: devices.mailbox.pull_waiting(device, limit, wait, lambda: _hung_up(request))
    )
    if wait and _hung_up(request):  # a daemon that restarted left this pull behind: keep its mail
        devices.mailbox.put_back(device, messages)
        messages = []
    return web.json_response({"ok": True, "messages": [m.as_json() for m in messages]})


def _fits_the_relay(value: Any, what: str) -> None:
    """What a device publishes travels to the owner's phones and the cloud: it must fit an
    envelope."""
    if len(json.dumps(value)) > c.RELAY_PAYLOAD_MAX_BYTES:
        raise http_error(web.HTTPBadRequest, f"{what} is over {c.RELAY_PAYLOAD_MAX_BYTES} bytes")


def _hung_up(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _seen(devices: Devices, device: Device) -> None:
    """Presence for a held pull; a device removed while its pull was held stays removed."""
    with contextlib.suppress(DeviceNotFound, sqlite_utils.db.NotFoundError):
        devices.registry.heartbeat(device)


@routes.patch("/api/devices/relay")
@access(Access.DEVICE)
@documented(
    Operation(
        "answer an envelope",
        answers={200: OK},
        body=obj(
            {**DIAL_IN, "payload": ANY},
            inReplyTo=STRING,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def reply(request: web.Request) -> web.Response:
    device, body = await _dial_in(request)
    if "payload" not in body:
        raise http_error(web.HTTPBadRequest, "payload is required")
    mailbox = _devices(request).mailbox

    def work() -> dict[str, Any]:
        mailbox.reply(device, body.get("inReplyTo"), body["payload"])
        return {"ok": True}

    # With a key, a repeat of a delivered reply answers the same; without one, a second reply
    # is still "already answered".
    return _once(request, device, body, work)


@routes.post("/api/media")
@access(Access.DEVICE)
@documented(
    Operation(
        "upload media (base64)",
        answers={200: obj({"key": STRING, "url": STRING})},
        body=obj(
            {**DIAL_IN, "data": STRING},
            contentType=STRING,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def upload(request: web.Request) -> web.Response:
    device, body = await _dial_in(request)
    size = len(body["data"]) if isinstance(body.get("data"), str) else 0
    per_minute = request.app[HUB].settings.quota_media_mb_per_minute * 1024 * 1024
    who = person_of(request, device.owner)  # one person's devices share the quota
    request.app[QUOTAS].spend("media", who, size, per_minute, f"this upload of {size} bytes")
    media = _devices(request).media

    def work() -> dict[str, Any]:
        key = media.put_base64(device, body.get("data"), body.get("contentType"))
        return {"key": key, "url": f"/media/{key}"}

    return _once(request, device, body, work)


@routes.post("/api/devices/event")
@access(Access.DEVICE)
@documented(
    Operation(
        "publish an event on the owner's ring",
        answers={200: obj({"id": INTEGER})},
        body=obj(
            {**DIAL_IN, "kind": STRING},
            detail=ANY,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def device_event(request: web.Request) -> web.Response:
    device, body = await _dial_in(request)
    kind = body.get("kind")
    if kind not in DEVICE_EVENT_KINDS:
        raise http_error(web.HTTPBadRequest, f"kind must be one of {', '.join(DEVICE_EVENT_KINDS)}")
    detail = body.get("detail")
    _fits_the_relay(detail, "detail")
    hub = request.app[HUB]

    def work() -> dict[str, Any]:
        if (
            kind == TRANSCRIPT_EVENT
            and isinstance(detail, dict)
            and isinstance(detail.get("text"), str)
        ):
            # A transcript the device made itself: kept beside the hub's own, so the transcript
            # tools list both.
            hub.transcripts.add(
                device.owner, "device", detail["text"], device_id=device.id, announce=False
            )
        event = hub.devices.events.publish(device.owner, kind, device.id, detail)
        return {"ok": True, "id": event.id}

    return _once(request, device, body, work)


@routes.post("/api/devices/task-result")
@access(Access.DEVICE)
@documented(
    Operation(
        "report a finished task",
        answers={200: obj({"id": INTEGER})},
        body=obj(
            {**DIAL_IN, "taskId": STRING},
            summary=STRING,
            result=ANY,
            idempotencyKey=STRING,
        ),
        errors=(404, 409),
    )
)
async def task_result(request: web.Request) -> web.Response:
    device, body = await _dial_in(request)
    task_id = body.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise http_error(web.HTTPBadRequest, "taskId is required")
    summary, result = body.get("summary"), body.get("result")
    if summary is not None and not isinstance(summary, str):
        raise http_error(web.HTTPBadRequest, "summary must be a string")
    detail = {"taskId": task_id, "summary": summary, "result": result, "device": device.name}
    _fits_the_relay(detail, "result")
    devices = _devices(request)

    def work() -> dict[str, Any]:
        event = devices.events.publish(device.owner, "task_result", device.id, detail)
        notice = _finished(device, task_id, summary, result)
        push_notice(devices, device.owner, notice, source=device.id, on_ring=False)
        if device.owner == request.app[HUB].owner.id:
            request.app[PARTS].show_on_desktop(notice.title, notice.body)
        return {"ok": True, "id": event.id}

    return _once(request, device, body, work)


def _finished(device: Device, task_id: str, summary: str | None, result: Any) -> Notice:
    """The notification a finished task is pushed to the owner's phones as."""
    said = summary or (result if isinstance(result, str) else "")
    if not said and result is not None:
        said = json.dumps(result)
    return Notice(
        title=f"{device.name} finished a task",
        body=said or f"Task {task_id} is done.",
        tag=f"task:{task_id}",
    )


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
    device, body = await _dial_in(request)
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
