"""Tools the client runs itself: OpenAI's ``tools`` in a request, offered to the model beside the
hub's own.

The model calls one like any tool; the hub does not run it. The call is handed back to the
client as ``tool_calls`` (finish reason ``tool_calls``), and the turn ends once the tools of that
step are done — the hub's own tools of the same step run to completion, the model is not asked
again. The client runs the tool and sends the conversation back with a ``tool`` message holding
the answer; the model goes on from there (``hub.agent.turn.to_strands``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolUse

# What strands records as the result of a client's tool: the model never reads it (the turn
# ends before the next model call), the client's answer arrives with its next request.
HANDED_OVER = "handed to the client, which runs this tool and sends its answer"
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ClientToolSpec:
    """One function of the request's ``tools``, checked."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_PARAMETERS))


def client_tool(spec: ClientToolSpec) -> AgentTool:
    """A strands tool that, called, ends the turn after the current step (strands' own
    cooperative stop: ``Agent.cancel(after_current_tools=True)``)."""

    async def hand_over(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        agent = invocation_state.get("agent")
        if agent is not None:
            agent.cancel(after_current_tools=True)
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": HANDED_OVER}],
        }

    tool_spec = {
        "name": spec.name,
        "description": spec.description or spec.name,
        # a copy: strands fills defaults into a schema in place
        "inputSchema": {"json": copy.deepcopy(spec.parameters)},
    }
    return PythonAgentTool(spec.name, tool_spec, hand_over)  # type: ignore[arg-type]
