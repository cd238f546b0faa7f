"""The hub as an endpoint device (docs/protocol.md, endpoint devices): what the cloud dials when
the owner enrolls this hub there. Every route needs ``Authorization: Bearer <secret>`` — a token of
this hub's users — and answers 401 without it. ``POST /api/chat {prompt}`` lives in chat.py: the
body's shape tells it apart from the SSE form."""

from __future__ import annotations

from aiohttp import web

from drivers.base import StillCamera
from hub.api.auth import Access, access
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import ANY, BOOLEAN, STRING, Operation, documented, obj

routes = web.RouteTableDef()


@routes.get("/api/telemetry")
@access(Access.USER)
@documented(
    Operation(
        "the hub as an endpoint device: its state",
        answers={200: obj({"ok": BOOLEAN, "version": STRING})},
    )
)
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
            "capabilities": hub.capabilities(),
        }
    )


@routes.get("/api/camera/snapshot")
@access(Access.OWNER)
@documented(
    Operation(
        "a JPEG from the machine's camera or another camera a driver runs",
        answers={200: ANY},
        content_types=("image/jpeg",),
    )
)
async def snapshot(request: web.Request) -> web.Response:
    """A JPEG from the first camera online, the machine's own first, then a driver's (a board
    worn or attached); 503 with the reasons when none gives one. Only the owner: it is a
    picture of their room."""
    hub = request.app[HUB]
    problems = []
    for camera in hub.drivers.with_capability("camera"):
        if isinstance(camera, StillCamera):
            try:
                return _jpeg(await camera.snapshot())
            except Exception as exc:  # any driver's failure is one more reason in the 503
                problems.append(f"{camera.name}: {exc}")
    if not problems:
        problems = [
            f"{r['driver']}: {r['detail']}"
            for r in hub.drivers.records()
            if "camera" in r["capabilities"]
        ] or ["none is online"]
    raise http_error(web.HTTPServiceUnavailable, "no camera on this hub: " + "; ".join(problems))


def _jpeg(data: bytes) -> web.Response:
    return web.Response(body=data, content_type="image/jpeg", headers={"Cache-Control": "no-store"})
