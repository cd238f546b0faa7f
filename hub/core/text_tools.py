"""A strands tool made from data: a name, a description, a JSON schema and an async function
that answers ``(succeeded, text)``. A tiny's OpenAPI operations and a person's forged tools are
both tools of this kind.

A tool must answer whatever goes wrong, so an exception inside a call becomes an error result
the model reads. Its input schema is a copy: strands fills in defaults in place, and the stored
schema stays as it was saved or parsed for the next turn.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolUse

log = logging.getLogger(__name__)

Run = Callable[[Any], Awaitable[tuple[bool, str]]]


def text_tool(name: str, description: str, input_schema: dict[str, Any], run: Run) -> AgentTool:
    async def call(tool_use: ToolUse, **_: Any) -> ToolResult:
        try:
            succeeded, text = await run(tool_use.get("input"))
        except Exception as exc:  # a tool must answer, whatever went wrong
            log.exception("tool %s failed unexpectedly", name)
            succeeded, text = False, f"{name} failed unexpectedly: {exc or type(exc).__name__}"
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success" if succeeded else "error",
            "content": [{"text": text}],
        }

    spec = {
        "name": name,
        "description": description,
        "inputSchema": {"json": copy.deepcopy(input_schema)},
    }
    return PythonAgentTool(name, spec, call)  # type: ignore[arg-type]
