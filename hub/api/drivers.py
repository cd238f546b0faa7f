"""/api/drivers: every driver and device the hub knows, and the audit of hardware commands."""

from __future__ import annotations

from typing import Any

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
    records = hub.drivers.records()
    machine: dict[str, Any] = {}
    for cls in hub.drivers.catalog.installed:
        if cls.machine:
            found = next((r for r in records if r["driver"] == cls.name), None)
            machine[cls.name] = (
                {"available": found["status"] == "online", "detail": found["detail"]}
                if found is not None
                else {"available": False, "detail": _turned_off(cls.name, cls.section())}
            )
    machine["speech"] = hub.speech.status()
    return web.json_response(
        {"drivers": records, "machine": machine, "capabilities": hub.capabilities()}
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


def _turned_off(name: str, section: str) -> str:
    return f"{name} unavailable: turned off in its settings ([drivers.{section}])"
