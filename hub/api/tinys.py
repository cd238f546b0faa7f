"""/api/tinys: the tiny records for the TUI and scripts (the same store the tools use).

Reads allow anonymous callers (public tinys, or a private one with its x-tiny-key); writes need
a signed-in user, and changing a tiny needs its owner or the hub's owner.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub import contracts as c
from hub.api.auth import Access, access, caller, signed_in
from hub.api.body import query_int, read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import (
    INTEGER,
    STRING,
    TINY_NAME,
    Operation,
    Schema,
    array,
    bounded,
    closed,
    documented,
    obj,
)
from hub.tinys.records import MAX_LIST, MAX_URL_CHARS, TEXT_LIMITS, URL_FIELDS, Tiny

routes = web.RouteTableDef()
# a URL field holds an http(s) URL (or, for worker, a schema written inline)
_TEXTS: dict[str, Schema] = {
    field: {"type": "string", "maxLength": limit}
    if field not in URL_FIELDS
    else {"type": "string", "pattern": "^https?://", "maxLength": min(limit, MAX_URL_CHARS)}
    for field, limit in TEXT_LIMITS.items()
}
TINY_FIELDS = closed(
    name=TINY_NAME,
    chips={**array({"type": "string", "maxLength": 80}), "maxItems": 6},
    skills={**array(obj({"name": STRING})), "maxItems": 50},
    mcpServers=array(obj()),
    visibility={"enum": ["public", "private"]},
    **_TEXTS,
)
NEW_TINY = {**TINY_FIELDS, "required": ["name"]}


@routes.get("/api/tinys")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "public tinys and your own, newest first",
        answers={
            200: obj({"tinys": array(obj()), "total": INTEGER, "limit": INTEGER, "offset": INTEGER})
        },
        query={
            "q": STRING,
            "mine": STRING,
            "limit": bounded(1, MAX_LIST),
            "offset": bounded(0, 10**9),
        },
    )
)
async def list_tinys(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", 20, 1, MAX_LIST)
    offset = query_int(request, "offset", 0, 0, 10**9)
    mine = request.query.get("mine", "").lower() in ("1", "true", "yes")
    items, total = request.app[HUB].tinys.list(
        caller(request), query=request.query.get("q", ""), mine=mine, limit=limit, offset=offset
    )
    return web.json_response(
        {
            "tinys": [t.public_dict() for t in items],
            "total": total,
            "limit": limit,
            "offset": offset,
        }
    )


@routes.get("/api/tinys/{name}")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "one tiny (a private one needs x-tiny-key or its owner)",
        answers={200: obj({"tiny": obj({"name": STRING})}, key=STRING)},
        errors=(404,),
    )
)
async def get_tiny(request: web.Request) -> web.Response:
    tiny = request.app[HUB].tinys.resolve(
        request.match_info["name"], caller(request), request.headers.get(c.H_KEY)
    )
    return web.json_response({"tiny": tiny.public_dict()})


async def _object_body(request: web.Request) -> dict[str, Any]:
    body = await read_json_body(request)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, "body must be a JSON object of tiny fields")
    return body


@routes.post("/api/tinys")
@access(Access.USER)
@documented(
    Operation(
        "create a tiny",
        answers={201: obj({"tiny": obj({"name": STRING})}, key=STRING)},
        body=NEW_TINY,
        errors=(409,),
    )
)
async def create_tiny(request: web.Request) -> web.Response:
    user = signed_in(request)
    tiny, key = request.app[HUB].tinys.create(user, await _object_body(request))
    return _answer(tiny, key, status=201)


@routes.patch("/api/tinys/{name}")
@access(Access.USER)
@documented(
    Operation(
        "change a tiny's fields",
        answers={200: obj({"tiny": obj({"name": STRING})}, key=STRING)},
        body=TINY_FIELDS,
    )
)
async def modify_tiny(request: web.Request) -> web.Response:
    user = signed_in(request)
    tiny, key = request.app[HUB].tinys.modify(
        user, request.match_info["name"], await _object_body(request)
    )
    return _answer(tiny, key)


def _answer(tiny: Tiny, key: str | None, status: int = 200) -> web.Response:
    """The record, and a private tiny's new key — the only time it is shown."""
    body: dict[str, Any] = {"tiny": tiny.public_dict()}
    if key:
        body["key"] = key
    return web.json_response(body, status=status)
