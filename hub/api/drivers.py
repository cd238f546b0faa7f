"""/api/drivers: every driver and device the hub knows, and the audit of hardware commands."""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.body import query_int
from hub.api.keys import HUB
from hub.api.spec import STRING, Operation, array, bounded, documented, obj

routes = web.RouteTableDef()


@routes.get("/api/drivers")
@access(Access.USER)
@documented(
    Operation(
        "every driver and device",
        answers={
            200: obj({"drivers": array(obj()), "machine": obj(), "capabilities": array(STRING)})
        },
    )
)
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
@documented(
    Operation(
        "every command the hub sent to hardware, newest first",
        answers={200: obj({"commands": array(obj())})},
        query={"limit": bounded(1, 10_000)},
    )
)
async def audit(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", 200, 1, 10_000)
    return web.json_response({"commands": request.app[HUB].audit.recent(limit)})
