"""/learnings: the caller's own facts over HTTP (docs/protocol.md, memory). ``userId`` may name
only the caller.

Closing a fact here is a forgetting the person can undo (``/learnings/forgotten``) until the
grace period ends; ``?scope=all`` is the person's own explicit clear, which deletes at once.

Memory calls embed text and touch Chroma, so they run in a worker thread; the store is safe
to call from one (its own connection and lock).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import query_int, read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import (
    BOOLEAN,
    INTEGER,
    OK,
    STRING,
    TEXT,
    Operation,
    array,
    bounded,
    closed,
    documented,
    matching,
    obj,
    text,
)
from hub.contracts import MAX_ENTRIES, MAX_ENTRY_CHARS
from hub.memory.graph import KINDS, MemoryRefused, parse_ids, parse_links
from hub.memory.model import LINK_RELS, MAX_SCOPE_CHARS, SUPERSEDES
from hub.memory.sync import (
    MAX_SYNC_EDGES,
    MAX_SYNC_FACTS,
    MAX_SYNC_SOCIAL,
    MAX_WEIGHT,
    SYNC_PAGE,
    parse_changes,
)
from hub.tinys.social import SOCIAL_RELS

routes = web.RouteTableDef()
LEARN_BODY = closed(
    {"fact": text(MAX_ENTRY_CHARS)},
    supersedes=array({"type": "string", "minLength": 1}),
    links=array(
        obj(
            {"rel": {"enum": list(LINK_RELS)}, "dst": {"type": "string", "minLength": 1}},
            scope={"type": "string", "maxLength": MAX_SCOPE_CHARS},
        )
    ),
    visibility={"enum": ["private", "public"]},
    kind={"enum": list(KINDS)},
)
# A pushed page, as hub.memory.sync reads it; a close (valid_to, never before valid_from) is
# taken too, which JSON Schema cannot compare, so this document lists open items only.
_SYNC_ID = matching(r"^[A-Za-z0-9_.:-]{1,100}$")
_WHEN = {"type": "string", "format": "date-time", "maxLength": 40}
_NODE = {
    "anyOf": [
        {"const": "self"},
        matching(r"^@[a-z0-9][a-z0-9_-]{0,38}$"),
        matching(r"^tiny:[a-z0-9][a-z0-9-]{1,39}$"),
    ]
}
SYNC_BODY = closed(
    facts={
        **array(
            closed(
                {"id": _SYNC_ID, "fact": text(MAX_ENTRY_CHARS), "valid_from": _WHEN},
                kind={"enum": list(KINDS)},
                visibility={"enum": ["private", "public"]},
            )
        ),
        "maxItems": MAX_SYNC_FACTS,
    },
    edges={
        **array(
            closed(
                {
                    "src": _SYNC_ID,
                    "rel": {"enum": [*LINK_RELS, SUPERSEDES]},
                    "dst": _SYNC_ID,
                    "valid_from": _WHEN,
                },
                scope={"type": "string", "maxLength": MAX_SCOPE_CHARS},
            )
        ),
        "maxItems": MAX_SYNC_EDGES,
    },
    social={
        **array(
            closed(
                {
                    "src": _NODE,
                    "rel": {"enum": list(SOCIAL_RELS)},
                    "dst": _NODE,
                    "valid_from": _WHEN,
                },
                weight={"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WEIGHT},
            )
        ),
        "maxItems": MAX_SYNC_SOCIAL,
    },
)
T = TypeVar("T")


async def _run(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(function, *args, **kwargs)


def _owner(request: web.Request) -> str:
    user = signed_in(request)
    asked = request.query.get("userId")
    if asked not in (None, "", user.id):
        raise http_error(web.HTTPForbidden, "you can read and write only your own facts")
    return user.id


@routes.get("/learnings")
@access(Access.USER)
@documented(
    Operation(
        "your facts, newest first or best match first",
        answers={200: obj({"learnings": array(obj({"id": STRING}))})},
        query={"userId": STRING, "limit": bounded(1, MAX_ENTRIES), "q": STRING},
    )
)
async def list_learnings(request: web.Request) -> web.Response:
    owner, limit = _owner(request), query_int(request, "limit", 30, 1, MAX_ENTRIES)
    memory = request.app[HUB].memory
    facts = await _run(memory.listing, owner, limit, request.query.get("q", ""))
    return web.json_response({"learnings": [f.as_json() for f in facts]})


@routes.post("/learnings")
@access(Access.USER)
@documented(
    Operation(
        "learn a fact",
        answers={200: obj({"ok": BOOLEAN, "id": STRING})},
        body=LEARN_BODY,
        query={"userId": STRING},
        errors=(404, 409),
    )
)
async def learn(request: web.Request) -> web.Response:
    owner = _owner(request)
    body = await read_json_body(request)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, 'body must be a JSON object: {"fact": "..."}')
    unknown = sorted(set(body) - {"fact", "supersedes", "links", "visibility", "kind"})
    if unknown:
        raise http_error(web.HTTPBadRequest, f"unknown field(s): {', '.join(unknown)}")
    try:
        supersedes = parse_ids(body.get("supersedes"), "supersedes")
        links = parse_links(body.get("links"))
    except MemoryRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    fact = await _run(
        request.app[HUB].memory.learn,
        owner,
        body.get("fact"),
        kind=body.get("kind", "fact"),
        supersedes=supersedes,
        links=links,
        visibility=body.get("visibility", "private"),
    )
    return web.json_response({"ok": True, "id": fact.id})


@routes.delete("/learnings")
@access(Access.USER)
@documented(
    Operation(
        "forget one fact (?id=; undoable) or delete everything at once (?scope=all)",
        answers={200: OK},
        query={"userId": STRING, "id": STRING, "scope": {"enum": ["all"]}},
        errors=(404,),
    )
)
async def forget(request: web.Request) -> web.Response:
    owner = _owner(request)
    memory = request.app[HUB].memory
    fact_id, scope = request.query.get("id"), request.query.get("scope")
    if scope == "all" and fact_id is None:
        cleared = await _run(memory.clear_all, owner)
        return web.json_response({"ok": True, "cleared": cleared})
    if fact_id and scope is None:
        made = await _run(memory.forget, owner, [fact_id])
        return web.json_response(
            {"ok": True, "closed": made.facts[0].as_json(), "forgetting": made.as_json()}
        )
    raise http_error(
        web.HTTPBadRequest, "give ?id=<fact> to close one fact, or ?scope=all to clear everything"
    )


@routes.get("/learnings/forgotten")
@access(Access.USER)
@documented(
    Operation(
        "what you forgot that can still be brought back, newest first",
        answers={200: obj({"forgotten": array(obj({"id": STRING, "delete_after": STRING}))})},
        query={"userId": STRING},
    )
)
async def forgotten(request: web.Request) -> web.Response:
    owner = _owner(request)
    made = await _run(request.app[HUB].memory.forgotten, owner)
    return web.json_response({"forgotten": [f.as_json() for f in made]})


@routes.post("/learnings/forgotten/undo")
@access(Access.USER)
@documented(
    Operation(
        "bring back what one forgetting closed: the facts return, found by recall again",
        answers={200: obj({"ok": BOOLEAN, "restored": array(obj({"id": STRING}))})},
        body=closed({"id": TEXT}),
        query={"userId": STRING},
        errors=(404, 409),
    )
)
async def undo(request: web.Request) -> web.Response:
    owner = _owner(request)
    body = await read_json_body(request)
    if not isinstance(body, dict) or set(body) - {"id"}:
        raise http_error(web.HTTPBadRequest, 'body must be {"id": "<forgetting id>"}')
    restored = await _run(request.app[HUB].memory.restore, owner, body.get("id"))
    return web.json_response({"ok": True, "restored": [f.as_json() for f in restored]})


@routes.get("/learnings/history")
@access(Access.USER)
@documented(
    Operation(
        "the supersedes trail through a fact",
        answers={200: obj({"history": array(obj({"id": STRING}))})},
        query={"userId": STRING, "id": {"type": "string", "minLength": 1}},
        required_query=("id",),
        errors=(404,),
    )
)
async def history(request: web.Request) -> web.Response:
    owner = _owner(request)
    fact_id = request.query.get("id")
    if not fact_id:
        raise http_error(web.HTTPBadRequest, "give ?id=<fact>")
    trail = await _run(request.app[HUB].memory.history, owner, fact_id)
    return web.json_response({"history": [f.as_json() for f in trail]})


@routes.get("/learnings/sync")
@access(Access.USER)
@documented(
    Operation(
        "memory sync: your changes after a revision",
        answers={
            200: obj(
                {
                    "facts": array(obj()),
                    "edges": array(obj()),
                    "social": array(obj()),
                    "upto": INTEGER,
                    "more": BOOLEAN,
                }
            )
        },
        query={"userId": STRING, "after": bounded(0, 2**62), "limit": bounded(1, SYNC_PAGE)},
    )
)
async def changes(request: web.Request) -> web.Response:
    """A page of the caller's changes after revision ``after`` (0: from the start), closed
    facts and links included: what another store of this memory needs to catch up."""
    owner = _owner(request)
    after = query_int(request, "after", 0, 0, 2**62)
    limit = query_int(request, "limit", SYNC_PAGE, 1, SYNC_PAGE)
    page = await _run(request.app[HUB].memory.changes, owner, after, limit)
    return web.json_response(page.as_json())


@routes.post("/learnings/sync")
@access(Access.USER)
@documented(
    Operation(
        "memory sync: merge another store's page",
        answers={
            200: obj(
                {
                    "added": INTEGER,
                    "closed": INTEGER,
                    "edges": INTEGER,
                    "social": INTEGER,
                    "refused": array(obj()),
                }
            )
        },
        body=SYNC_BODY,
        query={"userId": STRING},
    )
)
async def merge(request: web.Request) -> web.Response:
    """Merge another store's page of this memory: ids kept, closes win, a repeat is a no-op."""
    owner = _owner(request)
    try:
        incoming = parse_changes(await read_json_body(request), owner)
    except MemoryRefused as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    memory = request.app[HUB].memory
    report = await _run(memory.merge, owner, incoming.facts, incoming.edges, incoming.social)
    return web.json_response(report.as_json())
