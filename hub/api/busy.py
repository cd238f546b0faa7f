"""A write the database could not take in time answers 503 with ``Retry-After``, never a 500.

The store has already rolled the transaction back when ``StoreBusy`` reaches a route, so the
caller can send the same request again.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.errors import Handler
from hub.store.db import StoreBusy


@web.middleware
async def busy_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except StoreBusy as exc:
        return web.json_response(
            {"error": str(exc)},
            status=exc.status,
            headers={"Retry-After": str(exc.retry_after_s)},
        )
