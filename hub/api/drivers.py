"""/api/drivers: every driver and device the hub knows, and the audit of hardware commands."""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.body import query_int
from hub.api.keys import HUB

routes = web.RouteTableDef()


@routes.get("/api/drivers")
@access(Access.USER)
async def list_drivers(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    senses = hub.senses
    camera, microphone = senses.camera_status(), senses.microphone_status()
    return web.json_response(
        {
            "drivers": hub.drivers.records(),
            "machine": {
                "camera": {"available": camera[0], "detail": camera[1]},
                "microphone": {"available": microphone[0], "detail": microphone[1]},
                "speech": senses.speech.status(),
            },
            "capabilities": hub.capabilities(),
        }
    )


@routes.get("/api/drivers/audit")
@access(Access.OWNER)
async def audit(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", 200, 1, 10_000)
    return web.json_response({"commands": request.app[HUB].audit.recent(limit)})
