"""Operations as strands tools: one tool per operation, named uniquely among a turn's tools.

Each is a ``hub.core.text_tools`` tool: a failure inside a call is an error result the model reads.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from strands.types.tools import AgentTool

from hub.core.text_tools import text_tool
from hub.tinys.openapi.call import call_operation
from hub.tinys.openapi.model import Operation
from hub.tinys.openapi.names import name_key, tool_name, unique_name

__all__ = ["operation_tools"]

log = logging.getLogger(__name__)


def _tool(operation: Operation, name: str) -> AgentTool:
    async def run(arguments: Any) -> tuple[bool, str]:
        return await call_operation(operation, arguments)

    return text_tool(name, operation.description, operation.input_schema, run)


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
