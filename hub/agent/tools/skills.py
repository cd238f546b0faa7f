"""The tiny's skills as tools: calling one loads its instructions into the conversation.

A skill is an instruction set with a name and a line saying when to use it; the body stays out
of the system prompt until the model asks for it, so a tiny can carry many without crowding it.
"""

from __future__ import annotations

import re
from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from hub.agent.tools.context import ToolContext, ok
from hub.tinys.records import Skill

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def tool_name(skill_name: str) -> str:
    """Strands tool names are ``[a-zA-Z0-9_-]{1,64}``."""
    return (_UNSAFE.sub("_", skill_name) or "skill")[:64]


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [_skill_tool(ctx.tiny.name, skill) for skill in ctx.tiny.skills]


def _skill_tool(tiny_name: str, skill: Skill) -> AgentTool:
    description = skill.description or f"The {skill.name} skill of {tiny_name}."

    def load() -> dict[str, Any]:
        return ok(skill.instructions or f"The {skill.name} skill has no instructions.")

    return tool(name=tool_name(skill.name), description=description)(load)
