"""``GET /api/openapi.json``: the hub's OpenAPI 3.1 document, built from the live route table.

Each route's path and method come from the application's router, who may call it from its
``@access`` declaration and its shape from its ``@documented`` one, so the document cannot
drift from what the hub serves. The errors every route may answer (from the middlewares: rate,
auth, body limits, a busy database) are listed once here; a route adds its own.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, declared_access
from hub.api.keys import HUB
from hub.api.spec import JSON, Operation, Schema, declared_operation, documented, obj

routes = web.RouteTableDef()

OPENAPI_VERSION = "3.1.0"
ERROR_SCHEMA: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
}
ERROR_MEANINGS = {
    400: "bad input: the message names the field or parameter",
    401: "sign in required, or the token is not valid",
    402: "payment needed: not enough money, or a priced tiny's message without a receipt",
    403: "signed in, but not allowed to do this",
    404: "no such thing (another person's is 'not found' too)",
    405: "this method is not served here",
    406: "the client must accept the answer's content type",
    408: "the body did not arrive in time",
    409: "it conflicts with what exists",
    410: "it was good once and is no longer (an expired quote)",
    413: "the body or a part of it is too large",
    415: "the body is not JSON",
    429: "too many requests: wait Retry-After seconds",
    502: "a device or model the hub called answered badly",
    503: "not possible right now (a busy database, no camera...): Retry-After when it is worth "
    "retrying",
    504: "a device or model the hub called did not answer in time",
}
COMMON_ERRORS = (400, 401, 403, 408, 413, 415, 429, 503)
# /mcp's refusals: the hub's own {"error"} before the MCP package reads the message (not JSON-RPC,
# a protocol version it does not speak), or the package's JSON-RPC error object after.
MCP_ERROR_SCHEMA: Schema = {
    "anyOf": [
        {"$ref": "#/components/schemas/Error"},
        {
            "type": "object",
            "required": ["jsonrpc", "error"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {},
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                },
            },
        },
    ]
}
# OpenAI's error object, which the routes of hub/api/completions.py answer with.
OPENAI_ERROR_SCHEMA: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_WHO = {
    Access.ANONYMOUS: "anyone",
    Access.USER: "user",
    Access.OWNER: "owner",
    Access.DEVICE: "device",
    Access.CLIENT: "client",
}
_PATH_PARAMETER = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


@routes.get("/api/openapi.json")
@access(Access.ANONYMOUS)
@documented(Operation("this document", answers={200: obj({"openapi": {"type": "string"}})}))
async def openapi_document(request: web.Request) -> web.Response:
    return web.json_response(build_document(request.app))


def build_document(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in app.router.routes():
        if route.method in ("HEAD", "OPTIONS", "*") or route.resource is None:
            continue
        path = route.resource.canonical
        paths.setdefault(path, {})[route.method.lower()] = _operation(
            route.method, path, route.handler
        )
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "tiny-hub",
            "version": app[HUB].version,
            "description": 'The hub\'s HTTP API. Every error is JSON {"error": "..."}.',
        },
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {
                "Error": ERROR_SCHEMA,
                "OpenAIError": OPENAI_ERROR_SCHEMA,
                "McpError": MCP_ERROR_SCHEMA,
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(method: str, path: str, handler: Any) -> dict[str, Any]:
    declared = declared_operation(handler) or _undeclared(handler)
    who = declared_access(handler)
    operation: dict[str, Any] = {
        "operationId": _operation_id(method, path),
        "summary": declared.summary,
        "x-tiny-access": _WHO[who],
        "security": [{"bearer": []}] if who in (Access.USER, Access.OWNER, Access.CLIENT) else [],
        "parameters": _path_parameters(path) + _query_parameters(declared),
        "responses": _responses(declared, has_path_parameters="{" in path),
    }
    if declared.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {JSON: {"schema": declared.body}},
        }
    return operation


def _undeclared(handler: Any) -> Operation:
    """A route nobody described (a driver's, say): documented as answering some JSON."""
    doc = (getattr(handler, "__doc__", None) or "").strip().splitlines()
    return Operation(doc[0] if doc else getattr(handler, "__name__", "a route"))


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method.lower()}_{words}"


def _path_parameters(path: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PATH_PARAMETER.findall(path)
    ]


def _query_parameters(declared: Operation) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "in": "query",
            "required": name in declared.required_query,
            "schema": schema,
        }
        for name, schema in declared.query.items()
    ]


def _responses(declared: Operation, *, has_path_parameters: bool) -> dict[str, Any]:
    answers: dict[str, Any] = {
        str(status): {"description": declared.summary}
        if schema is None
        else {
            "description": declared.summary,
            "content": {
                kind: {"schema": schema if kind == JSON else {}} for kind in declared.content_types
            },
        }
        for status, schema in declared.answers.items()
    }
    errors = {*COMMON_ERRORS, *declared.errors, *((404,) if has_path_parameters else ())}
    for status in sorted(errors):
        answers[str(status)] = {
            "description": ERROR_MEANINGS[status],
            "content": {
                JSON: {"schema": {"$ref": f"#/components/schemas/{declared.error_schema}"}}
            },
        }
    return answers
