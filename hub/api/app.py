"""The application factory: one Application, its middlewares, and every resource's routes."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from hub.api import (
    archives,
    ask,
    chat,
    community,
    completions,
    confirmations,
    devices,
    driver_routes,
    drivers,
    endpoint,
    events,
    health,
    jobs,
    learnings,
    media,
    messages,
    model,
    openapi,
    pair,
    payments,
    people,
    relay,
    telegram,
    tinys,
    tools,
    universe,
)
from hub.api.auth import auth_middleware
from hub.api.busy import busy_middleware
from hub.api.errors import error_middleware
from hub.api.keys import HUB, LISTENING, PARTS
from hub.api.limits import (
    GUARD,
    Guard,
    Limits,
    body_middleware,
    rate_limit_middleware,
    scaled_limits,
)
from hub.api.query import query_middleware
from hub.api.quotas import QUOTAS, Quotas
from hub.api.sites import site_middleware
from hub.mcp_server import http as mcp_http
from hub.process.parts import Listening, Parts, running
from hub.runtime.hub import Hub


def create_app(
    hub: Hub, limits: Limits | None = None, listening: Listening | None = None
) -> web.Application:
    """``limits``: the size, rate and slow-body limits (the contract's defaults when None);
    ``app[GUARD].limits`` changes them on a running app. ``listening``: where it will be
    served, for the LAN advertiser (none without it)."""
    limits = limits or scaled_limits(hub.settings.rate_limit_scale)
    app = web.Application(
        # Outermost first: errors become JSON; a caller over its rate (or declaring too big a
        # body) is refused before anything else; then a request a web page sent (another
        # site's, a rebound host name, a form body); then who may call; then the body is read.
        # A busy database is a 503 with Retry-After wherever it happens.
        middlewares=[
            completions.openai_errors,  # on /v1 only: errors in OpenAI's shape
            error_middleware,
            busy_middleware,
            rate_limit_middleware,
            site_middleware,
            auth_middleware,
            body_middleware,
            query_middleware,
        ],
        client_max_size=limits.max_body_bytes,
        # A compressed body is inflated by hub.api.limits.read_body, off the event loop and
        # against a cap on inflated bytes, not by the protocol as its bytes arrive.
        handler_args={"auto_decompress": False},
    )
    app[HUB] = hub
    app[GUARD] = Guard(limits)
    app[QUOTAS] = Quotas()
    app.add_routes(health.routes)
    app.add_routes(chat.routes)
    app.add_routes(completions.routes)
    app.add_routes(tinys.routes)
    app.add_routes(universe.routes)
    app.add_routes(community.routes)
    app.add_routes(model.routes)
    app.add_routes(learnings.routes)
    app.add_routes(archives.routes)
    app.add_routes(devices.routes)
    app.add_routes(relay.routes)
    app.add_routes(events.routes)
    app.add_routes(media.routes)
    app.add_routes(ask.routes)
    app.add_routes(endpoint.routes)
    app.add_routes(drivers.routes)
    app.add_routes(pair.routes)
    app.add_routes(jobs.routes)
    app.add_routes(telegram.routes)
    app.add_routes(tools.routes)
    app.add_routes(messages.routes)
    app.add_routes(people.routes)
    app.add_routes(payments.routes)
    app.add_routes(confirmations.routes)
    app.add_routes(mcp_http.routes)
    driver_routes.add_driver_routes(app)  # after the hub's own: a driver never shadows one
    app.add_routes(openapi.routes)
    app.on_shutdown.append(_end_event_streams)
    if listening is not None:
        app[LISTENING] = listening
    app[PARTS] = Parts()
    app.cleanup_ctx.append(_process)
    app.cleanup_ctx.append(mcp_http.mcp_http_ctx)
    return app


async def _process(app: web.Application) -> AsyncIterator[None]:
    """The hub's long-lived parts (``hub/process/``) run for as long as the app does: the API
    sits on top of the process."""
    async with running(app[HUB], app[PARTS], app.get(LISTENING)):
        yield


async def _end_event_streams(app: web.Application) -> None:
    app[HUB].devices.events.end_streams()
    app[HUB].devices.mailbox.end_polls()
