"""What MCP clients may call: the agent's own tools, grouped so the owner can choose.

The tools are the very ones the hub's agent mounts (``hub.agent.tools``), run the way strands
runs them, with the owner's turn in the invocation state, so a client gets the answers the agent
gets. Groups: ``memory`` (learn, recall, unlearn, memory_graph), ``agent`` (``ask_tiny``, a turn
of the hub's own agent), ``devices`` (``use_device``), ``drivers`` (the tools of the drivers of
the hardware attached to the hub, and whatever tools the devices online now contribute, so a
new driver's tools appear with it) and ``senses`` (the tools of the machine's own camera and
microphone, drivers too). Every call
in a hardware group is written to the driver audit log, with the client's name, before it runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolResult

from hub import contracts as c
from hub.agent.tools import devices, memory
from hub.agent.tools.context import STATE_KEY, ToolContext
from hub.people.preferences import disabled_tools
from hub.runtime.hub import Hub

HARDWARE_GROUPS = frozenset({"devices", "drivers", "senses"})
AUDIT_DRIVER = "mcp"
AUDIT_COMMAND_MAX = 500

GroupTools = Callable[[ToolContext], Sequence[AgentTool]]


def _drivers(ctx: ToolContext) -> list[AgentTool]:
    manager = ctx.hub.drivers
    return [*manager.catalog.family_tools(machine=False), *manager.tools()]


def _senses(ctx: ToolContext) -> list[AgentTool]:
    return ctx.hub.drivers.catalog.family_tools(machine=True)


GROUP_TOOLS: dict[str, GroupTools] = {
    "memory": lambda ctx: [memory.learn, memory.recall, memory.unlearn, memory.memory_graph],
    "devices": devices.tools,
    "drivers": _drivers,
    "senses": _senses,
}


@dataclass(frozen=True)
class Exposed:
    """One tool a client may call, and the group it belongs to."""

    group: str
    tool: AgentTool

    @property
    def name(self) -> str:
        return self.tool.tool_name

    @property
    def description(self) -> str:
        return str(self.tool.tool_spec.get("description", ""))

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.tool.tool_spec.get("inputSchema", {}).get("json", {})
        return valid_defaults(schema) if isinstance(schema, dict) else {"type": "object"}


def valid_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` in which every ``default`` its own (sub)schema rejects is left out.

    A Python default of ``None`` on a ``list[str] | None`` parameter comes out of the tool
    decorator as ``{"type": "array", "default": null}``: a default invalid against the schema
    it sits in, which strict clients reject. Leaving it out says the same (the argument is
    optional; absent, the tool gets ``None``)."""
    import jsonschema

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(item) for item in node]
        if not isinstance(node, dict):
            return node
        cleaned = {key: clean(value) for key, value in node.items()}
        if "default" in cleaned:
            rest = {key: value for key, value in cleaned.items() if key != "default"}
            try:
                jsonschema.validate(cleaned["default"], rest)
            except (jsonschema.ValidationError, jsonschema.SchemaError):
                return rest
        return cleaned

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


def owner_context(hub: Hub) -> ToolContext:
    """The turn a client's call runs in: the owner's, with the default tiny (what the owner's
    own chat uses)."""
    tiny = hub.tinys.get("tiny")
    if tiny is None:
        raise LookupError("the hub has no default tiny")
    return ToolContext(hub, hub.owner, tiny)


def exposed_tools(ctx: ToolContext, groups: Sequence[str]) -> list[Exposed]:
    """The strands tools of the groups turned on, in group order, each name once; a tool the
    owner turned off for their own turns is off here too (the protected ones excepted)."""
    off = disabled_tools(ctx.hub.db, ctx.caller) - c.PROTECTED_TOOLS
    found: dict[str, Exposed] = {}
    for group in groups:
        tools_of = GROUP_TOOLS.get(group)
        for tool in tools_of(ctx) if tools_of is not None else ():
            if tool.tool_name not in off:
                found.setdefault(tool.tool_name, Exposed(group, tool))
    return list(found.values())


def audit(hub: Hub, client: str, exposed: Exposed, arguments: dict[str, Any]) -> None:
    """A hardware call into ``/api/drivers/audit``: the tool, its input and who asked."""
    if exposed.group not in HARDWARE_GROUPS:
        return
    command = f"{exposed.name} {json.dumps(arguments, sort_keys=True, default=str)}"
    hub.audit.record(AUDIT_DRIVER, f"mcp:{client}", command[:AUDIT_COMMAND_MAX])


async def run_tool(ctx: ToolContext, exposed: Exposed, arguments: dict[str, Any]) -> ToolResult:
    """Run the tool as strands does in a turn (its input checked against its own schema)."""
    tool_use = {"toolUseId": "mcp", "name": exposed.name, "input": arguments}
    state = {STATE_KEY: ctx, "agent": None}
    result: ToolResult | None = None
    async for event in exposed.tool.stream(tool_use, state):  # type: ignore[arg-type]
        if isinstance(event, ToolResultEvent):
            result = event.tool_result
    if result is None:
        return {"toolUseId": "mcp", "status": "error", "content": [{"text": "no result"}]}
    return result
