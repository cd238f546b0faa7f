"""/follow, /visit, /community, /reputation, /profile: the community over HTTP
(docs/community.md).

Reading the community is open to anyone (it is the public graph); following needs a signed-in
person, and a visit counts for whoever views a tiny's page. Store calls are short SQL, but the
trust ranking walks the whole consulted graph, so the readers run in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hub import contracts as c
from hub.api.auth import Access, access, caller, signed_in
from hub.api.body import query_int, read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import (
    BOOLEAN,
    INTEGER,
    LOGIN,
    STRING,
    TINY_NAME,
    Operation,
    array,
    closed,
    documented,
    obj,
)
from hub.community.follows import ACTIONS, CommunityRefused
from hub.community.trust import MAX_RANKED

routes = web.RouteTableDef()
ACTION = {"enum": list(ACTIONS)}
FOLLOW_BODY = {  # exactly one of login and tiny
    "oneOf": [
        closed({"login": LOGIN}, action=ACTION),
        closed({"tiny": TINY_NAME}, action=ACTION),
    ]
}
STANDING = obj({"score": INTEGER, "breakdown": obj()})


async def _object_body(request: web.Request, allowed: set[str], example: str) -> dict[str, Any]:
    body = await read_json_body(request)
    if not isinstance(body, dict):
        raise http_error(web.HTTPBadRequest, f"body must be a JSON object: {example}")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise http_error(web.HTTPBadRequest, f"unknown field(s): {', '.join(unknown)}")
    return body


@routes.post("/follow")
@access(Access.USER)
@documented(
    Operation(
        "follow, unfollow or check a person (login) or a tiny",
        answers={
            200: obj(
                {
                    "target": STRING,
                    "following": BOOLEAN,
                    "changed": BOOLEAN,
                    "followers": INTEGER,
                }
            )
        },
        body=FOLLOW_BODY,
        errors=(404,),
    )
)
async def follow(request: web.Request) -> web.Response:
    user = signed_in(request)
    body = await _object_body(
        request, {"action", "login", "tiny"}, '{"action": "follow", "login": "@bea"}'
    )
    action = body.get("action", "follow")
    if action not in ACTIONS:
        raise CommunityRefused(f"action must be one of {', '.join(ACTIONS)}")
    community = request.app[HUB].community
    target = community.target(user, login=body.get("login"), tiny=body.get("tiny"))
    state = await asyncio.to_thread(community.follow, user, action, target)
    return web.json_response(state.as_json())


@routes.post("/visit")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "a view of a tiny's page: its owner hears someone is there (throttled)",
        answers={200: obj({"tiny": STRING, "notified": BOOLEAN})},
        body=closed({"tiny": TINY_NAME}),
        errors=(404,),
    )
)
async def visit(request: web.Request) -> web.Response:
    """Once per real page view (not for previews or every message); a private tiny needs its
    ``x-tiny-key`` or its owner."""
    body = await _object_body(request, {"tiny"}, '{"tiny": "<name>"}')
    community = request.app[HUB].community
    seen = await asyncio.to_thread(
        community.visit, caller(request), body.get("tiny"), request.headers.get(c.H_KEY)
    )
    return web.json_response(seen.as_json())


@routes.get("/community")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "the trust ranking of tinys and the builders (and what you follow, signed in)",
        answers={
            200: obj({"trust": array(obj()), "builders": array(obj())}, following=array(obj()))
        },
        query={"limit": {"type": "integer", "minimum": 1, "maximum": MAX_RANKED}},
    )
)
async def community(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", 50, 1, MAX_RANKED)
    hub, user = request.app[HUB], caller(request)

    def read() -> dict[str, Any]:
        answer = {"trust": hub.community.ranking(limit), "builders": hub.community.builders()}
        if user is not None:
            answer["following"] = hub.community.following(user)
        return answer

    return web.json_response(await asyncio.to_thread(read))


@routes.get("/reputation")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "a person's reputation: score and per-kind breakdown (yours without login)",
        answers={200: obj({"login": STRING, "score": INTEGER, "breakdown": obj()})},
        query={"login": LOGIN},
        errors=(404,),
    )
)
async def reputation(request: web.Request) -> web.Response:
    community = request.app[HUB].community
    login, user = request.query.get("login"), caller(request)
    if login is not None:
        user = community.person(login)
    elif user is None:
        raise http_error(web.HTTPBadRequest, "give ?login=@<login>, or sign in to see your own")
    standing = await asyncio.to_thread(community.standing, user)
    return web.json_response({"login": f"@{user.login}", **standing.as_json()})


@routes.get("/profile")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "a builder's public page: standing, followers, public tinys",
        answers={200: obj({"login": STRING, "name": STRING, "reputation": STANDING})},
        query={"login": LOGIN},
        required_query=("login",),
        errors=(404,),
    )
)
async def profile(request: web.Request) -> web.Response:
    login = request.query.get("login")
    if not login:
        raise http_error(web.HTTPBadRequest, "give ?login=@<login>")
    page = await asyncio.to_thread(request.app[HUB].community.profile, login)
    return web.json_response(page)
