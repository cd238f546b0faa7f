"""The hub as an endpoint device (seed 001, Path A): what the cloud dials when the owner
enrolls this hub there. Every route needs ``Authorization: Bearer <secret>`` — a token of this
hub's users — and answers 401 without it. ``POST /api/chat {prompt}`` lives in chat.py: the
body's shape tells it apart from the SSE form."""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.errors import http_error
from hub.api.keys import HUB

routes = web.RouteTableDef()


@routes.get("/api/telemetry")
@access(Access.USER)
async def telemetry(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    model = await hub.models.default()
    now = hub.devices.now()
    devices = hub.devices.registry.list(hub.owner.id)
    return web.json_response(
        {
            "ok": True,
            "name": "tiny-hub",
            "version": hub.version,
            "uptime": round(hub.uptime_s, 3),
            "model": model.describe(),
            "devices": [
                {
                    "name": d.name,
                    "kind": d.kind,
                    "online": d.online(now),
                    "capabilities": list(d.capabilities),
                }
                for d in devices
            ],
            "drivers": hub.drivers.records(),
            "capabilities": hub.drivers.capabilities(),
        }
    )


@routes.get("/api/camera/snapshot")
@access(Access.USER)
async def snapshot(request: web.Request) -> web.Response:
    raise http_error(
        web.HTTPServiceUnavailable,
        "no camera is attached to this hub (camera drivers arrive with the drivers issue)",
    )
