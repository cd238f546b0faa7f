"""/api/messages: the caller's inbox over HTTP, the same store and delivery the tools use.

``GET /api/messages`` is the overview (conversations with unread counts), ``GET
/api/messages/{login}`` one conversation (marking what came from them read), ``POST
/api/messages`` sends one. Every route needs a signed-in person: an inbox is someone's.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import query_int, read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.quotas import QUOTAS, person_of
from hub.api.spec import (
    BOOLEAN,
    INTEGER,
    STRING,
    Operation,
    array,
    bounded,
    closed,
    documented,
    matching,
    nullable,
    obj,
    text,
)
from hub.messages.delivery import peer, send_message
from hub.messages.store import MAX_LIST, MAX_TEXT, Inbox

routes = web.RouteTableDef()

MESSAGE = obj(
    {
        "id": INTEGER,
        "from": STRING,
        "to": STRING,
        "tiny": STRING,
        "text": STRING,
        "sentAt": {"type": "number"},
        "readAt": nullable({"type": "number"}),
    }
)
CONVERSATION = obj({"with": STRING, "name": STRING, "unread": INTEGER, "last": MESSAGE})
SEND_BODY = closed({"to": matching(r"^@?[a-z0-9][a-z0-9_-]{0,38}$"), "text": text(MAX_TEXT)})


@routes.get("/api/messages")
@access(Access.USER)
@documented(
    Operation(
        "your inbox: one line per conversation with its unread count, newest first",
        answers={200: obj({"unread": INTEGER, "conversations": array(CONVERSATION)})},
        query={"limit": bounded(1, MAX_LIST)},
    )
)
async def overview(request: web.Request) -> web.Response:
    user, inbox = signed_in(request), Inbox(request.app[HUB].db)
    limit = query_int(request, "limit", 50, 1, MAX_LIST)
    conversations = inbox.overview(user.id, limit)
    return web.json_response(
        {"unread": inbox.unread(user.id), "conversations": [c.as_json() for c in conversations]}
    )


@routes.get("/api/messages/{login}")
@access(Access.USER)
@documented(
    Operation(
        "one conversation, oldest first; what the other person sent is marked read",
        answers={
            200: obj(
                {
                    "with": STRING,
                    "name": STRING,
                    "messages": array(MESSAGE),
                    "markedRead": INTEGER,
                    "more": BOOLEAN,
                }
            )
        },
        query={"limit": bounded(1, MAX_LIST), "before": bounded(1, 2**62)},
        errors=(404,),
    )
)
async def conversation(request: web.Request) -> web.Response:
    user, hub = signed_in(request), request.app[HUB]
    other = peer(hub, request.match_info["login"])
    limit = query_int(request, "limit", 50, 1, MAX_LIST)
    before = query_int(request, "before", 2**62, 1, 2**62)
    inbox = Inbox(hub.db)
    page, more = inbox.page(user.id, other.id, limit, before)
    marked = inbox.mark_read(user.id, other.id)
    return web.json_response(
        {
            "with": f"@{other.login}",
            "name": other.name,
            "messages": [m.as_json() for m in page],
            "markedRead": marked,
            "more": more,
        }
    )


@routes.post("/api/messages")
@access(Access.USER)
@documented(
    Operation(
        "send a message to @login, or to one of their tinys (it reaches the tiny's owner)",
        answers={201: obj({"ok": BOOLEAN, "message": MESSAGE})},
        body=SEND_BODY,
        errors=(404,),
    )
)
async def send(request: web.Request) -> web.Response:
    body = await read_json_body(request)
    fields = _send_fields(body)
    sender = signed_in(request)
    per_minute = request.app[HUB].settings.quota_messages_per_minute
    who = person_of(request, sender.id)
    request.app[QUOTAS].spend("messages", who, 1, per_minute, "this message")
    message = send_message(request.app[HUB], sender, *fields)
    return web.json_response({"ok": True, "message": message.as_json()}, status=201)


def _send_fields(body: Any) -> tuple[str, str]:
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, 'body must be a JSON object: {"to", "text"}')
    unknown = sorted(set(body) - {"to", "text"})
    if unknown:
        raise http_error(web.HTTPBadRequest, f"unknown field(s): {', '.join(unknown)}")
    to, text = body.get("to"), body.get("text")
    if not isinstance(to, str) or not isinstance(text, str):
        raise http_error(web.HTTPBadRequest, '"to" and "text" must both be strings')
    return to, text
