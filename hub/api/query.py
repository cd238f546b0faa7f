"""A request's query parameters held to its route's documented ones (``@documented``).

The published document (``/api/openapi.json``) lists each route's query parameters; one it does
not list is refused with a 400 that names it, as a body's unknown field is, rather than ignored:
``?limt=5`` is a typo the caller should hear about, and the document then says exactly what the
route reads. A route nobody documented (a driver's) takes what it likes.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.errors import Handler, http_error
from hub.api.spec import declared_operation

__all__ = ["query_middleware"]

SHOWN_NAMES = 5
SHOWN_CHARS = 40


@web.middleware
async def query_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    operation = declared_operation(request.match_info.handler)
    if operation is not None and request.query:
        unknown = sorted(set(request.query) - set(operation.query))
        if unknown:
            named = ", ".join(repr(name[:SHOWN_CHARS]) for name in unknown[:SHOWN_NAMES])
            takes = ", ".join(operation.query) or "none"
            raise http_error(
                web.HTTPBadRequest,
                f"unknown query parameter(s): {named} (this route takes: {takes})",
            )
    return await handler(request)
