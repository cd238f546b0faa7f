"""GET /api/health: is the hub up, which model answers and why (anonymous callers allowed)."""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.keys import HUB

routes = web.RouteTableDef()


@routes.get("/api/health")
@access(Access.ANONYMOUS)
async def health(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    model = await hub.models.default()
    return web.json_response(
        {
            "ok": True,
            "version": hub.version,
            "model": model.describe(),
            "uptime": round(hub.uptime_s, 3),
            "dataDir": str(hub.settings.home),
        }
    )
