"""/list and /retrieve: the universe's readers (docs/protocol.md, universe), open to anyone.

Both answer public tinys only. /list pages through SQL; /retrieve asks Chroma for the nearest
nine and keeps only those SQL still holds public, so a private tiny never appears however
recently it changed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.body import query_int
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import (
    INTEGER,
    STRING,
    TINY_NAME,
    Operation,
    array,
    bounded,
    documented,
    nullable,
    obj,
)
from hub.runtime.hub import Hub
from hub.tinys.records import MAX_LIST, NAME_PATTERN, Tiny
from hub.tinys.universe import TOP_K, tiny_url

log = logging.getLogger(__name__)

routes = web.RouteTableDef()
MAX_QUERY_CHARS = 2000


def described(hub: Hub, tiny: Tiny) -> dict[str, Any]:
    """A tiny's compact summary and where to read all of it."""
    return {**tiny.summary(), "url": tiny_url(tiny.name, hub.lan.url)}


@routes.get("/list")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "the universe: public tinys by name",
        answers={
            200: obj(
                {
                    "tinys": array(obj()),
                    "total": INTEGER,
                    "limit": INTEGER,
                    "offset": INTEGER,
                    "nextCursor": nullable(STRING),
                }
            )
        },
        query={"limit": bounded(1, MAX_LIST), "offset": bounded(0, 10**9), "cursor": TINY_NAME},
    )
)
async def list_universe(request: web.Request) -> web.Response:
    """``?limit=&offset=`` or ``?limit=&cursor=`` (the previous page's ``nextCursor``)."""
    hub = request.app[HUB]
    limit = query_int(request, "limit", 20, 1, MAX_LIST)
    offset = query_int(request, "offset", 0, 0, 10**9)
    cursor = request.query.get("cursor", "")
    if "cursor" in request.query and not NAME_PATTERN.fullmatch(cursor):
        raise http_error(web.HTTPBadRequest, "cursor must be a nextCursor from /list")
    page, total = hub.tinys.public_page(limit + 1, offset=offset, after=cursor)
    more = len(page) > limit
    page = page[:limit]
    return web.json_response(
        {
            "tinys": [described(hub, t) for t in page],
            "total": total,
            "limit": limit,
            "offset": 0 if cursor else offset,
            "nextCursor": page[-1].name if more else None,
        }
    )


@routes.get("/retrieve")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "the public tinys nearest q",
        answers={200: obj({"q": STRING, "tinys": array(obj())})},
        query={"q": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS}},
        required_query=("q",),
    )
)
async def retrieve(request: web.Request) -> web.Response:
    """``?q=``: the nine public tinys nearest the query, nearest first, with their distance."""
    hub = request.app[HUB]
    raw = request.query.get("q", "")
    query = raw.strip()
    if not query:
        raise http_error(web.HTTPBadRequest, "q must say what to look for")
    if len(raw) > MAX_QUERY_CHARS:  # as the document counts it: before trimming
        raise http_error(web.HTTPBadRequest, f"q is longer than {MAX_QUERY_CHARS} characters")
    try:
        found = await asyncio.to_thread(hub.universe.search, query, TOP_K)
    except Exception:
        log.warning("/retrieve: the universe failed", exc_info=True)
        raise http_error(
            web.HTTPServiceUnavailable, "the universe cannot be searched right now"
        ) from None
    return web.json_response(
        {
            "q": query,
            "tinys": [
                {**described(hub, hit.tiny), "distance": round(hit.distance, 4)} for hit in found
            ],
        }
    )
