"""GET /api/health: is the hub up, which model answers and why (anonymous callers allowed).

Anyone on the LAN may ask, so an anonymous caller gets only what a client needs to start:
``ok``, ``version``, ``id`` and ``model`` as ``{provider, id, toolsCapable}`` (whether a model
answers and calls tools). Everything about this machine — the model's ``reason`` (which can
quote Ollama's connection error), the embedded runner (its pid, its prompt cache), ``uptime``,
``dataDir``, ``lanUrl``, ``loopbackUrl``, the repairs and the cloud state — needs a token; the
hub's own clients (the TUI, the CLI, ``tiny-hub doctor``) send the owner's.

``id`` is the hub's stable id (``hub.id`` in its data dir, as its mDNS record carries it):
``tiny-hub doctor`` tells its own running hub from another by it. ``lanUrl`` is what a phone on
the same network dials (null when the hub is not on a LAN); ``loopbackUrl`` is the plain-HTTP
listener kept on 127.0.0.1 for local clients when TLS is on. ``model`` is what answers the
caller's turns when a turn names no model: a signed-in caller's saved choice (``/api/model``),
else the hub's default, with whether it calls tools; every screen of a client reads it from here.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access, caller
from hub.api.keys import HUB, PARTS
from hub.api.spec import BOOLEAN, NUMBER, STRING, Operation, documented, obj
from hub.lan.hub_id import hub_id
from hub.people.preferences import saved_model

routes = web.RouteTableDef()

# What an anonymous caller learns of the model: which answers, and whether it calls tools.
ANONYMOUS_MODEL_FIELDS = ("provider", "id", "toolsCapable")


@routes.get("/api/health")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "whether the hub is up, and its model, LAN and cloud state",
        answers={
            200: obj(
                {"ok": BOOLEAN, "version": STRING, "id": STRING, "model": obj()},
                uptime=NUMBER,
            )
        },
    )
)
async def health(request: web.Request) -> web.Response:
    hub, parts = request.app[HUB], request.app[PARTS]
    user = caller(request)
    model = (await hub.models.answering(saved_model(hub.db, user))).describe()
    public = {"ok": True, "version": hub.version, "id": hub_id(hub.settings.home)}
    if user is None:
        shown = {key: model[key] for key in ANONYMOUS_MODEL_FIELDS}
        return web.json_response({**public, "model": shown})
    return web.json_response(
        {
            **public,
            "model": model,
            "embedded": hub.models.embedded_status(),
            "uptime": round(hub.uptime_s, 3),
            "dataDir": str(hub.settings.home),
            "lanUrl": hub.lan.url,
            "loopbackUrl": hub.lan.loopback_url,
            "repairs": parts.repairs.status(),
            "cloud": {
                **(parts.cloud.status() if parts.cloud is not None else {"state": "off"}),
                "memory": parts.memory_sync.status() if parts.memory_sync else {"state": "off"},
            },
        }
    )
