"""One chat turn: a fresh strands Agent per request, its events normalised for the SSE writer.

Nothing about the agent outlives the request (seed 000): the history arrives in the body. When
the consumer stops reading (the client went away), the agent is cancelled and its stream closed,
which closes the model's stream, so the model stops generating rather than finishing unseen.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.models import Model
from strands.types.content import ContentBlock, Message, Messages
from strands.types.exceptions import ContextWindowOverflowException, MaxTokensReachedException

from hub import contracts as c
from hub.agent.stream import Event, StreamNormaliser, error_event

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are tiny, a personal companion that runs on the user's own computer. "
    "Answer warmly, briefly and concretely. If you do not know something, say so."
)
EMPTY_REPLY = (
    "the model returned an empty reply: it produced no text and no tool call "
    "(its chat template may have failed, or it stopped at once)"
)

Role = Literal["user", "assistant", "system"]


@dataclass(frozen=True)
class ChatMessage:
    """One message of the request body, its content reduced to text blocks."""

    role: Role
    texts: tuple[str, ...]


@dataclass
class Turn:
    messages: Sequence[ChatMessage]
    model: Model
    model_id: str
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tools: list[Any] = field(default_factory=list)


def to_strands(messages: Sequence[ChatMessage]) -> tuple[str, Messages, list[ContentBlock]]:
    """Split the body into extra system text, history, and the prompt (the last user message)."""
    system = "\n\n".join("\n".join(m.texts) for m in messages if m.role == "system")
    dialogue = [m for m in messages if m.role != "system"]
    history: Messages = [
        Message(role=m.role, content=[ContentBlock(text=t) for t in m.texts])  # type: ignore[typeddict-item]
        for m in dialogue[:-1]
    ]
    prompt = [ContentBlock(text=t) for t in dialogue[-1].texts]
    return system, history, prompt


async def run_turn(turn: Turn) -> AsyncGenerator[Event, None]:
    extra_system, history, prompt = to_strands(turn.messages)
    system_prompt = "\n\n".join(p for p in (turn.system_prompt, extra_system) if p)
    agent = Agent(
        model=turn.model,
        messages=history,
        system_prompt=system_prompt,
        tools=turn.tools,
        callback_handler=None,
        conversation_manager=NullConversationManager(),
    )
    normaliser = StreamNormaliser(model_id=turn.model_id)
    finished = False
    try:
        stream = cast(AsyncGenerator[dict[str, Any], None], agent.stream_async(prompt))
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                for out in normaliser.feed(event):
                    yield out
        finished = True
    except MaxTokensReachedException:
        # The reply was cut at the token limit: what streamed stands, the stop reason says why.
        finished = True
        normaliser.stop_reason = "max_tokens"
        yield {"type": c.EV_AGENT_RESULT, "stopReason": "max_tokens"}
    except Exception as exc:
        log.warning("chat turn failed: %s", describe_failure(exc), exc_info=log.isEnabledFor(10))
        finished = True
        yield error_event(describe_failure(exc))
        return
    finally:
        if not finished:
            agent.cancel()
    if not normaliser.replied and normaliser.stop_reason != "cancelled":
        yield error_event(EMPTY_REPLY)


def describe_failure(exc: BaseException) -> str:
    """A sentence a person can act on; the exception's type only when nothing better exists."""
    if isinstance(exc, ContextWindowOverflowException):
        return "the conversation is too long for the model's context window"
    text = str(exc).strip() or type(exc).__name__
    if "connect" in text.lower() and "refused" in text.lower():
        return f"cannot reach the model: {text}"
    return f"model error: {text}"
