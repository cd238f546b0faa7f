"""create_tool, remove_tool, install_tool, marketplace, and each person's forged tools (my_*).

A forged tool is one JavaScript arrow function a person made (or installed) that their turns
mount as ``my_<name>`` in the forged tier, after the built-ins. It runs in the hub's V8 sandbox
(``hub.forge.sandbox``), so whatever it does wrong (a throw, a loop, a blown memory limit, a
crash of the engine) is a tool error the model reads, never a failure of the hub. All four
tools are account tools: forged tools belong to a person. ``remove_tool`` only proposes the
deletion; the person confirms it in their app (``hub.agent.tools.confirming``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.confirming import proposed
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.confirmations.actions import REMOVE_TOOL
from hub.confirmations.store import Item
from hub.core.text_tools import text_tool
from hub.forge import github
from hub.forge.keeping import SAVED, install_pinned, keep_checked, ran, taken
from hub.forge.sandbox import Sandbox
from hub.forge.store import ForgedDraft, ForgedTool, ForgeRefused, ForgeStore
from hub.people.identity import User


async def _save(ctx: ToolContext, user: User, draft: ForgedDraft, **origin: Any) -> dict[str, Any]:
    """Check `draft`'s code in the sandbox, then keep it as the person's tool."""
    return await _kept(keep_checked(ctx.hub, user, draft, **origin))


async def _kept(keeping: Awaitable[ForgedTool]) -> dict[str, Any]:
    try:
        saved = await keeping
    except ForgeRefused as exc:
        return failed(str(exc))
    return ok(f"Saved {saved.tool_name}; {SAVED}", tool=saved.as_json())


@tool(name="create_tool", context=True)
async def create_tool(
    name: str,
    description: str,
    code: str,
    tool_context: StrandsToolContext,
    input_schema: dict[str, Any] | str | None = None,
) -> dict[str, Any]:
    """Forge a personal tool from one JavaScript arrow function, callable as my_<name> from the
    next message. The function gets the input object and returns JSON (it may be async and may
    use fetch on public HTTPS hosts). No require, process, eval or globalThis.

    Args:
        name: lowercase letters, digits and _, e.g. "word_count" (becomes my_word_count).
        description: what the tool does, for the model that will call it.
        code: one arrow function, at most 4 KB, e.g. "({ text }) => text.split(/\\s+/).length".
        input_schema: JSON schema of the input object, e.g. {"type": "object", "properties":
            {"text": {"type": "string"}}, "required": ["text"]}.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    try:
        draft = ForgedDraft.checked(name, description, input_schema, code)
    except ForgeRefused as exc:
        return failed(str(exc))
    return await _save(ctx, ctx.caller, draft)


@tool(name="remove_tool", context=True)
def remove_tool(name: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Delete one of your forged tools; the person confirms it in their app.

    Args:
        name: the tool's name, with or without my_.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    found = ForgeStore(ctx.hub.db).named(ctx.caller.id, name)
    if found is None:
        return failed(f"you have no forged tool named {name}")
    shown = Item(found.tool_name, found.description)
    return proposed(
        ctx, REMOVE_TOOL, f"delete the forged tool {found.tool_name}", [shown], {"name": name}
    )


@tool(name="install_tool", context=True)
async def install_tool(url: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Install a forged tool from a tool file on GitHub, pinned by commit:
    https://raw.githubusercontent.com/<owner>/<repo>/<40-hex commit>/<path>.json. The owner
    must be on the hub's allowlist or trusted by you (manage_tools action trust).

    Args:
        url: the raw file URL at a full commit SHA.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    return await _kept(install_pinned(ctx.hub, ctx.caller, url))


def _listing(found: list[tuple[ForgedTool, str]]) -> str:
    lines = [f"[{t.id}] {t.tool_name} by @{author}: {t.description}" for t, author in found]
    return "\n".join(lines) or "No forged tools match."


@tool(name="marketplace", context=True)
async def marketplace(
    tool_context: StrandsToolContext, action: str = "browse", query: str = "", id: int = 0
) -> dict[str, Any]:
    """Everyone's public forged tools on this hub: browse them, install one (checked again in
    the sandbox), or check_updates on the tools you installed.

    Args:
        action: browse, install or check_updates.
        query: with browse, words to look for in names and descriptions.
        id: with install, the tool's id from browse.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    store = ForgeStore(ctx.hub.db)
    if action == "browse":
        found = store.browse(query)
        tools = [{**t.as_json(), "author": f"@{author}"} for t, author in found]
        return ok(_listing(found), tools=tools)
    if action == "install":
        return await _install_copy(ctx, ctx.caller, store, id)
    if action == "check_updates":
        states = await _update_states(ctx, ctx.caller, store)
        text = "\n".join(f"{s['name']}: {s['state']}" for s in states)
        return ok(text or "You have no installed tools to check.", updates=states)
    return failed("action must be browse, install or check_updates")


async def _install_copy(
    ctx: ToolContext, user: User, store: ForgeStore, tool_id: int
) -> dict[str, Any]:
    original = store.by_id(tool_id) if tool_id else None
    if original is None:
        return failed("no forged tool has that id; browse the marketplace for ids")
    if original.user_id == user.id:
        return failed(f"{original.tool_name} is already yours")
    existing = store.named(user.id, original.name)
    if existing is not None and existing.copied_from != original.id:
        return failed(str(taken(existing)))
    draft = ForgedDraft(original.name, original.description, original.input_schema, original.code)
    return await _save(ctx, user, draft, copied_from=original.id)


async def _update_states(ctx: ToolContext, user: User, store: ForgeStore) -> list[dict[str, Any]]:
    states: list[dict[str, Any]] = []
    for mine in store.of(user.id):
        if mine.source_url:
            try:
                states.append(
                    await github.update_state(mine, ctx.hub.settings.tool_raw_base_url, store)
                )
            except ForgeRefused as exc:
                states.append({"name": mine.tool_name, "state": "unknown", "why": str(exc)})
        elif mine.copied_from is not None:
            states.append(_copy_state(mine, store.by_id(mine.copied_from)))
    return states


def _copy_state(mine: ForgedTool, original: ForgedTool | None) -> dict[str, Any]:
    state: dict[str, Any] = {"name": mine.tool_name, "copiedFrom": mine.copied_from}
    if original is None:
        return {**state, "state": "gone", "why": "its author removed the original"}
    if original.code_sha256 == mine.code_sha256:
        return {**state, "state": "current"}
    return {**state, "state": "changed", "why": "install it again from the marketplace"}


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [create_tool, remove_tool, install_tool, marketplace]


# --- the person's own forged tools, the forged tier ----------------------------------------


def forged_tools(ctx: ToolContext) -> list[AgentTool]:
    """The caller's forged tools as my_<name>; none for an anonymous caller."""
    if ctx.caller is None:
        return []
    return [
        _mounted(ctx.hub.sandbox, forged) for forged in ForgeStore(ctx.hub.db).of(ctx.caller.id)
    ]


def _mounted(sandbox: Sandbox, forged: ForgedTool) -> AgentTool:
    async def run(arguments: Any) -> tuple[bool, str]:
        return await ran(sandbox, forged, arguments or {})

    return text_tool(forged.tool_name, forged.description, forged.input_schema, run)


hinted("forge", create_tool, remove_tool, install_tool, marketplace)
