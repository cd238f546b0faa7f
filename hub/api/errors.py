"""Every error leaves as JSON ``{"error": "..."}`` with the right status; the hub stays up."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from hub.contracts import MAX_REQUEST_BYTES
from hub.core.errors import Refused

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def http_error(exc_class: type[web.HTTPException], message: str) -> web.HTTPException:
    """An aiohttp HTTP exception whose body is our JSON error, for raising from deep code."""
    return exc_class(text=json.dumps({"error": message}), content_type="application/json")


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Refused as exc:
        return json_error(exc.status, str(exc))
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        message = {
            404: f"no route {request.method} {request.path}",
            405: f"method {request.method} not allowed on {request.path}",
            413: f"body too large (limit {MAX_REQUEST_BYTES} bytes)",
        }.get(exc.status, exc.reason)
        answer = json_error(exc.status, message)
        if "Allow" in exc.headers:  # a 405 says which methods the path does serve
            answer.headers["Allow"] = exc.headers["Allow"]
        return answer
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return json_error(500, "internal error (the hub's log has the details)")
