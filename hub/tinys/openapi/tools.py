"""Operations as strands tools: one tool per operation, named uniquely among a turn's tools.

A tool must answer whatever goes wrong, so a failure inside a call becomes an error result the
model reads. Its input schema is a copy: strands fills in defaults in place, and the cached
operation stays as parsed for the next turn.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolUse

from hub.tinys.openapi.call import call_operation
from hub.tinys.openapi.model import Operation
from hub.tinys.openapi.names import name_key, tool_name, unique_name

__all__ = ["operation_tools"]

log = logging.getLogger(__name__)


def _tool(operation: Operation, name: str) -> AgentTool:
    async def call(tool_use: ToolUse, **_: Any) -> ToolResult:
        try:
            succeeded, text = await call_operation(operation, tool_use.get("input"))
        except Exception as exc:  # a tool must answer, whatever went wrong
            log.exception("operation %s failed unexpectedly", name)
            succeeded, text = False, f"{name} failed unexpectedly: {exc or type(exc).__name__}"
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success" if succeeded else "error",
            "content": [{"text": text}],
        }

    spec = {
        "name": name,
        "description": operation.description,
        # strands fills in defaults in place; the cached operation stays as parsed.
        "inputSchema": {"json": copy.deepcopy(operation.input_schema)},
    }
    return PythonAgentTool(name, spec, call)  # type: ignore[arg-type]


def operation_tools(
    operations: Iterable[Operation], *, taken: set[str] | None = None, prefix: str = ""
) -> list[AgentTool]:
    """One strands tool per operation, named `prefix` + its name, cut to 64 characters and
    made unique against `taken` and each other (``_2``, ``_3``...). `taken` is not changed."""
    used = {name_key(name) for name in taken or ()}
    return [
        _tool(operation, unique_name(tool_name(prefix + operation.name), used))
        for operation in operations
    ]
