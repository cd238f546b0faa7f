"""Reading requests: one set of answers for every route that takes JSON or a number."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from hub.api.errors import http_error
from hub.api.limits import read_body
from hub.contracts import MAX_CHAT_BODY_BYTES

MAX_JSON_BODY_BYTES = MAX_CHAT_BODY_BYTES

JSON_TYPES = ("application/json", "application/x-www-form-urlencoded", "")


async def read_json_body(request: web.Request, max_bytes: int = MAX_JSON_BODY_BYTES) -> Any:
    """The body as JSON: 400 when it claims JSON and is not, 415 when it is something else,
    413 above ``max_bytes`` (the application's own cap is the largest route's), 408 when the
    body does not arrive within the read deadline (usually already read by the body middleware).

    ``curl -d`` labels JSON as a form, so a form type that parses as JSON is accepted.
    """
    if (request.content_length or 0) > max_bytes:
        raise _too_large(max_bytes, request.content_length or 0)
    raw = await read_body(request)
    if len(raw) > max_bytes:
        raise _too_large(max_bytes, len(raw))
    try:
        value = json.loads(raw)
        if (where := _lone_surrogate(value)) is not None:
            raise http_error(
                web.HTTPBadRequest,
                f"body is not valid JSON text: {where} holds a lone UTF-16 surrogate (\\ud800-"
                "\\udfff without its pair), which is no character",
            )
        return value
    except RecursionError:
        raise http_error(web.HTTPBadRequest, "body is nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        if request.content_type.lower() in JSON_TYPES or request.content_type.endswith("+json"):
            raise http_error(web.HTTPBadRequest, f"body is not valid JSON: {exc}") from None
        raise http_error(
            web.HTTPUnsupportedMediaType,
            f"body must be JSON (application/json), not {request.content_type}",
        ) from None


def _lone_surrogate(value: Any) -> str | None:
    """Where a string in ``value`` holds a lone surrogate (``"\\ud800"`` is valid JSON syntax
    but no character: SQLite, the log and every encoder refuse it later), or None."""
    pending: list[tuple[str, Any]] = [("the body", value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if not _encodes(item):
                return where
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not _encodes(key):
                    return f"a key in {where}"
                pending.append((f"{key!r}", inner))
        elif isinstance(item, list):
            pending.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_large(max_bytes: int, size: int) -> web.HTTPException:
    return web.HTTPRequestEntityTooLarge(
        max_size=max_bytes,
        actual_size=size,
        text=json.dumps({"error": f"body too large (limit {max_bytes} bytes)"}),
        content_type="application/json",
    )


def query_int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter within [low, high]; a 400 naming it otherwise."""
    raw = request.query.get(name)
    if raw is None:
        return default
    if not re.fullmatch(r"[0-9]{1,18}", raw) or not low <= int(raw) <= high:
        raise http_error(web.HTTPBadRequest, f"{name} must be a whole number from {low} to {high}")
    return int(raw)
