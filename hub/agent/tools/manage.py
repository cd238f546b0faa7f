"""manage_tools: list this person's tools by tier, turn tools off and on (the protected set stays
on), and trust or untrust GitHub owners for install_tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub import contracts as c
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.forge.store import ForgeRefused, ForgeStore
from hub.people.preferences import disabled_tools, set_tool_enabled

ACTIONS = ("list", "disable", "enable", "trust", "untrust")


class MountedTools(Protocol):
    """What ``list`` reads of a mount: each tool's tier, and the names mounted."""

    @property
    def names(self) -> list[str]: ...

    @property
    def tiers(self) -> dict[str, str]: ...


MountList = Callable[[ToolContext], MountedTools]
_mount_list: list[MountList] = []


def use_mount_list(mount: MountList) -> None:
    """The package that mounts this module hands it the mount list ``list`` reports, so this
    module need not import the package (which imports it)."""
    _mount_list[:] = [mount]


def _listed(ctx: ToolContext, tool_context: StrandsToolContext) -> list[dict[str, Any]]:
    """Every tool this person's turns get, with its tier and whether it is on: the mount list
    for this turn, plus the MCP tools that joined when the turn started."""
    (mount_tools,) = _mount_list
    mounted = mount_tools(ctx)
    tiers = dict(mounted.tiers)
    agent = tool_context.agent
    for name in getattr(agent, "tool_names", None) or ():
        tiers.setdefault(name, "mcp")
    on = {*mounted.names, *(n for n, tier in tiers.items() if tier == "mcp")}
    return [{"name": n, "tier": tiers[n], "on": n in on} for n in sorted(tiers)]


def _list_text(listed: list[dict[str, Any]], trusted: list[str]) -> str:
    lines = []
    for tier in ("built-in", "forged", "dynamic", "mcp"):
        names = [t["name"] + ("" if t["on"] else " (off)") for t in listed if t["tier"] == tier]
        if names:
            lines.append(f"{tier}: {', '.join(names)}")
    lines.append(f"trusted GitHub owners: {', '.join(trusted) or 'none'}")
    return "\n".join(lines)


@tool(name="manage_tools", context=True)
def manage_tools(action: str, tool_context: StrandsToolContext, name: str = "") -> dict[str, Any]:
    """Manage your own agent tools (not devices or lights): list every tool you get (with its
    tier: built-in, forged, dynamic or mcp, and whether it is on), turn one of them off or on
    again, or trust / untrust a GitHub owner for install_tool.

    Args:
        action: list, disable, enable, trust or untrust.
        name: the tool's exact name (disable, enable), or the GitHub owner (trust, untrust).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    store = ForgeStore(ctx.hub.db)
    if action == "list":
        listed = _listed(ctx, tool_context)
        off = sorted(disabled_tools(ctx.hub.db, ctx.caller))
        trusted = store.trusted(ctx.caller.id)
        return ok(_list_text(listed, trusted), tools=listed, disabled=off, trusted=trusted)
    if action not in ACTIONS:
        return failed("action must be " + ", ".join(ACTIONS[:-1]) + " or " + ACTIONS[-1])
    if not name:
        return failed(f"name the {'owner' if 'trust' in action else 'tool'} to {action}")
    if action in ("trust", "untrust"):
        try:
            owner = store.trust(ctx.caller.id, name, trusted=action == "trust")
        except ForgeRefused as exc:
            return failed(str(exc))
        verb = "trusts" if action == "trust" else "no longer trusts"
        return ok(f"install_tool {verb} {owner} for you.", owner=owner, trusted=action == "trust")
    if action == "disable" and name in c.PROTECTED_TOOLS:
        return failed(f"{name} is protected and cannot be turned off")
    set_tool_enabled(ctx.hub.db, ctx.caller, name, enabled=action == "enable")
    state = "on" if action == "enable" else "off"
    return ok(f"{name} is turned {state} from the next message.", tool=name, state=state)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [manage_tools]


hinted("manage", manage_tools)
