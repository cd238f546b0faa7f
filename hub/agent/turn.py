"""One chat turn: a fresh strands Agent per request, its events normalised for the SSE writer.

Nothing about the agent outlives the request (docs/protocol.md): the history arrives in the body.
Tool-call hooks and the agent's stream are merged into one queue in the order they happen, so a
tool card can show "running" while the tool runs. When the consumer stops reading (the client
went away), the task that drives the agent is cancelled: the cancellation lands inside the
model provider's HTTP read and closes that stream, so the model stops generating — also while
it is still evaluating the prompt and has sent nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import re
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from strands import Agent
from strands.agent.conversation_manager import NullConversationManager
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models import Model
from strands.types.content import ContentBlock, Message, Messages
from strands.types.exceptions import ContextWindowOverflowException, MaxTokensReachedException
from strands.types.tools import AgentTool

from hub import contracts as c
from hub.agent.attachments import Attachment
from hub.agent.mcp import McpPlan, mcp_session, notice_event
from hub.agent.stream import Event, StreamNormaliser, error_event
from hub.agent.tool_configs import keep_tool_configs
from hub.agent.tool_results import outgoing_result

log = logging.getLogger(__name__)

MIN_HISTORY_TO_COMPACT = 4
EMPTY_REPLY = (
    "the model returned an empty reply: it produced no text and no tool call "
    "(its chat template may have failed, or it stopped at once)"
)
TOO_LONG = "the conversation is too long for the model's context window"
# The contract's maxDuration: a turn that runs longer ends with an error event.
DEFAULT_TIME_LIMIT_S = 300.0

Role = Literal["user", "assistant", "system"]


@dataclass(frozen=True)
class ToolCall:
    """A call the model made in an earlier request, in the history the client sends back: of
    a tool the client runs itself (an OpenAI client's ``tool_calls``), or of the hub's own (a
    ``toolUse`` block the client recorded from the stream, hub/agent/tool_blocks.py)."""

    id: str
    name: str
    input: Any


@dataclass(frozen=True)
class ToolAnswer:
    """What the tool answered to the call ``id``: its text, and whether it failed."""

    id: str
    text: str
    status: Literal["success", "error"] = "success"


@dataclass(frozen=True)
class ChatMessage:
    """One message of the request body: its text blocks, and its images and audio
    (agent/attachments.py takes those in before the turn: only images reach the model); an
    assistant message may carry tool calls, a user one their answers."""

    role: Role
    texts: tuple[str, ...]
    attachments: tuple[Attachment, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_answers: tuple[ToolAnswer, ...] = ()

    def content(self) -> list[ContentBlock]:
        # The answers first: they finish what the message before asked, and the words that
        # follow them are the person's next turn.
        blocks = [_result_block(answer) for answer in self.tool_answers]
        blocks += [ContentBlock(text=t) for t in self.texts]
        for image in (a for a in self.attachments if a.kind == "image"):
            source: Any = {"bytes": image.data}
            blocks.append(ContentBlock(image={"format": image.image_format, "source": source}))  # type: ignore[typeddict-item]
        for call in self.tool_calls:
            use: Any = {"toolUseId": call.id, "name": call.name, "input": call.input}
            blocks.append(ContentBlock(toolUse=use))
        return blocks


def _result_block(answer: ToolAnswer) -> ContentBlock:
    result: Any = {
        "toolUseId": answer.id,
        "status": answer.status,
        "content": [{"text": answer.text}],
    }
    return ContentBlock(toolResult=result)


@dataclass
class Turn:
    messages: Sequence[ChatMessage]
    model: Model
    model_id: str
    system_prompt: str
    tools: list[AgentTool] = field(default_factory=list)
    # Handed to every tool through strands' invocation state (see agent/tools/context.py).
    invocation_state: dict[str, Any] = field(default_factory=dict)
    # MCP servers, started when the turn starts and stopped when it ends (agent/mcp.py).
    mcp: McpPlan | None = None
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    # Said to the person when the turn starts (an image the model cannot see, say).
    notices: tuple[str, ...] = ()
    # Tools the client runs itself (an OpenAI client's ``tools``), offered beside the hub's; a
    # hub tool of the same name steps aside for the turn, so the client gets the calls it asked
    # for. Calling one ends the turn (see hub/openai_compat/client_tools.py).
    client_tools: tuple[AgentTool, ...] = ()
    # Called with the names of the tools that ran once the turn has ended whole (not when it
    # failed or the client left): work that follows a reply and must never delay it.
    after: Callable[[Sequence[str]], None] | None = None


def to_strands(messages: Sequence[ChatMessage]) -> tuple[str, Messages, list[ContentBlock]]:
    """Split the body into extra system text, history, and the prompt (the last user message).
    A body that ends with the answers of client tools is all history, and the prompt empty: the
    model goes on from those answers (strands would otherwise answer the calls itself)."""
    system = "\n\n".join("\n".join(m.texts) for m in messages if m.role == "system")
    dialogue = [m for m in messages if m.role != "system"]
    ends_with_answers = bool(dialogue[-1].tool_answers)
    history: Messages = [
        Message(role=m.role, content=m.content())  # type: ignore[typeddict-item]
        for m in (dialogue if ends_with_answers else dialogue[:-1])
    ]
    prompt = [] if ends_with_answers else dialogue[-1].content()
    return system, history, prompt


def compact(history: Messages) -> tuple[int, Messages]:
    """Drop the older half; the kept part starts with a user message, as providers require, and
    not with the answer to a tool call it dropped."""
    kept = history[len(history) // 2 :]
    while kept and (
        kept[0]["role"] != "user" or any("toolResult" in block for block in kept[0]["content"])
    ):
        kept = kept[1:]
    return len(history) - len(kept), kept


def time_limit_message(limit_s: float) -> str:
    return f"turn took longer than {limit_s:g} s"


async def run_turn(turn: Turn) -> AsyncGenerator[Event, None]:
    """The turn's events, ending with an error event once ``turn.time_limit_s`` has passed
    (the model and its tools are cancelled then). Its MCP clients live exactly as long as this
    generator: a server that cannot start is a notice, and closing the generator (the client
    left) stops them."""
    deadline = asyncio.get_running_loop().time() + turn.time_limit_s
    ran: list[str] = []
    failed = False
    async with contextlib.aclosing(_with_mcp(turn)) as events:
        while True:
            limit = asyncio.timeout_at(deadline)
            try:
                async with limit:
                    event = await anext(events)
            except StopAsyncIteration:
                if turn.after is not None and not failed:
                    turn.after(tuple(ran))
                return
            except TimeoutError:
                if not limit.expired():
                    raise
                log.warning("chat turn stopped: %s", time_limit_message(turn.time_limit_s))
                yield error_event(time_limit_message(turn.time_limit_s))
                return
            if event["type"] == c.EV_BEFORE_TOOL:
                ran.append(str(event["toolCall"]["name"]))
            failed = failed or event["type"] == c.EV_ERROR
            yield event


async def _with_mcp(turn: Turn) -> AsyncGenerator[Event, None]:
    async with mcp_session(turn.mcp) as mcp:
        for notice in (*turn.notices, *mcp.notices):
            yield notice_event(notice)
        if mcp.tools or turn.client_tools:
            turn = dataclasses.replace(turn, tools=offered_tools(turn, mcp.tools))
        async for event in _run(turn):
            yield event


def offered_tools(turn: Turn, mcp_tools: Sequence[AgentTool] = ()) -> list[AgentTool]:
    """The hub's tools, the turn's MCP servers' and the client's, without a name twice: the
    client's own take the place of any hub tool of their name (to strands, a name that differs
    only by '-' and '_' is the same one)."""
    taken = {_name_key(tool.tool_name) for tool in turn.client_tools}
    hub_side = [t for t in (*turn.tools, *mcp_tools) if _name_key(t.tool_name) not in taken]
    return [*hub_side, *turn.client_tools]


def _name_key(name: str) -> str:
    return name.replace("-", "_")


async def _run(turn: Turn) -> AsyncGenerator[Event, None]:
    extra_system, history, prompt = to_strands(turn.messages)
    system_prompt = "\n\n".join(p for p in (turn.system_prompt, extra_system) if p)
    normaliser = StreamNormaliser(model_id=turn.model_id)
    compacted = False
    while True:
        try:
            async for event in _attempt(turn, system_prompt, history, prompt, normaliser):
                yield event
        except ContextWindowOverflowException:
            if compacted or len(history) < MIN_HISTORY_TO_COMPACT:
                yield error_event(TOO_LONG)
                return
            dropped, history = compact(history)
            compacted = True
            log.info("context overflow: dropped %d older messages and retried", dropped)
            yield {"type": c.EV_CONTEXT_COMPACTED, "dropped": dropped}
            continue
        except MaxTokensReachedException:
            # The reply was cut at the token limit: what streamed stands, the stop reason says why.
            normaliser.stop_reason = "max_tokens"
            yield {"type": c.EV_AGENT_RESULT, "stopReason": "max_tokens"}
        except Exception as exc:
            log.warning(
                "chat turn failed: %s", describe_failure(exc), exc_info=log.isEnabledFor(10)
            )
            yield error_event(describe_failure(exc))
            return
        break
    if not normaliser.replied and normaliser.stop_reason != "cancelled":
        yield error_event(EMPTY_REPLY)


class _ToolCallHooks(HookProvider):
    """Before/after tool-call hooks → the turn's event queue (strands streams neither)."""

    def __init__(self, queue: asyncio.Queue[tuple[str, Any]], normaliser: StreamNormaliser):
        self._queue, self._normaliser = queue, normaliser

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self._before)
        registry.add_callback(AfterToolCallEvent, self._after)

    def _before(self, event: BeforeToolCallEvent) -> None:
        self._queue.put_nowait(("event", self._normaliser.before_tool(event.tool_use)))

    def _after(self, event: AfterToolCallEvent) -> None:
        event.result = outgoing_result(event.result)  # to the model and the stream alike
        out = self._normaliser.after_tool(event.tool_use, event.result, event.exception)
        self._queue.put_nowait(("event", out))


async def _attempt(
    turn: Turn,
    system_prompt: str,
    history: Messages,
    prompt: list[ContentBlock],
    normaliser: StreamNormaliser,
) -> AsyncGenerator[Event, None]:
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    agent = Agent(
        model=turn.model,
        messages=copy.deepcopy(history),
        system_prompt=system_prompt,
        tools=list(turn.tools),
        callback_handler=None,
        conversation_manager=NullConversationManager(),
        hooks=[_ToolCallHooks(queue, normaliser)],
    )
    keep_tool_configs(agent.tool_registry)

    async def drive() -> None:
        try:
            stream = cast(
                AsyncGenerator[dict[str, Any], None],
                agent.stream_async(prompt, invocation_state=dict(turn.invocation_state)),
            )
            async with contextlib.aclosing(stream) as events:
                async for raw in events:
                    queue.put_nowait(("raw", raw))
        except Exception as exc:
            queue.put_nowait(("raise", exc))
        else:
            queue.put_nowait(("end", None))

    driver = asyncio.create_task(drive(), name="tiny-hub turn")
    try:
        while True:
            kind, value = await queue.get()
            if kind == "end":
                return
            if kind == "raise":
                raise value
            if kind == "event":
                yield value
            else:
                for event in normaliser.feed(value):
                    yield event
    finally:
        if not driver.done():
            agent.cancel()
            driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await driver


def describe_failure(exc: BaseException) -> str:
    """A sentence a person can act on; the exception's type only when nothing better exists."""
    text = re.sub(r"\s*\(status code: -?\d+\)$", "", str(exc).strip()) or type(exc).__name__
    if text == "Connection error." and exc.__cause__ is not None:  # the OpenAI SDK's words
        text = f"cannot connect: {exc.__cause__}"
    if "connect" in text.lower() and "refused" in text.lower():
        return f"cannot reach the model: {text}"
    return f"model error: {text}"
