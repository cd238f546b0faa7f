"""/archive and /share: owner-private conversation snapshots and their public counterparts.

``POST /archive`` keeps a full-fidelity snapshot (tool calls, usage, model ids; credentials
redacted here as well as by the client); ``GET /archive`` lists the caller's own, newest first;
``GET /archive/{id}`` fetches one; ``POST /archive/{id}/restore`` gives its messages in the shape
``POST /api/chat`` takes; ``DELETE /archive/{id}`` removes it. Someone else's archive answers 404,
exactly like one that does not exist.

``POST /share`` makes a sanitised copy (title and user/assistant text) of one of the caller's
archives (``{"archiveId": ...}``) or of a conversation body; ``GET /share/{id}`` reads it without
signing in; ``DELETE /share/{id}`` is for its owner. Limits and redaction: see
hub/archives/store.py.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import (
    BOOLEAN,
    OK,
    STRING,
    TEXT,
    Operation,
    array,
    closed,
    documented,
    obj,
)
from hub.archives.store import (
    ARCHIVE_ROLES,
    MAX_MESSAGES,
    MAX_TITLE_CHARS,
    ArchiveStore,
    restore_messages,
)

routes = web.RouteTableDef()
_BLOCKS = array(obj(text=STRING))
_MESSAGE = obj(
    {"role": {"enum": list(ARCHIVE_ROLES)}},
    content={"anyOf": [{"type": "null"}, STRING, _BLOCKS]},
)
CONVERSATION = obj(
    {"messages": {**array(_MESSAGE), "minItems": 1, "maxItems": MAX_MESSAGES}},
    title={"type": "string", "maxLength": MAX_TITLE_CHARS},
)
# A share keeps user and assistant text only, so it needs some.
SHAREABLE = {
    **CONVERSATION,
    "properties": {
        **CONVERSATION["properties"],
        "messages": {
            **CONVERSATION["properties"]["messages"],
            "contains": obj({"role": {"enum": ["user", "assistant"]}, "content": TEXT}),
        },
    },
}
ID_ANSWER = obj({"ok": BOOLEAN, "id": STRING})


def _store(request: web.Request) -> ArchiveStore:
    return ArchiveStore(request.app[HUB].db)


async def _body(request: web.Request) -> Any:
    try:
        return await read_json_body(request)
    except RecursionError:
        raise http_error(web.HTTPBadRequest, "body is nested too deeply") from None


@routes.post("/archive")
@access(Access.USER)
@documented(
    Operation(
        "keep a private snapshot of a conversation",
        answers={201: ID_ANSWER},
        body=CONVERSATION,
        errors=(404,),
    )
)
async def create_archive(request: web.Request) -> web.Response:
    body = await _body(request)
    archive = _store(request).create_archive(signed_in(request), body)
    return web.json_response({"ok": True, "id": archive.id}, status=201)


@routes.get("/archive")
@access(Access.USER)
@documented(
    Operation("your archives, newest first", answers={200: obj({"archives": array(obj())})})
)
async def list_archives(request: web.Request) -> web.Response:
    archives = _store(request).list_archives(signed_in(request))
    return web.json_response({"archives": [a.summary() for a in archives]})


@routes.get("/archive/{id}")
@access(Access.USER)
@documented(Operation("one archive", answers={200: obj()}))
async def get_archive(request: web.Request) -> web.Response:
    archive = _store(request).get_archive(signed_in(request), request.match_info["id"])
    return web.json_response(archive.full())


@routes.post("/archive/{id}/restore")
@access(Access.USER)
@documented(
    Operation(
        "an archive's messages, ready for /api/chat", answers={200: obj({"messages": array(obj())})}
    )
)
async def restore_archive(request: web.Request) -> web.Response:
    archive = _store(request).get_archive(signed_in(request), request.match_info["id"])
    return web.json_response({"messages": restore_messages(archive.body)})


@routes.delete("/archive/{id}")
@access(Access.USER)
@documented(Operation("delete an archive", answers={200: OK}))
async def delete_archive(request: web.Request) -> web.Response:
    _store(request).delete_archive(signed_in(request), request.match_info["id"])
    return web.json_response({"ok": True})


@routes.post("/share")
@access(Access.USER)
@documented(
    Operation(
        "a public, sanitised copy of an archive or a conversation",
        answers={201: obj({"id": STRING, "url": STRING})},
        body={"anyOf": [closed({"archiveId": STRING}), SHAREABLE]},
        errors=(404,),
    )
)
async def create_share(request: web.Request) -> web.Response:
    body = await _body(request)
    share = _store(request).create_share(signed_in(request), body)
    return web.json_response({"ok": True, "id": share.id, "url": f"/share/{share.id}"}, status=201)


@routes.get("/share/{id}")
@access(Access.ANONYMOUS)
@documented(Operation("read a share", answers={200: obj()}))
async def get_share(request: web.Request) -> web.Response:
    share = _store(request).get_share(request.match_info["id"])
    return web.json_response(share.public_dict())


@routes.delete("/share/{id}")
@access(Access.USER)
@documented(Operation("withdraw a share", answers={200: OK}))
async def delete_share(request: web.Request) -> web.Response:
    _store(request).delete_share(signed_in(request), request.match_info["id"])
    return web.json_response({"ok": True})
