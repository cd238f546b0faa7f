"""/api/drivers: every driver and device the hub knows, and the audit of hardware commands."""

from __future__ import annotations

import re

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.errors import http_error
from hub.api.keys import HUB

routes = web.RouteTableDef()


@routes.get("/api/drivers")
@access(Access.USER)
async def list_drivers(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    return web.json_response(
        {"drivers": hub.drivers.records(), "capabilities": hub.drivers.capabilities()}
    )


@routes.get("/api/drivers/audit")
@access(Access.OWNER)
async def audit(request: web.Request) -> web.Response:
    raw = request.query.get("limit", "200")
    if not re.fullmatch(r"[0-9]{1,5}", raw) or not 1 <= int(raw) <= 10_000:
        raise http_error(web.HTTPBadRequest, "limit must be a whole number from 1 to 10000")
    return web.json_response({"commands": request.app[HUB].audit.recent(int(raw))})
