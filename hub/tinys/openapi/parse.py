"""A parsed OpenAPI document into operations: servers, parameters, bodies, descriptions.

OpenAPI 3.x is the format; Swagger 2.0 is read where it costs little (host/basePath, body and
formData parameters, definitions). At most ``MAX_OPERATIONS`` operations are offered. A document
that cannot be used at all is an ``OpenAPIError`` with a sentence for a person; an operation that
cannot be offered (no server, a broken parameter list, a multipart body) is left out with a log
line, and the others still are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from yarl import URL

from hub.tinys.openapi.model import (
    DESCRIPTION_CHARS,
    FIELD_DESCRIPTION_CHARS,
    MAX_OPERATIONS,
    MAX_PARAMETERS,
    TEMPLATE_VARIABLE,
    OpenAPIError,
    Operation,
    Parameter,
)
from hub.tinys.openapi.names import shorten, tool_name, unique_name
from hub.tinys.openapi.schema import Document, SchemaCopy, is_scalar

__all__ = ["parse_operations"]

log = logging.getLogger(__name__)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
# OpenAPI says Accept, Content-Type and Authorization header parameters are ignored; the rest
# are connection-level headers that only the HTTP client may set.
IGNORED_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "authorization",
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "cookie",
    }
)
_UNSAFE_KEY = re.compile(r"[^a-zA-Z0-9_.-]+")


class _Skip(Exception):
    """One operation cannot be offered; the others still are."""


def parse_operations(
    document: Any, base_url: str | None, allow_hosts: Iterable[str] = ()
) -> list[Operation]:
    """The operations of a parsed OpenAPI document, at most MAX_OPERATIONS of them.

    `base_url` is where the schema came from: relative server URLs resolve against it. An
    operation that cannot be offered (no server, a broken parameter list) is left out with a
    log line; the document as a whole is refused with OpenAPIError.
    """
    if not isinstance(document, Mapping):
        raise OpenAPIError(f"the schema is not an object but {_kind(document)}")
    version = str(document.get("openapi") or document.get("swagger") or "")
    swagger = version.startswith("2")
    if not (version.startswith("3") or swagger):
        raise OpenAPIError("the schema is not OpenAPI: it has no openapi: 3.x (or swagger: 2.0)")
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        raise OpenAPIError("the schema has no paths: it describes no operations")
    doc = Document(document)
    found = [
        (path, method, operation, item)
        for path, raw_item in paths.items()
        if isinstance(path, str) and path.startswith("/")
        for item in [doc.follow(raw_item)]
        if isinstance(item, Mapping)
        for method in METHODS
        for operation in [item.get(method)]
        if isinstance(operation, Mapping)
    ]
    title = _title(document)
    if len(found) > MAX_OPERATIONS:
        log.warning(
            "OpenAPI %s: %d operations; the first %d become tools, %d are left out",
            title,
            len(found),
            MAX_OPERATIONS,
            len(found) - MAX_OPERATIONS,
        )
    names: set[str] = set()
    operations = []
    allowed = tuple(allow_hosts)
    for path, method, operation, item in found[:MAX_OPERATIONS]:
        try:
            server = _server(doc, operation, item, base_url, swagger)
            operations.append(
                _operation(doc, path, method, operation, item, server, swagger, names, allowed)
            )
        except _Skip as exc:
            log.info("OpenAPI %s: %s %s is left out: %s", title, method.upper(), path, exc)
    return operations


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "empty"
    return f"a {type(value).__name__}"


def _title(document: Mapping[str, Any]) -> str:
    info = document.get("info")
    title = info.get("title") if isinstance(info, Mapping) else None
    return repr(shorten(title, 80)) if isinstance(title, str) else "schema"


def _server(
    doc: Document,
    operation: Mapping[str, Any],
    item: Mapping[str, Any],
    base_url: str | None,
    swagger: bool,
) -> str:
    """The absolute base URL the operation is sent to, without a trailing slash."""
    if swagger:
        host = doc.root.get("host")
        base_path = doc.root.get("basePath")
        schemes = doc.root.get("schemes")
        listed = schemes if isinstance(schemes, list) else []
        scheme = next((s for s in listed if s in ("https", "http")), "https")
        path = base_path if isinstance(base_path, str) else ""
        raw = f"{scheme}://{host}{path}" if isinstance(host, str) and host else path or "/"
    else:
        raw = "/"
        for holder in (operation, item, doc.root):
            servers = holder.get("servers")
            if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
                raw = _expand_server(servers[0])
                break
    try:
        url = URL(raw)
        if not url.is_absolute():
            if base_url is None:
                raise _Skip(f"its server URL {raw!r} is relative and the schema has no URL")
            url = URL(base_url).join(url)
    except (ValueError, TypeError) as exc:
        raise _Skip(f"its server URL {raw!r} is not a URL ({exc})") from exc
    if url.scheme not in ("http", "https"):
        raise _Skip(f"its server URL {raw!r} is not http(s)")
    return str(url.with_query(None).with_fragment(None)).rstrip("/")


def _expand_server(server: Mapping[str, Any]) -> str:
    url = server.get("url")
    raw = url if isinstance(url, str) else "/"
    variables = server.get("variables")
    if not isinstance(variables, Mapping):
        return raw

    def default(match: re.Match[str]) -> str:
        variable = variables.get(match.group(1))
        value = variable.get("default") if isinstance(variable, Mapping) else None
        return str(value) if is_scalar(value) and value is not None else match.group(0)

    return TEMPLATE_VARIABLE.sub(default, raw)


def _parameters(
    doc: Document, operation: Mapping[str, Any], item: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """Path-item parameters overridden by the operation's own, by (name, in)."""
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for holder in (item, operation):
        listed = holder.get("parameters") or []
        if not isinstance(listed, list):
            raise _Skip("its parameters are not a list")
        for raw in listed[:MAX_PARAMETERS]:
            parameter = doc.follow(raw)
            if not isinstance(parameter, Mapping):
                continue
            name, where = parameter.get("name"), parameter.get("in")
            if isinstance(name, str) and name and isinstance(where, str):
                merged[(name, where)] = parameter
    return list(merged.values())


def _operation(
    doc: Document,
    path: str,
    method: str,
    operation: Mapping[str, Any],
    item: Mapping[str, Any],
    server: str,
    swagger: bool,
    names: set[str],
    allow_hosts: tuple[str, ...],
) -> Operation:
    copier = SchemaCopy(doc)
    keys: set[str] = set()
    properties: dict[str, Any] = {}
    required: list[str] = []
    parameters: list[Parameter] = []
    form: dict[str, Any] = {}
    body: tuple[dict[str, Any], str, bool] | None = None
    in_path = set(TEMPLATE_VARIABLE.findall(path))
    if len(in_path) > MAX_PARAMETERS:
        raise _Skip(f"its path has more than {MAX_PARAMETERS} parameters")

    for parameter in _parameters(doc, operation, item):
        name, where = str(parameter["name"]), str(parameter["in"])
        if swagger and where == "body":
            body = (copier.of(parameter.get("schema")), "application/json", _required(parameter))
            continue
        if swagger and where == "formData":
            form[name] = (copier.of(_v2_schema(parameter)), _required(parameter))
            continue
        if where not in ("path", "query", "header") or (
            where == "header" and name.lower() in IGNORED_HEADERS
        ):
            continue
        if where == "path" and name not in in_path:
            continue
        key = unique_name(_UNSAFE_KEY.sub("_", name) or "value", keys)
        schema = copier.of(parameter.get("schema") if not swagger else _v2_schema(parameter))
        if isinstance(parameter.get("description"), str) and parameter["description"].strip():
            schema["description"] = shorten(parameter["description"], FIELD_DESCRIPTION_CHARS)
        schema.setdefault("description", f"{where} parameter {name}")
        must = where == "path" or _required(parameter)
        properties[key] = schema
        if must:
            required.append(key)
        parameters.append(Parameter(key=key, name=name, location=where, required=must))
    missing = in_path - {p.name for p in parameters if p.location == "path"}
    for name in sorted(missing):  # a template variable the schema forgot to declare
        key = unique_name(_UNSAFE_KEY.sub("_", name) or "value", keys)
        properties[key] = {"type": "string", "description": f"path parameter {name}"}
        required.append(key)
        parameters.append(Parameter(key=key, name=name, location="path", required=True))

    if form:
        fields = {k: schema for k, (schema, _) in form.items()}
        needed = [k for k, (_, must) in form.items() if must]
        body = (
            {"type": "object", "properties": fields, "required": needed},
            "application/x-www-form-urlencoded",
            bool(needed),
        )
    elif not swagger and operation.get("requestBody") is not None:
        body = _request_body(doc, copier, operation.get("requestBody"))

    body_key = None
    if body is not None:
        schema, media, must = body
        body_key = unique_name("body", keys)
        schema = dict(schema)
        schema.setdefault("description", f"the request body ({media})")
        properties[body_key] = schema
        if must:
            required.append(body_key)

    raw_name = operation.get("operationId")
    has_id = isinstance(raw_name, str) and bool(raw_name.strip())
    name = str(raw_name) if has_id else f"{method}_{path.strip('/')}"
    return Operation(
        name=unique_name(tool_name(name), names),
        method=method.upper(),
        path=path,
        server=server,
        description=_description(operation, method, path),
        input_schema={"type": "object", "properties": properties, "required": required},
        parameters=tuple(parameters),
        body_key=body_key,
        body_type=body[1] if body else "",
        body_required=bool(body and body[2]),
        allow_hosts=allow_hosts,
    )


def _required(parameter: Mapping[str, Any]) -> bool:
    return parameter.get("required") is True


def _v2_schema(parameter: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Swagger 2.0 parameter keeps its schema keywords on itself."""
    return {k: v for k, v in parameter.items() if k not in ("name", "in", "required", "$ref")}


def _request_body(
    doc: Document, copier: SchemaCopy, raw: Any
) -> tuple[dict[str, Any], str, bool] | None:
    request_body = doc.follow(raw)
    if not isinstance(request_body, Mapping) or not isinstance(
        request_body.get("content"), Mapping
    ):
        return None
    content = request_body["content"]
    media_types = [m for m in content if isinstance(m, str)]
    media = next((m for m in media_types if "json" in m.lower()), None)
    media = media or next(
        (m for m in media_types if m.lower() == "application/x-www-form-urlencoded"), None
    )
    media = media or next((m for m in media_types if not m.lower().startswith("multipart/")), None)
    if media is None:
        raise _Skip("its request body is multipart/form-data, which the hub does not send")
    entry = content[media]
    schema = entry.get("schema") if isinstance(entry, Mapping) else None
    if media == "*/*" or "json" in media.lower():
        media = "application/json" if media == "*/*" or "*" in media else media
        copied = copier.of(schema)
    elif media.lower() == "application/x-www-form-urlencoded":
        copied = copier.of(schema)
    else:
        copied = {"type": "string"}
    return copied, media, request_body.get("required") is True


def _description(operation: Mapping[str, Any], method: str, path: str) -> str:
    parts = [
        operation[key].strip()
        for key in ("summary", "description")
        if isinstance(operation.get(key), str) and operation[key].strip()
    ]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    text = shorten("\n\n".join(parts), DESCRIPTION_CHARS)
    where = f"{method.upper()} {shorten(path, 200)}"
    if operation.get("deprecated") is True:
        where += ", deprecated"
    return f"{text} ({where})" if text else f"Calls {where}."
