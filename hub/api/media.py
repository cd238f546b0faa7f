"""Media over HTTP: what a dial-in device uploads (``POST /api/media``, base64) and what the
owner's devices and the hub's own captures kept (``GET /media/{key}``, the owner's alone)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.dial_in import DIAL_IN, devices_of, dial_in, once, run
from hub.api.keys import HUB
from hub.api.quotas import QUOTAS, person_of
from hub.api.spec import ANY, STRING, Operation, documented, obj

routes = web.RouteTableDef()


@routes.get("/media/{key}")
@access(Access.USER)
@documented(Operation("media your devices uploaded", answers={200: ANY}, content_types=("*/*",)))
async def media(request: web.Request) -> web.Response:
    owner = signed_in(request).id
    data, content_type = await run(
        lambda: devices_of(request).media.get(owner, request.match_info["key"])
    )
    return web.Response(
        body=data, content_type=content_type, headers={"X-Content-Type-Options": "nosniff"}
    )


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
    device, body = await dial_in(request)
    size = len(body["data"]) if isinstance(body.get("data"), str) else 0
    per_minute = request.app[HUB].settings.quota_media_mb_per_minute * 1024 * 1024
    who = person_of(request, device.owner)  # one person's devices share the quota
    request.app[QUOTAS].spend("media", who, size, per_minute, f"this upload of {size} bytes")
    media = devices_of(request).media

    def work() -> dict[str, Any]:
        key = media.put_base64(device, body.get("data"), body.get("contentType"))
        return {"key": key, "url": f"/media/{key}"}

    return once(request, device, body, work)
