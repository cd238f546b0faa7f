"""The tiny's skills as tools: calling one loads its instructions into the conversation.

A skill is an instruction set with a name and a line saying when to use it; the body stays out
of the system prompt until the model asks for it, so a tiny can carry many without crowding it.
Skill tools take no input, so their spec is written directly rather than derived per turn.
"""

from __future__ import annotations

import re
from typing import Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolUse

from hub.agent.tools.context import ToolContext
from hub.tinys.records import Skill

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def tool_name(skill_name: str) -> str:
    """Strands tool names are ``[a-zA-Z0-9_-]{1,64}``."""
    return (_UNSAFE.sub("_", skill_name) or "skill")[:64]


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [skill_tool(ctx.tiny.name, skill) for skill in ctx.tiny.skills]


def skill_tool(tiny_name: str, skill: Skill) -> AgentTool:
    name = tool_name(skill.name)
    text = skill.instructions or f"The {skill.name} skill has no instructions."

    def load(tool_use: ToolUse, **_: Any) -> ToolResult:
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": text}],
        }

    spec = {
        "name": name,
        "description": skill.description or f"The {skill.name} skill of {tiny_name}.",
        "inputSchema": {"json": {"type": "object", "properties": {}}},
    }
    return PythonAgentTool(name, spec, load)  # type: ignore[arg-type]
