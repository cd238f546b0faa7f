"""Everything a turn needs, gathered once: the tiny, the model, the memory pre-load, the tools.

The SSE route and the one-shot answers (a device's ``ask``, the hub's own endpoint ``/api/chat
{prompt}``) compose their turns here, so all of them follow the steps of docs/protocol.md the same
way.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from strands.models import Model
from strands.types.tools import AgentTool

from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.attachments import Attachment, take_in
from hub.agent.embedded import EmbeddedModel, cached_embed
from hub.agent.listening import Listener, listen_after
from hub.agent.mcp import plan_for_turn
from hub.agent.models import ModelChoice
from hub.agent.prompt import lasting_prompt, system_prompt, turn_sections
from hub.agent.sampling import Sampling, apply_sampling
from hub.agent.small.context import SmallTurn, declared_hints
from hub.agent.tools import DEVICE_GROUPS, JOB_GROUPS, mount_tools
from hub.agent.tools.client_caps import client_caps
from hub.agent.tools.context import STATE_KEY, ToolContext
from hub.agent.tools.operations import tiny_operation_tools
from hub.agent.tools.universe import related_for_turn
from hub.agent.turn import ChatMessage, Turn, run_turn
from hub.agent.without_tools import (
    SaidModel,
    cannot_text,
    specs_of,
    unmet_request,
    ways_to_tools,
)
from hub.memory.graph import Fact
from hub.memory.model import stamp_of
from hub.people.identity import User
from hub.people.preferences import saved_model
from hub.runtime.hub import Hub
from hub.tinys.records import Tiny

log = logging.getLogger(__name__)

# A fact learned this long ago or less is left out of a small model's lasting facts: the
# conversation it was learned in says it.
RECENT_S = 3600.0


class AnswerFailed(Exception):
    """A one-shot answer ended in an error and said nothing."""


async def compose_turn(
    hub: Hub,
    user: User | None,
    messages: Sequence[ChatMessage],
    headers: Mapping[str, str],
    *,
    client_tools: Sequence[AgentTool] = (),
    sampling: Sampling | None = None,
    app_tools: bool = True,
) -> Turn:
    """Raises TinyError (no such tiny, or private), ClientHeaderInvalid and ModelUnavailable
    before anything runs. ``client_tools``: tools the client runs itself, offered when the
    model can call tools; ``sampling``: the request's temperature, token limit and stops;
    ``app_tools``: False for a client that carries out none of the hub's app tools."""
    client = replace(client_caps(headers), app_tools=app_tools)
    tiny = hub.tinys.resolve(
        headers.get(c.H_NAME, "").strip() or c.DEFAULT_TINY, user, headers.get(c.H_KEY)
    )
    choice = await hub.models.resolve(headers, saved_model(hub.db, user))
    model = hub.models.build(choice)
    if sampling is not None:
        apply_sampling(model, sampling)
    messages, notices = await _taken_in(hub, messages, choice)
    (newest, matches), related, operations = await asyncio.gather(
        preload(hub, user, messages),
        related_for_turn(hub, tiny, _last_user_text(messages), with_tools=choice.tools),
        _operation_tools(hub, tiny, wanted=choice.tools),
    )
    context = ToolContext(
        hub,
        user,
        tiny,
        headers.get(c.H_SESSION, ""),
        related=related.tools,
        operations=tuple(operations),
        model=model,
        client=client,
    )
    mounted = mount_tools(context) if choice.tools else None
    if not choice.tools:
        model = await said_instead(context, choice, _last_user_text(messages)) or model
    override = headers.get(c.H_SYSTEM_PROMPT, "")
    metadata = headers.get(c.H_METADATA) or headers.get(c.H_IP_LEGACY) or ""
    hub_url = hub.lan.url or ""
    after = None
    if isinstance(model, EmbeddedModel):
        # The runner keeps what it read: the tiny's lasting prompt leads, this turn's sections
        # follow the tools (see hub.agent.small.history), so the next turn does not read them
        # again.
        model = model.for_turn(
            SmallTurn(
                remembered=tuple(newest),
                recent_since=recent_since(),
                matched=tuple(matches),
                note=turn_sections(metadata=metadata, related=related.tinys, hub_url=hub_url),
                hints=declared_hints(mounted.tools) if mounted else {},
            )
        )
        context = replace(context, model=model)
        prompt = lasting_prompt(tiny, override=override)
        after = listening(hub, user, messages) if choice.tools else None
    else:
        prompt = system_prompt(
            tiny,
            override=override,
            metadata=metadata,
            memory=newest + matches,
            related=related.tinys,
            hub_url=hub_url,
        )
    return Turn(
        messages=messages,
        model=model,
        model_id=choice.model_id,
        system_prompt=prompt,
        tools=mounted.tools if mounted else [],
        invocation_state={STATE_KEY: context},
        mcp=plan_for_turn(hub, user, headers, mounted, tiny.mcp_servers) if mounted else None,
        time_limit_s=hub.settings.turn_timeout_s,
        notices=notices,
        client_tools=tuple(client_tools) if choice.tools else (),
        after=after,
    )


def listening(
    hub: Hub, user: User | None, messages: Sequence[ChatMessage]
) -> Callable[[Sequence[str]], None] | None:
    """What follows a reply on the embedded model: memory that listens to what the person said
    (``hub/agent/listening.py``), unless the message asks or a tool served it: a memory write
    kept what it stated, and a request a tool did (a reminder, a device's reading) states
    nothing to keep ("each morning at 7 remind me to stretch" was kept as a fact about them)."""
    said = _last_user_text(messages).strip()
    if user is None or not hub.settings.memory_listen or not said or said.endswith("?"):
        return None
    listener = Listener(hub.models.embedded_runner(), hub.memory, hub.devices.events.publish)
    owner = user.id

    def after(ran: Sequence[str]) -> None:
        if not ran:
            listen_after(listener, owner, said)

    return after


async def said_instead(ctx: ToolContext, choice: ModelChoice, message: str) -> Model | None:
    """For a model without tools asked for what only a tool does: the plain reply that says
    so (see ``without_tools``), in place of a guess."""
    devices = mount_tools(ctx, DEVICE_GROUPS).tools
    jobs = mount_tools(ctx, JOB_GROUPS).tools
    unmet = await asyncio.to_thread(
        unmet_request, message, specs_of(devices), specs_of(jobs), cached_embed
    )
    if unmet is None:
        return None
    installed = bundled_models.installed(bundled_models.QWEN_CODER_1_5B)
    ways = ways_to_tools(choice.provider, installed and choice.provider == c.PROVIDER_EMBEDDED)
    return SaidModel(cannot_text(unmet, choice.model_id, ways), choice.model_id)


async def _taken_in(
    hub: Hub, messages: Sequence[ChatMessage], choice: ModelChoice
) -> tuple[list[ChatMessage], tuple[str, ...]]:
    """The messages with their audio transcribed and their images kept for a model that sees
    (described for one that does not), and what the person is told about it."""
    taken: list[ChatMessage] = []
    notices: list[str] = []
    for message in messages:
        if not message.attachments:
            taken.append(message)
            continue
        got = await take_in(
            hub.speech,
            message.texts,
            message.attachments,
            sees=choice.vision,
            model_id=choice.model_id,
        )
        taken.append(replace(message, texts=got.texts, attachments=got.images))
        notices += got.notices
    return taken, tuple(notices)


def _last_user_text(messages: Sequence[ChatMessage]) -> str:
    """What the person said last (a message that only answers client tools says nothing)."""
    return next(
        ("\n".join(m.texts) for m in reversed(messages) if m.role == "user" and m.texts), ""
    )


async def _operation_tools(hub: Hub, tiny: Tiny, *, wanted: bool) -> list[AgentTool]:
    """The tiny's OpenAPI operations, fetched only for a model that can call tools."""
    return await tiny_operation_tools(hub, tiny) if wanted and tiny.worker.strip() else []


def recent_since() -> str:
    """Since when a fact is recent (see ``SmallTurn.recent_since``)."""
    return stamp_of(datetime.now(UTC) - timedelta(seconds=RECENT_S))


async def preload(
    hub: Hub, user: User | None, messages: Sequence[ChatMessage]
) -> tuple[list[Fact], list[Fact]]:
    """The caller's newest facts and the best matches for what they just said that are not
    among them (docs/protocol.md, turn step 3)."""
    if user is None:
        return [], []
    try:
        return await asyncio.to_thread(hub.memory.preload_parts, user.id, _last_user_text(messages))
    except Exception:
        log.warning("memory pre-load failed; answering without it", exc_info=True)
        return [], []


async def answer(
    hub: Hub, user: User, prompt: str, headers: Mapping[str, str] | None = None
) -> str:
    """One turn, its text collected: for callers that want a reply, not a stream."""
    return (await answer_with_images(hub, user, prompt, headers)).text


@dataclass(frozen=True)
class Picture:
    """An image a tool showed the model during a turn (a camera photo), as the tool made it."""

    data: bytes
    format: str  # jpeg, png, webp, gif: strands' image block format


@dataclass(frozen=True)
class Answer:
    text: str
    images: tuple[Picture, ...] = ()
    notices: tuple[str, ...] = ()  # what the turn told the person (an image it could not see)


async def answer_with_images(
    hub: Hub,
    user: User,
    prompt: str,
    headers: Mapping[str, str] | None = None,
    attachments: Sequence[Attachment] = (),
) -> Answer:
    """One turn, its text and the pictures its tools produced: a caller that passes the answer
    on (the cloud's ``invoke`` reply) can show what the agent saw, not only what it said.
    ``attachments``: images (and audio) that go with the prompt."""
    asked = ChatMessage("user", (prompt,), tuple(attachments))
    turn = await compose_turn(hub, user, [asked], headers or {})
    text, errors, images, notices = [], [], [], []
    async for event in run_turn(turn):
        text.append(event.get(c.DELTA_TEXT, "") if event["type"] == c.EV_BLOCK_DELTA else "")
        if event["type"] == c.EV_AFTER_TOOL:
            images.extend(_pictures(event["toolResult"]))
        if event["type"] == c.EV_ERROR:
            errors.append(str(event["error"]))
        if event["type"] == c.EV_NOTICE:
            notices.append(str(event["message"]))
    reply = "".join(text).strip()
    if not reply and errors:
        raise AnswerFailed(errors[-1])
    return Answer(reply, tuple(images), tuple(notices))


def _pictures(result: Mapping[str, Any]) -> list[Picture]:
    """The image blocks of a successful tool result (the stream carries them as base64)."""
    if result.get("status") != "success":
        return []
    found = []
    for block in result.get("content") or []:
        image = block.get("image") if isinstance(block, dict) else None
        if isinstance(image, dict) and isinstance(image.get("base64"), str):
            found.append(Picture(base64.b64decode(image["base64"]), str(image.get("format"))))
    return found
