"""Reading request bodies: one set of answers for every route that takes JSON."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from hub.api.errors import http_error

JSON_TYPES = ("application/json", "application/x-www-form-urlencoded", "")


async def read_json_body(request: web.Request) -> Any:
    """The body as JSON: 400 when it claims JSON and is not, 415 when it is something else.

    ``curl -d`` labels JSON as a form, so a form type that parses as JSON is accepted.
    """
    raw = await request.read()
    try:
        return json.loads(raw)
    except RecursionError:
        raise http_error(web.HTTPBadRequest, "body is nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        if request.content_type.lower() in JSON_TYPES or request.content_type.endswith("+json"):
            raise http_error(web.HTTPBadRequest, f"body is not valid JSON: {exc}") from None
        raise http_error(
            web.HTTPUnsupportedMediaType,
            f"body must be JSON (application/json), not {request.content_type}",
        ) from None
