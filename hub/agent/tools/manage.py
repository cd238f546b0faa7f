"""manage_tools: list, turn off and turn on tools for this user (the protected set stays on)."""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from hub import contracts as c
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.preferences import disabled_tools, set_tool_enabled


@tool(name="manage_tools", context=True)
def manage_tools(action: str, tool_context: StrandsToolContext, name: str = "") -> dict[str, Any]:
    """List the tools turned off for this user, or turn one off or on again.

    Args:
        action: list, disable or enable.
        name: the tool's exact name (for disable and enable).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    off = disabled_tools(ctx.hub.db, ctx.caller)
    if action == "list":
        listed = ", ".join(sorted(off)) or "none"
        return ok(f"Turned off: {listed}.", disabled=sorted(off))
    if action not in ("disable", "enable"):
        return failed("action must be list, disable or enable")
    if not name:
        return failed(f"name the tool to {action}")
    if action == "disable" and name in c.PROTECTED_TOOLS:
        return failed(f"{name} is protected and cannot be turned off")
    set_tool_enabled(ctx.hub.db, ctx.caller, name, enabled=action == "enable")
    state = "on" if action == "enable" else "off"
    return ok(f"{name} is turned {state} from the next message.", tool=name, state=state)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [manage_tools]
