"""Call a hub tool the way strands does: its turn context in the invocation state."""

from __future__ import annotations

import inspect
from typing import Any

from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from hub.agent.tools.context import STATE_KEY, ToolContext


def call_tool(tool: AgentTool, ctx: ToolContext, **arguments: Any) -> Any:
    """Run a decorated tool directly; ``tool_context`` is supplied when the tool asks for it."""
    spec_params = getattr(tool, "_metadata", None)
    wants_context = spec_params is not None and "tool_context" in spec_params.signature.parameters
    if wants_context:
        arguments["tool_context"] = StrandsToolContext(
            tool_use={"toolUseId": "test", "name": tool.tool_name, "input": arguments},
            agent=None,
            invocation_state={STATE_KEY: ctx},
        )
    return tool(**arguments)  # type: ignore[operator]


OWNER = "owner"


async def use_tool(server: Any, tool: AgentTool, caller: Any = OWNER, **arguments: Any) -> Any:
    """Call ``tool`` (synchronous or not) in a running hub as its owner (default), another user,
    or None (anonymous), talking to the default tiny."""
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    who = server.hub.owner if caller == OWNER else caller
    result = call_tool(tool, ToolContext(server.hub, who, tiny), **arguments)
    return dict(await result if inspect.isawaitable(result) else result)


def result_text(result: dict[str, Any]) -> str:
    """The text a tool result leads with."""
    return str(result["content"][0]["text"])
