"""Calling an operation: the model's input made into one request, the answer made into text.

The input is the model's, steered by whatever text reached it, so it is checked before anything
is sent: required inputs present, path values that cannot walk up the server's path, headers
without line breaks. The request goes through the network guard again (``hub.tinys.guarded``),
to the server the schema names, within the owner's ``http.allow_hosts``. A bad call, a refused
or failing server and an HTTP error status are all text the model reads, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from yarl import URL

from hub.tinys.guarded import Exchange, SendFailed, SendRefused, send
from hub.tinys.openapi.model import (
    CALL_TIMEOUT_S,
    MAX_RESULT_BYTES,
    MAX_RESULT_CHARS,
    TEMPLATE_VARIABLE,
    Operation,
)

__all__ = ["call_operation"]


class _BadInput(Exception):
    """The model's input does not make a request; the message says what to fix."""


@dataclass(frozen=True)
class _Request:
    url: URL
    headers: dict[str, str]
    body: bytes | None


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _path_value(value: Any) -> str:
    if isinstance(value, list):
        text = ",".join(_text_value(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(f"{k},{_text_value(v)}" for k, v in value.items())
    else:
        text = _text_value(value)
    if not text:
        raise _BadInput("a path parameter cannot be empty")
    # A whole segment of dots would walk up the server's path.
    return quote(text, safe="") if text.strip(".") else text.replace(".", "%2E")


def _query_pairs(name: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, list):
        return [(name, _text_value(v)) for v in value]
    if isinstance(value, dict):
        return [(str(k), _text_value(v)) for k, v in value.items()]
    return [(name, _text_value(value))]


def _header_value(name: str, value: Any) -> str:
    if isinstance(value, list):
        text = ",".join(_text_value(v) for v in value)
    else:
        text = _text_value(value)
    if any(ch in text for ch in "\r\n\0"):
        raise _BadInput(f"the header {name} cannot contain line breaks")
    return text


def _body(operation: Operation, value: Any) -> tuple[bytes, str]:
    media = operation.body_type
    if "json" in media.lower():
        if isinstance(value, str):  # a model often sends the JSON as a string
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):
                value = parsed
        return json.dumps(value).encode(), media
    if media.lower() == "application/x-www-form-urlencoded":
        if not isinstance(value, dict):
            raise _BadInput("the body must be an object of form fields")
        pairs = [pair for k, v in value.items() for pair in _query_pairs(str(k), v)]
        return urlencode(pairs).encode(), media
    return _text_value(value).encode(), media


def _request(operation: Operation, arguments: Mapping[str, Any]) -> _Request:
    missing = [p.key for p in operation.parameters if p.required and arguments.get(p.key) is None]
    if operation.body_required and arguments.get(operation.body_key or "") is None:
        missing.append(operation.body_key or "body")
    if missing:
        raise _BadInput(f"missing required input: {', '.join(missing)}")
    values = {
        p.name: _path_value(arguments[p.key])
        for p in operation.parameters
        if p.location == "path" and arguments.get(p.key) is not None
    }
    path = TEMPLATE_VARIABLE.sub(
        lambda m: values.get(m.group(1), m.group(0)),
        quote(operation.path, safe="/{}:@!$&'()*+,;=-._~%"),
    )
    query: list[tuple[str, str]] = []
    headers = {"Accept": "application/json, */*;q=0.5"}
    for parameter in operation.parameters:
        value = arguments.get(parameter.key)
        if value is None:
            continue
        if parameter.location == "query":
            query += _query_pairs(parameter.name, value)
        elif parameter.location == "header":
            headers[parameter.name] = _header_value(parameter.name, value)
    try:
        url = URL(operation.server + path, encoded=True)
        if query:
            url = url.extend_query(query)
    except (ValueError, TypeError) as exc:
        raise _BadInput(f"the input does not make a URL ({exc})") from exc
    data = None
    if operation.body_key is not None and arguments.get(operation.body_key) is not None:
        data, headers["Content-Type"] = _body(operation, arguments[operation.body_key])
    return _Request(url, headers, data)


def _shown(got: Exchange) -> str:
    if not got.body:
        return "(no body)"
    if not got.is_text:
        size = f"more than {len(got.body)}" if got.truncated else str(len(got.body))
        return f"[binary content: {got.content_type}, {size} bytes]"
    text = got.text()
    if got.truncated or len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + "\n\n[truncated: only the beginning of the body is shown]"
    return text


async def call_operation(operation: Operation, arguments: Any) -> tuple[bool, str]:
    """Perform one call: (succeeded, the text the model reads). Never raises for bad input,
    refused or failing servers, or an HTTP error status."""
    what = f"{operation.name} ({operation.method} {operation.path})"
    if not isinstance(arguments, Mapping):
        return False, f"{what} was not called: its input must be an object"
    try:
        request = _request(operation, arguments)
        got = await send(
            operation.method,
            request.url,
            allow_hosts=operation.allow_hosts,
            headers=request.headers,
            body=request.body,
            max_bytes=MAX_RESULT_BYTES,
            timeout_s=CALL_TIMEOUT_S,
        )
    except _BadInput as exc:
        return False, f"{what} was not called: {exc}"
    except (SendRefused, SendFailed) as exc:
        return False, f"{what} failed: {exc}"
    status = f"HTTP {got.status} {got.reason}".rstrip()
    if got.status >= 400:
        return False, f"{what} failed: the API answered {status}.\n\n{_shown(got)}"
    return True, f"{status} ({got.content_type or 'no content type'})\n\n{_shown(got)}"
