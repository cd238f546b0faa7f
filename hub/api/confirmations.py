"""Pending actions over HTTP (docs/memory.md, what needs the person): what a chat turn proposed
and only the person may carry out; the rules live in :mod:`hub.confirmations`.

``POST /api/confirmations/confirm`` is the only way a proposal happens: a client calls it with
the person's own token after showing them what it would do. No tool calls it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import signed_in
from hub.api.body import read_json_body
from hub.api.keys import HUB
from hub.api.spec import BOOLEAN, STRING, TEXT, Operation, array, closed, documented, obj
from hub.confirmations import actions
from hub.core.errors import Refused

routes = web.RouteTableDef()

MAX_BODY_BYTES = 1024
PENDING = obj({"id": STRING, "action": STRING, "title": STRING, "state": STRING})


async def _pending_id(request: web.Request) -> Any:
    body = await read_json_body(request, MAX_BODY_BYTES)
    if not isinstance(body, dict):
        raise Refused('body must be a JSON object: {"id": "pa_..."}')
    unknown = sorted(set(body) - {"id"})
    if unknown:
        raise Refused(f"unknown field(s): {', '.join(unknown)} (id)")
    return body.get("id")


@routes.get("/api/confirmations")
@documented(
    Operation(
        "what a chat turn proposed that waits for your answer, oldest first",
        answers={200: obj({"confirmations": array(PENDING)})},
    )
)
async def waiting(request: web.Request) -> web.Response:
    store = actions.pending_of(request.app[HUB])
    listed = store.waiting(signed_in(request).id)
    return web.json_response({"confirmations": [p.as_json(store.now()) for p in listed]})


@routes.post("/api/confirmations/confirm")
@documented(
    Operation(
        "carry out your pending action, once (a repeat does nothing)",
        answers={200: obj({"confirmation": PENDING, "carriedOut": BOOLEAN, "result": obj()})},
        body=closed({"id": TEXT}),
        errors=(404, 410),
    )
)
async def confirm(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    answered = await actions.confirm(hub, signed_in(request), await _pending_id(request))
    return web.json_response(
        {
            "confirmation": answered.pending.as_json(actions.pending_of(hub).now()),
            "carriedOut": answered.carried_out,
            "result": answered.data,
        }
    )


@routes.post("/api/confirmations/decline")
@documented(
    Operation(
        "decline your pending action: nothing happens",
        answers={200: obj({"confirmation": PENDING})},
        body=closed({"id": TEXT}),
        errors=(404, 410),
    )
)
async def decline(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    declined = actions.decline(hub, signed_in(request), await _pending_id(request))
    return web.json_response({"confirmation": declined.as_json(actions.pending_of(hub).now())})
