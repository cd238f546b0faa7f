"""``/v1``: OpenAI's chat-completions API over the hub's own turn (docs/openai.md).

``POST /v1/chat/completions`` runs the turn of ``POST /api/chat`` — the same allowance, receipt,
compose, tools, time limit and cancel on disconnect (``hub.api.chat.admit_turn`` and
``stream_turn``) — and only reads OpenAI's body and writes OpenAI's shapes
(:mod:`hub.openai_compat`). Who may call is the same as for ``/api/chat``: anyone on this
machine, a token from the LAN. Errors on ``/v1`` carry OpenAI's error object, which is what
clients of that API read.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from hub import contracts as c
from hub.agent.turn import Turn, run_turn, time_limit_message
from hub.api.auth import Access, access, caller, client_tokens, loopback_anonymous
from hub.api.body import read_json_body
from hub.api.chat import admit_turn, stream_quota, stream_turn
from hub.api.errors import Handler
from hub.api.keys import HUB
from hub.api.spec import (
    ANY,
    BOOLEAN,
    EVENT_STREAM,
    INTEGER,
    JSON,
    NUMBER,
    STRING,
    TEXT,
    Operation,
    array,
    documented,
    nullable,
    obj,
)
from hub.openai_compat.chunks import ChunkFrames, Completion, error_body
from hub.openai_compat.client_tools import client_tool
from hub.openai_compat.models import (
    UnknownModel,
    listed_tinys,
    model_card,
    owner_login,
    tiny_of,
)
from hub.openai_compat.request import (
    MAX_STOPS,
    MAX_TOOLS,
    ROLES,
    TOOL_NAME,
    BadCompletionRequest,
    parse_completion,
)

routes = web.RouteTableDef()

PREFIX = "/v1/"
OPENAI_ERROR = "OpenAIError"  # the OpenAPI document's name for OpenAI's error object
MODEL = obj({"id": STRING, "object": {"const": "model"}}, created=INTEGER, owned_by=STRING)
MESSAGE = obj({"role": {"enum": list(ROLES)}})
STOP = {"type": "string", "minLength": 1}
FUNCTION = obj(
    {"name": {"type": "string", "pattern": TOOL_NAME.pattern}},
    description=STRING,
    parameters=obj(type={"const": "object"}),
)
TOOL = obj({"function": FUNCTION}, type={"const": "function"})
COMPLETION_BODY = obj(
    {"model": TEXT, "messages": {**array(MESSAGE), "minItems": 1}},
    stream=nullable(BOOLEAN),
    stream_options=nullable(obj(include_usage=nullable(BOOLEAN))),
    temperature=nullable({**NUMBER, "minimum": 0, "maximum": 2}),
    top_p=nullable({**NUMBER, "minimum": 0, "maximum": 1}),
    max_tokens=nullable({**INTEGER, "minimum": 1}),
    max_completion_tokens=nullable({**INTEGER, "minimum": 1}),
    stop=nullable({"anyOf": [STOP, {**array(STOP), "maxItems": MAX_STOPS}]}),
    tools=nullable({**array(TOOL), "maxItems": MAX_TOOLS}),
    tool_choice=ANY,
    n=nullable({"const": 1}),
)
COMPLETION = obj(
    {
        "id": STRING,
        "object": {"const": "chat.completion"},
        "choices": array(obj(message=obj(), finish_reason=STRING)),
    },
    usage=obj(prompt_tokens=INTEGER, completion_tokens=INTEGER, total_tokens=INTEGER),
)


@routes.get("/v1/models")
@access(Access.ANONYMOUS)
@loopback_anonymous
@client_tokens
@documented(
    Operation(
        "the tinys the caller can chat with as OpenAI models: tiny and tiny/<name> of their own",
        answers={200: obj({"object": {"const": "list"}, "data": array(MODEL)})},
        error_schema=OPENAI_ERROR,
    )
)
async def list_models(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    cards = [model_card(t, owner_login(hub, t)) for t in listed_tinys(hub, caller(request))]
    return web.json_response({"object": "list", "data": cards})


@routes.get("/v1/models/{model:.+}")
@access(Access.ANONYMOUS)
@loopback_anonymous
@client_tokens
@documented(
    Operation(
        "one model: a tiny the caller may chat with",
        answers={200: MODEL},
        error_schema=OPENAI_ERROR,
    )
)
async def get_model(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    model = request.match_info["model"]
    tiny = hub.tinys.resolve(_tiny_named(model), caller(request), request.headers.get(c.H_KEY))
    return web.json_response(model_card(tiny, owner_login(hub, tiny)))


@routes.post("/v1/chat/completions")
@access(Access.ANONYMOUS)
@loopback_anonymous
@client_tokens
@documented(
    Operation(
        "one chat turn in OpenAI's chat-completions shape: a chat.completion, or "
        "chat.completion.chunk events with stream",
        answers={200: COMPLETION},
        body=COMPLETION_BODY,
        content_types=(JSON, EVENT_STREAM),
        errors=(402, 404, 429, 502, 504),
        error_schema=OPENAI_ERROR,
    )
)
async def chat_completions(request: web.Request) -> web.StreamResponse:
    try:
        asked = parse_completion(await read_json_body(request))
    except BadCompletionRequest as exc:
        raise _error(400, str(exc), param=exc.param) from None
    headers = CIMultiDict(request.headers)
    headers[c.H_NAME] = _tiny_named(asked.model)
    # the tiny is checked before the allowance is spent: a request refused for it costs nothing
    request.app[HUB].tinys.resolve(headers[c.H_NAME], caller(request), headers.get(c.H_KEY))
    with stream_quota(request):
        turn = await admit_turn(
            request,
            asked.messages,
            headers,
            client_tools=[client_tool(spec) for spec in asked.tools],
            sampling=asked.sampling,
            app_tools=False,  # it sees none of the hub's tool calls, so it can run none of them
        )
        completion = Completion(asked.model, frozenset(spec.name for spec in asked.tools))
        if asked.stream:
            frames = ChunkFrames(completion, include_usage=asked.include_usage)
            return await stream_turn(request, turn, frames)
        return await _answer(turn, completion)


async def _answer(turn: Turn, completion: Completion) -> web.Response:
    """The whole turn, then one answer. The client going away cancels this handler, and
    closing the turn here stops the model as it does for a stream."""
    async with contextlib.aclosing(run_turn(turn)) as events:
        async for event in events:
            completion.feed(event)
    if completion.error is not None:
        status = 504 if completion.error == time_limit_message(turn.time_limit_s) else 502
        return web.json_response(error_body(status, completion.error), status=status)
    return web.json_response(completion.response())


def _tiny_named(model: str) -> str:
    try:
        return tiny_of(model)
    except UnknownModel as exc:
        raise _error(404, str(exc), param="model", code="model_not_found") from None


def _error(status: int, message: str, **details: Any) -> web.HTTPException:
    exc = web.HTTPException(
        text=json.dumps(error_body(status, message, **details)), content_type="application/json"
    )
    exc.set_status(status)
    return exc


@web.middleware
async def openai_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """On ``/v1``, every error — a route's, or a middleware's (rate, sign-in, body limits) —
    in OpenAI's shape ``{"error": {"message", "type", "param", "code"}}``; elsewhere nothing
    changes. The status, headers such as ``Retry-After`` and a forced close stay."""
    if not request.path.startswith(PREFIX):
        return await handler(request)
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or (reshaped := _reshaped(exc)) is None:
            raise
        return reshaped
    if response.status < 400 or not isinstance(response, web.Response):
        return response
    return _reshaped(response) or response


def _reshaped(response: web.Response) -> web.Response | None:
    """The error ``response`` in OpenAI's shape; None when it is in that shape already."""
    try:
        body = json.loads(response.text or "")
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return None
    if isinstance(body, dict):
        message = str(body.get("error") or response.reason)
        extra = {k: v for k, v in body.items() if k != "error"}  # resetAt, limit... of a 429
    else:
        message, extra = (response.text or response.reason), {}
    headers = {
        k: v
        for k, v in response.headers.items()
        if k.lower() not in ("content-type", "content-length")
    }
    reshaped = web.json_response(
        {**error_body(response.status, message), **extra}, status=response.status, headers=headers
    )
    if response.keep_alive is False:
        reshaped.force_close()
    return reshaped
