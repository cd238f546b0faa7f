"""The application factory: one Application, its middlewares, and every resource's routes."""

from __future__ import annotations

from aiohttp import web

from hub.api import (
    archives,
    chat,
    devices,
    drivers,
    endpoint,
    health,
    learnings,
    model,
    tinys,
)
from hub.api.auth import auth_middleware
from hub.api.errors import error_middleware
from hub.api.keys import HUB
from hub.contracts import MAX_REQUEST_BYTES
from hub.runtime import Hub


def create_app(hub: Hub) -> web.Application:
    app = web.Application(
        middlewares=[error_middleware, auth_middleware], client_max_size=MAX_REQUEST_BYTES
    )
    app[HUB] = hub
    app.add_routes(health.routes)
    app.add_routes(chat.routes)
    app.add_routes(tinys.routes)
    app.add_routes(model.routes)
    app.add_routes(learnings.routes)
    app.add_routes(archives.routes)
    app.add_routes(devices.routes)
    app.add_routes(endpoint.routes)
    app.add_routes(drivers.routes)
    app.on_shutdown.append(_end_event_streams)
    return app


async def _end_event_streams(app: web.Application) -> None:
    app[HUB].devices.events.end_streams()
