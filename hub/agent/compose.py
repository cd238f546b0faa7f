"""Everything a turn needs, gathered once: the tiny, the model, the memory pre-load, the tools.

The SSE route and the one-shot answers (a device's ``ask``, the hub's own endpoint ``/api/chat
{prompt}``) compose their turns here, so all of them follow seed 000's steps the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from hub import contracts as c
from hub.agent.prompt import system_prompt
from hub.agent.tools import mount_tools
from hub.agent.tools.context import STATE_KEY, ToolContext
from hub.agent.turn import ChatMessage, Turn, run_turn
from hub.identity import User
from hub.memory.graph import Fact
from hub.preferences import saved_model
from hub.runtime import Hub

log = logging.getLogger(__name__)


class AnswerFailed(Exception):
    """A one-shot answer ended in an error and said nothing."""


async def compose_turn(
    hub: Hub, user: User | None, messages: Sequence[ChatMessage], headers: Mapping[str, str]
) -> Turn:
    """Raises TinyError (no such tiny, or private) and ModelUnavailable before anything runs."""
    tiny = hub.tinys.resolve(
        headers.get(c.H_NAME, "").strip() or c.DEFAULT_TINY, user, headers.get(c.H_KEY)
    )
    choice = await hub.models.resolve(headers, saved_model(hub.db, user))
    model = hub.models.build(choice)
    memory = await preload(hub, user, messages)
    context = ToolContext(hub, user, tiny, headers.get(c.H_SESSION, ""))
    return Turn(
        messages=messages,
        model=model,
        model_id=choice.model_id,
        system_prompt=system_prompt(
            tiny,
            override=headers.get(c.H_SYSTEM_PROMPT, ""),
            metadata=headers.get(c.H_METADATA) or headers.get(c.H_IP_LEGACY) or "",
            memory=memory,
        ),
        tools=mount_tools(context).tools if choice.tools else [],
        invocation_state={STATE_KEY: context},
    )


async def preload(hub: Hub, user: User | None, messages: Sequence[ChatMessage]) -> list[Fact]:
    """The caller's newest facts and the best matches for what they just said (seed 000, 3)."""
    if user is None:
        return []
    last = next(m for m in reversed(messages) if m.role == "user")
    try:
        return await asyncio.to_thread(hub.memory.preload, user.id, "\n".join(last.texts))
    except Exception:
        log.warning("memory pre-load failed; answering without it", exc_info=True)
        return []


async def answer(
    hub: Hub, user: User, prompt: str, headers: Mapping[str, str] | None = None
) -> str:
    """One turn, its text collected: for callers that want a reply, not a stream."""
    turn = await compose_turn(hub, user, [ChatMessage("user", (prompt,))], headers or {})
    text, errors = [], []
    async for event in run_turn(turn):
        text.append(event.get(c.DELTA_TEXT, "") if event["type"] == c.EV_BLOCK_DELTA else "")
        if event["type"] == c.EV_ERROR:
            errors.append(str(event["error"]))
    reply = "".join(text).strip()
    if not reply and errors:
        raise AnswerFailed(errors[-1])
    return reply
