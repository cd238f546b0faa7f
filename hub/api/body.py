"""Reading requests: one set of answers for every route that takes JSON or a number."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from hub.api.errors import http_error
from hub.api.limits import read_body
from hub.contracts import MAX_CHAT_BODY_BYTES
from hub.core.json_text import JsonRefused, parse_json_text

MAX_JSON_BODY_BYTES = MAX_CHAT_BODY_BYTES


def is_json_type(content_type: str) -> bool:
    """``application/json`` or a ``+json`` type: the only bodies the hub takes. A form or
    ``text/plain`` body is what a web page may send to any site without asking first (a CORS
    "simple request"), so taking those as JSON would let any page the owner visits act here."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def content_type_problem(request: web.Request) -> str | None:
    """Why the request's body is not labelled JSON, or None when it is."""
    declared = request.headers.get("Content-Type")
    if declared is not None and is_json_type(declared):
        return None
    came = f"it came as {declared[:80]}" if declared else "it came without a Content-Type"
    return f"body must be JSON sent with Content-Type: application/json ({came})"


async def read_json_body(request: web.Request, max_bytes: int = MAX_JSON_BODY_BYTES) -> Any:
    """The body as JSON: 400 when it is not, 415 when it is not labelled JSON, 413 above
    ``max_bytes`` (the application's own cap is the largest route's), 408 when the body does
    not arrive within the read deadline (usually already read by the body middleware)."""
    if (request.content_length or 0) > max_bytes:
        raise _too_large(max_bytes, request.content_length or 0)
    if (problem := content_type_problem(request)) is not None:
        raise http_error(web.HTTPUnsupportedMediaType, problem)
    raw = await read_body(request)
    if len(raw) > max_bytes:
        raise _too_large(max_bytes, len(raw))
    return parse_json(raw)


def parse_json(raw: bytes) -> Any:
    """``raw`` as a JSON value, or a 400 saying what is wrong with it (``hub.core.json_text``:
    the same limits as JSON carried in a string inside a body)."""
    try:
        return parse_json_text(raw, "body", max_bytes=len(raw))
    except JsonRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None


def parse_json_field(text: str, field: str) -> Any:
    """JSON carried in a string inside a body (``field`` names it: ``payload``), read with the
    body's limits; a 400 naming the field otherwise."""
    try:
        return parse_json_text(text, field)
    except JsonRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None


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


def whole_number(value: Any) -> int | None:
    """A whole number as JSON may write it (``5881`` or ``5881.0``); None for anything else,
    ``true`` and ``false`` included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None
