"""Reading requests: one set of answers for every route that takes JSON or a number."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from aiohttp import web

from hub.api.errors import http_error
from hub.api.limits import read_body
from hub.contracts import MAX_CHAT_BODY_BYTES

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
    """``raw`` as a JSON value, or a 400 saying what is wrong with it: not UTF-8, not JSON,
    nested too deeply, a number too long to read or too large for a float, a lone surrogate."""
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise http_error(web.HTTPBadRequest, "body is nested too deeply") from None
    except UnicodeDecodeError:
        raise http_error(web.HTTPBadRequest, "body is not valid JSON: it is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise http_error(web.HTTPBadRequest, f"body is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer past Python's digit limit, or _finite's refusal
        problem = _number_problem(exc)
        raise http_error(web.HTTPBadRequest, f"body is not usable JSON: {problem}") from None
    if (where := _lone_surrogate(value)) is not None:
        raise http_error(
            web.HTTPBadRequest,
            f"body is not valid JSON text: {where} holds a lone UTF-16 surrogate (\\ud800-"
            "\\udfff without its pair), which is no character",
        )
    return value


class _NumberRefused(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberRefused(f"the number {text[:20]}... is too large")
    return value


def _no_constant(text: str) -> float:
    raise _NumberRefused(f"{text} is not a JSON number")


def _number_problem(exc: ValueError) -> str:
    if isinstance(exc, _NumberRefused):
        return str(exc)
    return f"a number has more than {sys.get_int_max_str_digits()} digits"


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


def whole_number(value: Any) -> int | None:
    """A whole number as JSON may write it (``5881`` or ``5881.0``); None for anything else,
    ``true`` and ``false`` included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None
