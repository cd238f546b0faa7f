"""retrieve and ask_tiny: the universe of public tinys, for the model (docs/protocol.md, universe);
and what every turn takes from it (docs/protocol.md, turn step 3 and 5).

A retrieved tiny contributes its skills as tools for the rest of the turn: they are registered
on the running strands agent, whose event loop reads its tool registry before every model call.
Like the mount list, a name already taken is never replaced, and tools the user turned off stay
off. ``ask_tiny`` runs a nested agent as the other tiny on the turn's own model; the nested agent
can ask further only to ``MAX_DEPTH``, so two tinys cannot ask each other forever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub import contracts as c
from hub.agent.prompt import system_prompt
from hub.agent.tools.context import STATE_KEY, ToolContext, failed, ok, turn_context
from hub.agent.tools.operations import tiny_operation_tools
from hub.agent.tools.skills import skill_tool
from hub.people.preferences import disabled_tools
from hub.runtime.hub import Hub
from hub.tinys import social
from hub.tinys.records import Tiny
from hub.tinys.universe import TOP_K, tiny_url

log = logging.getLogger(__name__)

# What one turn takes from the universe unasked: a few tinys, and only ones near the message
# (cosine distance with MiniLM; "what should I cook tonight?" is 0.58 from a cooking tiny,
# a greeting 0.8-0.95 from anything), so small talk does not fill the prompt with strangers.
RELATED_PER_TURN = 3
RELATED_MAX_DISTANCE = 0.75
# Tools a turn's related tinys, or one retrieve, may add: a small model drowns in hundreds.
MAX_ADDED_TOOLS = 24
# A turn waits this long for its related tinys' tools (their OpenAPI schemas may need a fetch;
# they are cached after): past it the turn goes on with their summaries and without the tools.
RELATED_TOOLS_WAIT_S = 3.0
# ask_tiny is on the turn's agent (depth 0) and on a nested agent at depth 1, not deeper.
MAX_DEPTH = 2
MAX_ANSWER_CHARS = 4000
DEPTH_KEY = "tiny_hub_ask_depth"

_background: set[asyncio.Task[None]] = set()


async def related_tools(hub: Hub, tiny: Tiny) -> list[AgentTool]:
    """What a tiny found in the universe lends a turn as tools: its skills, then its OpenAPI
    operations (none when its schema cannot be had; that is logged, never raised)."""
    skills = [skill_tool(tiny.name, skill) for skill in tiny.skills]
    return skills + await tiny_operation_tools(hub, tiny)


async def lent_tools(hub: Hub, tinys: Sequence[Tiny]) -> list[AgentTool]:
    """The tools ``tinys`` lend, fetched side by side, in the tinys' order."""
    found = await asyncio.gather(*(related_tools(hub, tiny) for tiny in tinys))
    return [candidate for tools in found for candidate in tools]


@dataclass(frozen=True)
class Related:
    """The related tinys of one turn (for the prompt) and the tools they lend (for the mount)."""

    tinys: tuple[Tiny, ...] = ()
    tools: tuple[AgentTool, ...] = ()


async def related_for_turn(hub: Hub, tiny: Tiny, message: str, *, with_tools: bool) -> Related:
    """The universe searched for this message, the tiny being talked to left out. Never
    raises: a universe that fails is logged and the turn goes on without it."""
    try:
        found = await asyncio.to_thread(
            hub.universe.search,
            message,
            RELATED_PER_TURN,
            exclude={tiny.name},
            max_distance=RELATED_MAX_DISTANCE,
        )
    except Exception:
        log.warning("universe search failed; answering without related tinys", exc_info=True)
        return Related()
    tinys = tuple(hit.tiny for hit in found)
    tools: list[AgentTool] = []
    if with_tools and tinys:
        try:
            tools = await asyncio.wait_for(lent_tools(hub, tinys), RELATED_TOOLS_WAIT_S)
        except Exception:
            log.warning("related tinys' tools not mounted: %s", ", ".join(t.name for t in tinys))
    return Related(tinys, tuple(tools[:MAX_ADDED_TOOLS]))


def mounted_related(ctx: ToolContext) -> list[AgentTool]:
    """The mount list's group for the turn's related tinys (after the tiny's own tools)."""
    return list(ctx.related)


def mount_on(agent: Any, tools: Sequence[AgentTool], off: Collection[str]) -> list[str]:
    """Register ``tools`` on a running strands agent; the names added. A name taken (strands
    also refuses one differing only by '-' and '_') or turned off by the user is skipped."""
    registry = getattr(agent, "tool_registry", None)
    if registry is None:
        return []
    taken = {name.replace("-", "_") for name in registry.registry}
    added: list[str] = []
    for candidate in tools:
        if len(added) == MAX_ADDED_TOOLS:
            break
        name = candidate.tool_name
        if name.replace("-", "_") in taken or (name in off and name not in c.PROTECTED_TOOLS):
            continue
        registry.register_tool(candidate)
        taken.add(name.replace("-", "_"))
        added.append(name)
    return added


def _described(tiny: Tiny, hub: Hub) -> dict[str, Any]:
    return {**tiny.summary(), "url": tiny_url(tiny.name, hub.lan.url)}


@tool(name="retrieve", context=True)
async def retrieve(query: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Search the universe of public tinys for ones that can help with something. Their
    skills become tools you can call for the rest of this turn; ask_tiny talks to one.

    Args:
        query: what you are looking for, in a few words.
    """
    ctx = turn_context(tool_context)
    if not query.strip():
        return failed("say what to look for")
    try:
        found = await asyncio.to_thread(
            ctx.hub.universe.search, query, TOP_K, exclude={ctx.tiny.name}
        )
    except Exception:
        log.warning("retrieve: the universe failed", exc_info=True)
        return failed("the universe cannot be searched right now; try again later")
    if not found:
        return ok("No public tiny matches that.", tinys=[], tools=[])
    lent = await lent_tools(ctx.hub, [hit.tiny for hit in found])
    added = mount_on(tool_context.agent, lent, disabled_tools(ctx.hub.db, ctx.caller))
    names = ", ".join(hit.tiny.name for hit in found)
    tools_note = f" Tools you can call now: {', '.join(added)}." if added else ""
    return ok(
        f"{len(found)} tiny(s), best first: {names}.{tools_note} Ask any of them with ask_tiny.",
        tinys=[_described(hit.tiny, ctx.hub) for hit in found],
        tools=added,
    )


@tool(name="ask_tiny", context=True)
async def ask_tiny(name: str, message: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Talk to another tiny: it answers your message with its own prompt, knowledge and data.

    Args:
        name: the tiny to ask.
        message: what to ask or tell it, self-contained (it does not see this conversation).
    """
    ctx = turn_context(tool_context)
    depth = int(tool_context.invocation_state.get(DEPTH_KEY, 0))
    if depth >= MAX_DEPTH:
        return failed(f"tinys may ask each other only {MAX_DEPTH} deep; answer yourself")
    store = ctx.hub.tinys
    asked = store.get(name.strip().lower())
    if asked is None:
        return failed(f"no tiny named {name}")
    if not store.can_read(asked, ctx.caller, None):
        return failed(f"{asked.name} is private: only its owner may ask it")
    if not message.strip():
        return failed("say what to ask")
    model = getattr(tool_context.agent, "model", None) or ctx.model
    if model is None:
        return failed("no model to answer with")
    # ask_tiny first: a skill of the same name must not take its place (first name wins).
    tools: list[AgentTool] = [ask_tiny] if depth + 1 < MAX_DEPTH else []
    tools += await related_tools(ctx.hub, asked)
    nested = Agent(
        model=model,
        system_prompt=system_prompt(asked),
        tools=list[Any](_unique(tools)),
        callback_handler=None,
        conversation_manager=NullConversationManager(),
    )
    as_asked = dataclasses.replace(ctx, tiny=asked, model=model, related=(), operations=())
    state = {STATE_KEY: as_asked, DEPTH_KEY: depth + 1}
    try:
        result = await nested.invoke_async(message, invocation_state=state)
    except Exception as exc:
        log.warning("ask_tiny: %s could not answer", asked.name, exc_info=True)
        return failed(f"{asked.name} could not answer: {exc}")
    reply = str(result).strip()[:MAX_ANSWER_CHARS]
    if not reply:
        return failed(f"{asked.name} gave no answer")
    if ctx.tiny.name not in (c.DEFAULT_TINY, asked.name):
        _record_later(ctx.hub, ctx.tiny.name, asked.name)
    return ok(f"{asked.name} says: {reply}", tiny=asked.name, answer=reply)


def _unique(tools: Sequence[AgentTool]) -> list[AgentTool]:
    """First of each name (strands refuses a duplicate, also one differing by '-' and '_')."""
    seen: set[str] = set()
    kept = []
    for candidate in tools:
        key = candidate.tool_name.replace("-", "_")
        if key not in seen:
            seen.add(key)
            kept.append(candidate)
    return kept


def _record_later(hub: Hub, asker: str, asked: str) -> None:
    """The consulted edge, fire-and-forget: it neither delays the answer nor fails it."""

    async def record() -> None:
        try:
            await asyncio.to_thread(social.record_consulted, hub.db, asker, asked)
        except Exception:
            log.warning("could not record that %s consulted %s", asker, asked, exc_info=True)

    task = asyncio.get_running_loop().create_task(record(), name="tiny-hub consulted edge")
    _background.add(task)
    task.add_done_callback(_background.discard)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [retrieve, ask_tiny]


hinted("universe", retrieve, ask_tiny)
