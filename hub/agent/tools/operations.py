"""The tiny's own OpenAPI operations as tools (docs/protocol.md, turn step 5: the "dynamic" tier).

Fetching a schema is async and mount groups are not, so the turn fetches before it mounts
(``tiny_operation_tools`` in ``agent/compose.py``) and this group hands over what it found.
A schema that cannot be used must not cost the person their answer: it is logged and the turn
goes on without operation tools.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from strands.types.tools import AgentTool

from hub.agent.tools.context import ToolContext
from hub.tinys.openapi import OpenAPIError, load_operations, operation_tools
from hub.tinys.records import Tiny

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)


async def tiny_operation_tools(hub: Hub, tiny: Tiny) -> list[AgentTool]:
    """One tool per operation of the tiny's ``worker`` schema; [] when it has none, or when
    the schema cannot be fetched or read (logged). Never raises."""
    source = tiny.worker.strip()
    if not source:
        return []
    try:
        operations = await load_operations(hub, source)
        return operation_tools(operations)
    except OpenAPIError as exc:
        log.warning("%s: its OpenAPI operations are not mounted: %s", tiny.name, exc)
    except Exception:
        log.exception("%s: its OpenAPI operations are not mounted (unexpected failure)", tiny.name)
    return []


def tools(ctx: ToolContext) -> list[AgentTool]:
    """The mount list's group: the operation tools the turn fetched before mounting."""
    return list(ctx.operations)
