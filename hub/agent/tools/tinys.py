"""create_ai, modify_ai, get_tiny, list_tiny: the tiny records, for the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.people.identity import User
from hub.tinys.records import Tiny, TinyError, TinyStore, clamp_limit


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    """The tiny fields a tool call set (a field left out is None; the context is no field)."""
    return {k: v for k, v in arguments.items() if v is not None and k != "tool_context"}


def _write(
    tool_context: StrandsToolContext,
    done: str,
    key_is: str,
    change: Callable[[TinyStore, User], tuple[Tiny, str | None]],
) -> dict[str, Any]:
    """Create or change a tiny as the caller; what was done, with a private tiny's key (shown
    once), or the store's reason it was refused."""
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    try:
        tiny, key = change(ctx.hub.tinys, ctx.caller)
    except TinyError as exc:
        return failed(str(exc))
    note = f" Its {key_is} (shown once): {key}" if key else ""
    return ok(f"{done} {tiny.name}.{note}", tiny=tiny.summary())


@tool(name="create_ai", context=True)
def create_ai(
    name: str,
    systemPrompt: str,
    tool_context: StrandsToolContext,
    systemKnowledge: str | None = None,
    data: str | None = None,
    worker: str | None = None,
    hook: str | None = None,
    hero: str | None = None,
    logo: str | None = None,
    theme: str | None = None,
    tagline: str | None = None,
    chips: list[str] | None = None,
    intro_vibe: str | None = None,
    visibility: str | None = None,
) -> dict[str, Any]:
    """Make a new tiny (a companion with its own prompt) owned by the user.

    Args:
        name: 2-40 lowercase letters, digits or '-'.
        systemPrompt: who the tiny is and how it answers.
        systemKnowledge: background facts it always knows.
        data: reference data it can quote.
        worker: an OpenAPI URL whose operations become its tools.
        hook: a one-line opener.
        hero: an image URL for its page.
        logo: a logo URL.
        theme: a theme preset or colours.
        tagline: a short description.
        chips: starter messages (empty restores the defaults).
        intro_vibe: the mood of its first message.
        visibility: public (default) or private.
    """
    fields = _given(dict(locals()))  # first, while the locals are only the arguments
    return _write(tool_context, "Created", "key", lambda store, owner: store.create(owner, fields))


@tool(name="modify_ai", context=True)
def modify_ai(
    name: str,
    tool_context: StrandsToolContext,
    systemPrompt: str | None = None,
    systemKnowledge: str | None = None,
    data: str | None = None,
    worker: str | None = None,
    hook: str | None = None,
    hero: str | None = None,
    logo: str | None = None,
    theme: str | None = None,
    tagline: str | None = None,
    chips: list[str] | None = None,
    intro_vibe: str | None = None,
    visibility: str | None = None,
) -> dict[str, Any]:
    """Change a tiny the user owns. Empty strings clear media and theme; an empty chips
    list restores the default chips. Fields left out stay as they are.

    Args:
        name: the tiny to change.
        systemPrompt: new prompt.
        systemKnowledge: new background facts.
        data: new reference data.
        worker: new OpenAPI URL ('' removes it).
        hook: new opener.
        hero: new image URL ('' clears it).
        logo: new logo URL ('' clears it).
        theme: new theme ('' restores the default).
        tagline: new tagline.
        chips: new starter messages ([] restores the defaults).
        intro_vibe: new mood.
        visibility: public or private.
    """
    fields = _given(dict(locals()))  # first, while the locals are only the arguments
    del fields["name"]
    return _write(
        tool_context, "Updated", "new key", lambda store, user: store.modify(user, name, fields)
    )


@tool(name="get_tiny", context=True)
def get_tiny(name: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Read a tiny by name: its prompt, knowledge, data, skills and looks.

    Args:
        name: the tiny's name.
    """
    ctx = turn_context(tool_context)
    store = ctx.hub.tinys
    tiny = store.get(name)
    if tiny is None or not store.can_read(tiny, ctx.caller, None):
        return failed(f"no tiny named {name}")
    return ok(f"{tiny.name}: {tiny.tagline or tiny.system_prompt[:120]}", tiny=tiny.public_dict())


@tool(name="list_tiny", context=True)
def list_tiny(
    tool_context: StrandsToolContext,
    query: str = "",
    mine: bool = False,
    limit: int = 20,
    offset: int = 0,
) -> dict[str, Any]:
    """List tinys: public ones and the user's own, newest first.

    Args:
        query: only tinys whose name, tagline or prompt contains this.
        mine: only the user's own tinys.
        limit: how many, 1-50.
        offset: how many to skip, for the next page.
    """
    ctx = turn_context(tool_context)
    store = ctx.hub.tinys
    items, total = store.list(
        ctx.caller, query=query, mine=mine, limit=clamp_limit(limit), offset=max(0, offset)
    )
    names = ", ".join(t.name for t in items) or "none"
    return ok(
        f"{total} tiny(s); this page: {names}.", total=total, tinys=[t.summary() for t in items]
    )


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [create_ai, modify_ai, get_tiny, list_tiny]


# A new tiny gets a name, a prompt and a tagline from a small model; the rest it made up (the
# 1.5B filled all eleven: example.com URLs for data, worker, hero and logo, "public"), and each
# took seconds to decode. The person sets them by hand (the TUI's tiny form, or PATCH
# /api/tinys).
hinted(
    "tinys",
    create_ai,
    withheld=frozenset(
        {"systemKnowledge", "data", "worker", "hook", "hero", "logo", "theme", "chips"}
        | {"intro_vibe", "visibility"}
    ),
)
hinted("tinys", modify_ai, get_tiny, list_tiny)
