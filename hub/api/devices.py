"""The owner's devices over HTTP (docs/protocol.md, devices): enrolling one, listing and
removing them, a new token for one, and asking one now (an endpoint dialled, a dial-in device
sent a prompt through its mailbox)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.dial_in import devices_of, json_object, run
from hub.api.errors import http_error
from hub.api.lengths import MAX_TEXT
from hub.api.spec import BOOLEAN, JSON, OK, STRING, Operation, array, documented, matching, obj
from hub.devices.endpoint import check_endpoint_url
from hub.devices.registry import MAX_CAPABILITIES
from hub.devices.service import DeviceAnswer

routes = web.RouteTableDef()


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
    body = await json_object(request)
    devices, owner = devices_of(request), signed_in(request)
    url = body.get("url")
    if body.get("kind") == "endpoint":
        if not isinstance(url, str):
            raise http_error(web.HTTPBadRequest, "an endpoint device needs its https url")
        given: str = url
        url = await run(lambda: check_endpoint_url(given, devices.endpoint.policy))
    device, token = await run(
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
    devices, now = devices_of(request), devices_of(request).now()
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
    await run(lambda: devices_of(request).registry.remove(owner, device_id))
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
    body, owner = await json_object(request), signed_in(request).id
    device_id = body.get("deviceId")
    if not isinstance(device_id, str):
        raise http_error(web.HTTPBadRequest, "deviceId is required")
    token = await run(lambda: devices_of(request).registry.adopt(owner, device_id))
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
    devices, owner = devices_of(request), signed_in(request).id
    device = await run(lambda: devices.registry.get(owner, request.query.get("deviceId", "")))
    if device.dial_in or device.url is None:
        raise http_error(web.HTTPBadRequest, f"{device.name} is a dial-in device, not an endpoint")
    secret, action = devices.registry.secret_of(device), request.query.get("action", "telemetry")
    if action == "telemetry":
        data = await run(lambda: devices.endpoint.telemetry(device.url or "", secret))
        return web.json_response({"ok": True, "telemetry": data})
    if action == "snapshot":
        image, content_type = await run(lambda: devices.endpoint.snapshot(device.url or "", secret))
        return web.Response(body=image, content_type=content_type)
    if action == "chat":
        prompt = request.query.get("prompt", "")
        reply = await run(lambda: devices.endpoint.chat(device.url or "", secret, prompt))
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
    body, owner = await json_object(request), signed_in(request).id
    devices, prompt = devices_of(request), body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_TEXT:
        raise http_error(web.HTTPBadRequest, f"prompt must be 1-{MAX_TEXT} characters")
    device = await run(lambda: devices.registry.get(owner, str(body.get("deviceId", ""))))
    answered = await run(lambda: devices.ask_device(device, prompt))
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
    answered = await run(lambda: devices_of(request).result(owner, message_id))
    return web.json_response(_answer_json(answered))


def _answer_json(answered: DeviceAnswer) -> dict[str, Any]:
    if answered.pending_id:
        return {"ok": True, "pending": True, "id": answered.pending_id}
    return {"ok": True, "result": answered.text, "images": len(answered.images)}
