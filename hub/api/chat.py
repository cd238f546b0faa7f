"""POST /api/chat: validate the body, choose the model, stream the turn as SSE (docs/protocol.md).

Frames are ``data: {json}`` separated by a blank line, each with a monotonic ``seq`` so a client
can tell a frame was lost; ``: ping`` every 15 s keeps proxies from closing a quiet stream;
``data: [DONE]`` ends it. The hub's AppRunner cancels this handler when the client goes away,
which closes the turn and with it the model's stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web
from strands.types.tools import AgentTool

from hub import contracts as c
from hub.agent.attachments import Attachment, BlockError, content_block
from hub.agent.compose import AnswerFailed, answer, compose_turn
from hub.agent.models import ModelUnavailable
from hub.agent.sampling import Sampling
from hub.agent.stream import Event, error_event
from hub.agent.tool_blocks import check_pairs, tool_block
from hub.agent.tools.client_caps import ClientHeaderInvalid
from hub.agent.turn import ChatMessage, ToolAnswer, ToolCall, Turn, run_turn
from hub.api.auth import Access, access, caller, loopback_anonymous
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.quotas import QUOTAS, person_of
from hub.api.spec import (
    ANY,
    EVENT_STREAM,
    JSON,
    STRING,
    TEXT,
    Operation,
    Schema,
    array,
    closed,
    documented,
    matching,
    obj,
)
from hub.community.allowance import OverAllowance
from hub.payments.ledger import require_paid_message

log = logging.getLogger(__name__)
routes = web.RouteTableDef()
TEXT_BLOCK = closed({"text": TEXT}, type={"const": "text"})
# The calls and results a client recorded from earlier turns (hub/agent/tool_blocks.py): calls
# in an assistant message, their results in the user message right after it.
TOOL_USE_BLOCK = closed(
    {
        c.BLOCK_TOOL_USE: closed(
            {
                "toolUseId": matching(c.TOOL_USE_ID_PATTERN),
                "name": matching(c.TOOL_NAME_PATTERN),
                "input": {"type": "object"},
            }
        )
    },
    type={"const": c.BLOCK_TOOL_USE},
)
RESULT_PART = {
    "anyOf": [closed({"text": STRING}), closed({"json": ANY})],
}
TOOL_RESULT_BLOCK = closed(
    {
        c.BLOCK_TOOL_RESULT: closed(
            {
                "toolUseId": matching(c.TOOL_USE_ID_PATTERN),
                "content": {**array(RESULT_PART), "maxItems": c.MAX_TOOL_BLOCKS},
            },
            status={"enum": list(c.TOOL_RESULT_STATUSES)},
        )
    },
    type={"const": c.BLOCK_TOOL_RESULT},
)


def _message_of(role: str, *blocks: Schema) -> Schema:
    items = blocks[0] if len(blocks) == 1 else {"anyOf": list(blocks)}
    return obj(
        {"role": {"const": role}, "content": {"anyOf": [TEXT, {**array(items), "minItems": 1}]}}
    )


CHAT_MESSAGE = {
    "anyOf": [
        _message_of("user", TEXT_BLOCK, TOOL_RESULT_BLOCK),
        _message_of("assistant", TEXT_BLOCK, TOOL_USE_BLOCK),
        _message_of("system", TEXT_BLOCK),
    ]
}
# {messages} (the last one the person's, and each tool call answered right after it: rules JSON
# Schema cannot state), or {prompt} (the hub as an endpoint device, for a signed-in caller).
CHAT_BODY = {
    "anyOf": [
        obj({"messages": {**array(CHAT_MESSAGE), "minItems": 1}}),
        obj({"prompt": TEXT}),
    ]
}


class Frames(Protocol):
    """How a turn's events become the ``data:`` frames of a stream: the contract's numbered
    events here, OpenAI's chunks in hub/openai_compat/chunks.py. Each is handed every event
    in order, and an error event for a failure of the stream itself."""

    def of(self, event: Event) -> Iterable[str]:
        """The frames (JSON text) ``event`` becomes: none, one or several."""
        ...

    def ending(self) -> Iterable[str]:
        """The frames after the last event, before ``[DONE]``."""
        ...


class ContractFrames:
    """The contract's frames: each event as it is, with a monotonic ``seq``."""

    def __init__(self) -> None:
        self.seq = 0

    def of(self, event: Event) -> Iterable[str]:
        frame = json.dumps({**event, "seq": self.seq}, separators=(",", ":"), ensure_ascii=False)
        self.seq += 1
        return (frame,)

    def ending(self) -> Iterable[str]:
        return ()


class SseWriter:
    """Writes frames; one lock so a ping never lands inside a frame."""

    def __init__(self, response: web.StreamResponse) -> None:
        self._response = response
        self._lock = asyncio.Lock()

    async def send(self, frames: Iterable[str]) -> None:
        for frame in frames:
            await self._write(f"data: {frame}\n\n")

    async def ping(self) -> None:
        await self._write(f"{c.SSE_PING}\n\n")

    async def done(self) -> None:
        await self._write(f"data: {c.SSE_DONE}\n\n")

    async def _write(self, text: str) -> None:
        async with self._lock:
            await self._response.write(text.encode("utf-8"))


def parse_messages(body: Any) -> list[ChatMessage]:
    """The request body → messages; a 400 that names the bad field otherwise."""
    if not isinstance(body, dict) or "messages" not in body:
        raise http_error(web.HTTPBadRequest, 'body must be a JSON object: {"messages": [...]}')
    raw = body["messages"]
    if not isinstance(raw, list) or not raw:
        raise http_error(web.HTTPBadRequest, "messages must be a non-empty array")
    messages = [_parse_message(i, item) for i, item in enumerate(raw)]
    dialogue = [(i, m) for i, m in enumerate(messages) if m.role != "system"]
    if not dialogue or dialogue[-1][1].role != "user":
        raise http_error(web.HTTPBadRequest, "the last message must have role user")
    last_index, last = dialogue[-1]
    if last.tool_answers:
        # What the person says last is the prompt; a message of tool results only finishes
        # the assistant message before it.
        raise http_error(
            web.HTTPBadRequest,
            f"messages[{last_index}]: the last message must be the person's words; its "
            "toolResult blocks go in a user message of their own before it",
        )
    try:
        check_pairs(dialogue)
    except BlockError as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    return messages


def _parse_message(index: int, item: Any) -> ChatMessage:
    where = f"messages[{index}]"
    if not isinstance(item, dict):
        raise http_error(web.HTTPBadRequest, f"{where} must be an object with role and content")
    role = item.get("role")
    if role not in c.CHAT_ROLES:
        raise http_error(
            web.HTTPBadRequest, f"{where}.role must be one of {', '.join(c.CHAT_ROLES)}"
        )
    content = item.get("content")
    blocks: list[str | Attachment | ToolCall | ToolAnswer]
    if isinstance(content, str):
        blocks = [content]
    elif isinstance(content, list):
        blocks = [_block(f"{where}.content[{i}]", b, role) for i, b in enumerate(content)]
    else:
        raise http_error(web.HTTPBadRequest, f"{where}.content must be a string or an array")
    texts = tuple(b for b in blocks if isinstance(b, str) and b)
    attachments = tuple(b for b in blocks if isinstance(b, Attachment))
    calls = tuple(b for b in blocks if isinstance(b, ToolCall))
    answers = tuple(b for b in blocks if isinstance(b, ToolAnswer))
    if max(len(calls), len(answers)) > c.MAX_TOOL_BLOCKS:
        raise http_error(
            web.HTTPBadRequest,
            f"{where}.content holds more than {c.MAX_TOOL_BLOCKS} toolUse or toolResult blocks",
        )
    if not any(t.strip() for t in texts) and not (attachments or calls or answers):
        raise http_error(web.HTTPBadRequest, f"{where}.content has no text, image or audio")
    return ChatMessage(role, texts, attachments, tool_calls=calls, tool_answers=answers)


def _block(where: str, block: Any, role: str) -> str | Attachment | ToolCall | ToolAnswer:
    try:
        return tool_block(where, block, role) or content_block(where, block)
    except BlockError as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None


@routes.post("/api/chat")
@access(Access.ANONYMOUS)
@loopback_anonymous
@documented(
    Operation(
        "one chat turn, streamed as Server-Sent Events ({prompt}: a one-shot {reply})",
        answers={200: obj(reply=STRING)},
        body=CHAT_BODY,
        content_types=(EVENT_STREAM, JSON),
        errors=(402, 429, 502),
    )
)
async def chat(request: web.Request) -> web.StreamResponse:
    body = await read_json_body(request)
    if isinstance(body, dict) and "prompt" in body and "messages" not in body:
        return await endpoint_chat(request, body)
    messages = parse_messages(body)
    with stream_quota(request):
        turn = await admit_turn(request, messages, request.headers)
        return await stream_turn(request, turn, ContractFrames())


def stream_quota(request: web.Request) -> contextlib.AbstractContextManager[None]:
    """One of the caller's open streams (``quotas.open_streams``) for as long as the turn's
    stream is open; over the quota, a 429."""
    settings, user = request.app[HUB].settings, caller(request)
    who = person_of(request, user.id if user is not None else None)
    return request.app[QUOTAS].stream(who, settings.quota_open_streams)


async def admit_turn(
    request: web.Request,
    messages: list[ChatMessage],
    headers: Mapping[str, str],
    *,
    client_tools: Sequence[AgentTool] = (),
    sampling: Sampling | None = None,
    app_tools: bool = True,
) -> Turn:
    """After the body is known good, the steps every chat route takes in this order: spend one
    request of the allowance, spend a priced tiny's receipt, compose the turn. ``headers``: the
    request's, or what a route makes of its body (the tiny an OpenAI ``model`` names); the rest
    as :func:`compose_turn` takes them."""
    await charge_allowance(request)
    # after the body and the allowance are known good: a receipt is spent here, and must not
    # go on a 400 or a 429
    require_paid_message(request.app[HUB], caller(request), headers)
    try:
        return await compose_turn(
            request.app[HUB],
            caller(request),
            messages,
            headers,
            client_tools=client_tools,
            sampling=sampling,
            app_tools=app_tools,
        )
    except (ModelUnavailable, ClientHeaderInvalid) as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None


async def charge_allowance(request: web.Request) -> None:
    """Spend one request of the caller's daily allowance (docs/community.md), or answer 429: a
    request refused for its body costs nothing, so this runs after the checks."""
    allowance = request.app[HUB].community.allowance
    try:
        await asyncio.to_thread(allowance.charge, caller(request), request.remote or "?")
    except OverAllowance as exc:
        raise web.HTTPTooManyRequests(
            text=json.dumps(exc.as_json()),
            content_type="application/json",
            headers={"Retry-After": str(exc.retry_after_s)},
        ) from None


async def endpoint_chat(request: web.Request, body: dict[str, Any]) -> web.Response:
    """The hub as an endpoint device (docs/protocol.md, endpoint devices): ``{prompt}`` →
    ``{reply}``, for a signed-in caller only (the cloud dials it with the bearer it was enrolled
    with)."""
    user = caller(request)
    if user is None:
        raise http_error(web.HTTPUnauthorized, "Authorization: Bearer <secret> is required")
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise http_error(web.HTTPBadRequest, "prompt must be a non-empty string")
    await charge_allowance(request)
    require_paid_message(request.app[HUB], user, request.headers)
    try:
        reply = await answer(request.app[HUB], user, prompt, request.headers)
    except (ModelUnavailable, ClientHeaderInvalid) as exc:
        raise http_error(web.HTTPBadRequest, str(exc)) from None
    except AnswerFailed as exc:
        raise http_error(web.HTTPBadGateway, str(exc)) from None
    return web.json_response({"reply": reply})


async def stream_turn(request: web.Request, turn: Turn, frames: Frames) -> web.StreamResponse:
    """Run ``turn`` as an event stream, each event written as ``frames`` makes it, a ping in
    quiet stretches, ``[DONE]`` at the end."""
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache, no-transform",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    writer = SseWriter(response)
    pinger = asyncio.create_task(_ping_every(writer, request.app[HUB].settings.ping_interval_s))
    try:
        async with contextlib.aclosing(run_turn(turn)) as events:
            async for event in events:
                await writer.send(frames.of(event))
    except ConnectionResetError:
        return response  # the client left; closing the turn above stopped the model
    except Exception as exc:  # the stream has begun: report in-band, then end it properly
        log.exception("chat stream failed")
        await writer.send(frames.of(error_event(f"internal error: {type(exc).__name__}")))
    finally:
        pinger.cancel()
    with contextlib.suppress(ConnectionResetError):
        await writer.send(frames.ending())
        await writer.done()
        await response.write_eof()
    return response


async def _ping_every(writer: SseWriter, interval: float) -> None:
    with contextlib.suppress(ConnectionResetError):
        while True:
            await asyncio.sleep(interval)
            await writer.ping()
