"""A tiny's OpenAPI schema (its ``worker``) as tools: one tool per operation (seed 000, step 5).

The schema is a stranger's text and so is every tool call the model makes with it, so nothing
here trusts either: the schema is fetched through the network guard with a size and time bound,
parsed into a fresh, bounded structure (local ``$ref``s followed to a fixed depth, cycles cut,
at most ``MAX_OPERATIONS`` operations, a node budget per input schema), and every call goes
through the guard again, to the server the schema names. A bad schema is an ``OpenAPIError``
with a sentence for a person; a bad call is a tool error the model reads. Neither is a crash.

OpenAPI 3.x is the format; Swagger 2.0 is read where it costs little (host/basePath, body and
formData parameters, definitions). Parsed schemas are cached per source for a few minutes, so a
conversation does not refetch the schema on every turn.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlencode

import yaml  # type: ignore[import-untyped]
from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolUse
from yarl import URL

from hub.tinys.guarded import Exchange, SendFailed, SendRefused, send

if TYPE_CHECKING:
    from hub.runtime import Hub

__all__ = [
    "MAX_OPERATIONS",
    "OpenAPIError",
    "Operation",
    "Parameter",
    "forget_cached_schemas",
    "load_operations",
    "operation_tools",
    "parse_operations",
    "tool_name",
    "unique_name",
]

log = logging.getLogger(__name__)

MAX_SCHEMA_BYTES = 2_000_000
FETCH_TIMEOUT_S = 15.0
CALL_TIMEOUT_S = 30.0
CACHE_TTL_S = 300.0
FAILURE_TTL_S = 30.0  # a broken schema is retried soon, but not on every turn
CACHE_ENTRIES = 64
MAX_OPERATIONS = 64
MAX_REF_DEPTH = 8
MAX_SCHEMA_DEPTH = 12
MAX_SCHEMA_NODES = 400  # per operation's input schema: what the model reads on every turn
MAX_PROPERTIES = 64
MAX_ENUM = 50
MAX_PARAMETERS = 32
DESCRIPTION_CHARS = 1000
FIELD_DESCRIPTION_CHARS = 300
MAX_RESULT_BYTES = 262_144
MAX_RESULT_CHARS = 20_000
NAME_LIMIT = 64

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
_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]+")
_UNSAFE_KEY = re.compile(r"[^a-zA-Z0-9_.-]+")
_TEMPLATE = re.compile(r"\{([^{}]*)\}")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml bounds nesting depth


class OpenAPIError(Exception):
    """The schema cannot be used; the message says why, for a person."""


@dataclass(frozen=True)
class Parameter:
    """One path, query or header parameter: `key` in the tool input, `name` on the wire."""

    key: str
    name: str
    location: str
    required: bool


@dataclass(frozen=True)
class Operation:
    """One operation of a schema, ready to be called: where, how, and what the model fills in.

    `name` is sanitised and unique within its schema; `allow_hosts` is the owner's
    ``http.allow_hosts`` when the schema was loaded, so calls follow the same policy.
    """

    name: str
    method: str
    path: str
    server: str
    description: str
    input_schema: dict[str, Any]
    parameters: tuple[Parameter, ...] = ()
    body_key: str | None = None
    body_type: str = ""
    body_required: bool = False
    allow_hosts: tuple[str, ...] = field(default=(), compare=False)


# -- names ----------------------------------------------------------------------------------


def tool_name(raw: str) -> str:
    """Strands tool names are ``[a-zA-Z0-9_-]{1,64}``; anything else becomes ``_``."""
    name = _UNSAFE_NAME.sub("_", raw).strip("_")
    return (name or "operation")[:NAME_LIMIT]


def _name_key(name: str) -> str:
    # strands' registry refuses two names that differ only by '-' and '_'.
    return name.replace("-", "_")


def unique_name(name: str, taken: set[str], limit: int = NAME_LIMIT) -> str:
    """`name`, or `name_2`, `name_3`... cut to `limit`, whichever is not in `taken` (compared
    with '-' read as '_'); the result is added to `taken`."""
    candidate, number = name[:limit], 1
    while _name_key(candidate) in taken:
        number += 1
        suffix = f"_{number}"
        candidate = name[: limit - len(suffix)] + suffix
    taken.add(_name_key(candidate))
    return candidate


def _shorten(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


# -- loading --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cached:
    expires: float
    operations: tuple[Operation, ...]
    error: str | None


_cache: OrderedDict[tuple[str, tuple[str, ...]], _Cached] = OrderedDict()


def _cache_key(source: str, allow_hosts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    if _is_url(source):
        return source, allow_hosts
    return "sha256:" + hashlib.sha256(source.encode()).hexdigest(), allow_hosts


def _remember(key: tuple[str, tuple[str, ...]], entry: _Cached) -> None:
    _cache[key] = entry
    _cache.move_to_end(key)
    while len(_cache) > CACHE_ENTRIES:
        _cache.popitem(last=False)


def forget_cached_schemas() -> None:
    """Drop every cached schema: the next load fetches again (tests; a changed schema)."""
    _cache.clear()


def _is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


async def load_operations(hub: Hub, source: str) -> list[Operation]:
    """The operations of the schema at `source`: an http(s) URL, or the schema itself as JSON
    (starting with ``{``) or YAML (starting with ``openapi:`` or ``swagger:``).

    Raises OpenAPIError with a sentence for a person when the schema cannot be fetched or read.
    Results, failures included, are cached per source for a short while.
    """
    source = source.strip()
    allow_hosts = tuple(hub.settings.http_allow_hosts)
    key = _cache_key(source, allow_hosts)
    cached = _cache.get(key)
    if cached is not None and cached.expires > time.monotonic():
        if cached.error is not None:
            raise OpenAPIError(cached.error)
        return list(cached.operations)
    try:
        operations = await _load(source, allow_hosts)
    except OpenAPIError as exc:
        _remember(key, _Cached(time.monotonic() + FAILURE_TTL_S, (), str(exc)))
        raise
    _remember(key, _Cached(time.monotonic() + CACHE_TTL_S, tuple(operations), None))
    return operations


async def _load(source: str, allow_hosts: tuple[str, ...]) -> list[Operation]:
    if _is_url(source):
        text, base = await _fetch(source, allow_hosts), source
    elif source.startswith(("{", "openapi:", "swagger:")):
        text, base = source, None
    else:
        raise OpenAPIError(
            "the worker must be an OpenAPI URL (http or https) or the schema itself "
            "(JSON, or YAML starting with openapi:)"
        )
    # Parsing a 2 MB document takes a while; the event loop keeps serving meanwhile.
    document = await asyncio.to_thread(_parse_text, text)
    return await asyncio.to_thread(parse_operations, document, base, allow_hosts)


async def _fetch(url: str, allow_hosts: tuple[str, ...]) -> str:
    shown = _shorten(url, 200)
    try:
        got = await send(
            "GET",
            url,
            allow_hosts=allow_hosts,
            headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5"},
            max_bytes=MAX_SCHEMA_BYTES,
            timeout_s=FETCH_TIMEOUT_S,
        )
    except (SendRefused, SendFailed) as exc:
        raise OpenAPIError(f"the OpenAPI schema at {shown} was not loaded: {exc}") from exc
    if got.status != 200:
        raise OpenAPIError(
            f"the OpenAPI schema at {shown} was not loaded: it answered HTTP {got.status} "
            f"{got.reason}".rstrip()
        )
    if got.truncated:
        raise OpenAPIError(
            f"the OpenAPI schema at {shown} is larger than {MAX_SCHEMA_BYTES // 1_000_000} MB"
        )
    return got.text()


def _parse_text(text: str) -> Any:
    text = text.lstrip("\ufeff \t\r\n")
    try:
        if text.startswith(("{", "[")):
            return json.loads(text)
        return yaml.load(text, Loader=_LOADER)
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        kind = "JSON" if text.startswith(("{", "[")) else "YAML"
        why = _shorten(" ".join(str(exc).split()), 200)
        raise OpenAPIError(f"the schema is not valid {kind} ({why})") from exc


# -- parsing --------------------------------------------------------------------------------


class _Skip(Exception):
    """One operation cannot be offered; the others still are."""


class _Document:
    """The parsed document, and local ``$ref`` resolution with every walk bounded."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def pointer(self, ref: str) -> Any:
        """The node a local reference (``#/components/schemas/Pet``) names, or None."""
        if ref != "#" and not ref.startswith("#/"):
            return None
        node: Any = self.root
        for raw in ref[2:].split("/") if ref != "#" else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def follow(self, node: Any) -> Any:
        """`node` with its ``$ref`` chain followed (parameters, bodies, path items); None when
        the chain leaves the document, is broken or goes round."""
        for _ in range(MAX_REF_DEPTH + 1):
            if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
                return node
            node = self.pointer(node["$ref"])
        return None


class _SchemaCopy:
    """A JSON schema the model can read, copied from the document's: known keywords only,
    references inlined to a bounded depth, a cycle cut where it closes, a node budget."""

    def __init__(self, document: _Document) -> None:
        self.document = document
        self.nodes = 0

    def of(self, node: Any, depth: int = 0, refs: tuple[str, ...] = ()) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES or depth > MAX_SCHEMA_DEPTH:
            return {"description": "(more of this schema is not shown: it is too large)"}
        if not isinstance(node, Mapping):
            return {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            shown = _shorten(ref.rsplit("/", 1)[-1], 60)
            if ref in refs or len(refs) >= MAX_REF_DEPTH:
                return {"type": "object", "description": f"(nested {shown}, the same shape again)"}
            target = self.document.pointer(ref)
            if not isinstance(target, Mapping):
                return {"description": f"(the reference {_shorten(ref, 100)} is not followed)"}
            return self.of(target, depth + 1, (*refs, ref))
        return self._keywords(node, depth, refs)

    def _keywords(
        self, node: Mapping[str, Any], depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        kind = node.get("type")
        if isinstance(kind, str) or (
            isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind)
        ):
            out["type"] = kind if isinstance(kind, str) else list(kind[:8])
        for key in ("description", "title"):
            if isinstance(node.get(key), str) and node[key].strip():
                out[key] = _shorten(node[key], FIELD_DESCRIPTION_CHARS)
        for key in ("format", "pattern"):
            if isinstance(node.get(key), str) and len(node[key]) <= 200:
                out[key] = node[key]
        for key in (
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
        ):
            value = node.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and _finite(value):
                out[key] = value
        if "default" in node and _is_scalar(node["default"]):
            out["default"] = node["default"]
        enum = node.get("enum")
        if isinstance(enum, list) and enum and all(_is_scalar(v) for v in enum):
            out["enum"] = list(enum[:MAX_ENUM])
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            names = [k for k in properties if isinstance(k, str)][:MAX_PROPERTIES]
            out["properties"] = {k: self.of(properties[k], depth + 1, refs) for k in names}
            required = node.get("required")
            if isinstance(required, list):
                out["required"] = [r for r in required if isinstance(r, str) and r in names]
        if isinstance(node.get("items"), Mapping):
            out["items"] = self.of(node["items"], depth + 1, refs)
        extra = node.get("additionalProperties")
        if isinstance(extra, bool):
            out["additionalProperties"] = extra
        elif isinstance(extra, Mapping):
            out["additionalProperties"] = self.of(extra, depth + 1, refs)
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list) and node[key]:
                out[key] = [self.of(part, depth + 1, refs) for part in node[key][:10]]
        return out


def _finite(value: int | float) -> bool:
    # JSON has no NaN or infinity (YAML has: .nan, .inf); some providers reject them.
    return isinstance(value, int) or math.isfinite(value)


def _is_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= 200
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _finite(value)
    return value is None or isinstance(value, bool)


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
    doc = _Document(document)
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
    return repr(_shorten(title, 80)) if isinstance(title, str) else "schema"


def _server(
    doc: _Document,
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
        return str(value) if _is_scalar(value) and value is not None else match.group(0)

    return _TEMPLATE.sub(default, raw)


def _parameters(
    doc: _Document, operation: Mapping[str, Any], item: Mapping[str, Any]
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
    doc: _Document,
    path: str,
    method: str,
    operation: Mapping[str, Any],
    item: Mapping[str, Any],
    server: str,
    swagger: bool,
    names: set[str],
    allow_hosts: tuple[str, ...],
) -> Operation:
    copier = _SchemaCopy(doc)
    keys: set[str] = set()
    properties: dict[str, Any] = {}
    required: list[str] = []
    parameters: list[Parameter] = []
    form: dict[str, Any] = {}
    body: tuple[dict[str, Any], str, bool] | None = None
    in_path = set(_TEMPLATE.findall(path))
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
            schema["description"] = _shorten(parameter["description"], FIELD_DESCRIPTION_CHARS)
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
    doc: _Document, copier: _SchemaCopy, raw: Any
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
    text = _shorten("\n\n".join(parts), DESCRIPTION_CHARS)
    where = f"{method.upper()} {_shorten(path, 200)}"
    if operation.get("deprecated") is True:
        where += ", deprecated"
    return f"{text} ({where})" if text else f"Calls {where}."


# -- calling --------------------------------------------------------------------------------


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
    path = _TEMPLATE.sub(
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


def _tool(operation: Operation, name: str) -> AgentTool:
    async def call(tool_use: ToolUse, **_: Any) -> ToolResult:
        try:
            succeeded, text = await call_operation(operation, tool_use.get("input"))
        except Exception as exc:  # a tool must answer, whatever went wrong
            log.exception("operation %s failed unexpectedly", name)
            succeeded, text = False, f"{name} failed unexpectedly: {exc or type(exc).__name__}"
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success" if succeeded else "error",
            "content": [{"text": text}],
        }

    spec = {
        "name": name,
        "description": operation.description,
        # strands fills in defaults in place; the cached operation stays as parsed.
        "inputSchema": {"json": copy.deepcopy(operation.input_schema)},
    }
    return PythonAgentTool(name, spec, call)  # type: ignore[arg-type]


def operation_tools(
    operations: Iterable[Operation], *, taken: set[str] | None = None, prefix: str = ""
) -> list[AgentTool]:
    """One strands tool per operation, named `prefix` + its name, cut to 64 characters and
    made unique against `taken` and each other (``_2``, ``_3``...). `taken` is not changed."""
    used = {_name_key(name) for name in taken or ()}
    return [
        _tool(operation, unique_name(tool_name(prefix + operation.name), used))
        for operation in operations
    ]
