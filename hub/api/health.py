"""GET /api/health: is the hub up, which model answers and why (anonymous callers allowed).

``lanUrl`` is what a phone on the same network dials (null when the hub is not on a LAN);
``loopbackUrl`` is the plain-HTTP listener kept on 127.0.0.1 for local clients when TLS is on.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.keys import HUB
from hub.api.spec import BOOLEAN, NUMBER, STRING, Operation, documented, obj

routes = web.RouteTableDef()


@routes.get("/api/health")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "whether the hub is up, and its model, LAN and cloud state",
        answers={200: obj({"ok": BOOLEAN, "version": STRING, "model": obj(), "uptime": NUMBER})},
    )
)
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
            "lanUrl": hub.lan.url,
            "loopbackUrl": hub.lan.loopback_url,
            "cloud": {
                **(hub.cloud.status() if hub.cloud is not None else {"state": "off"}),
                "memory": hub.memory_sync.status() if hub.memory_sync else {"state": "off"},
            },
        }
    )
