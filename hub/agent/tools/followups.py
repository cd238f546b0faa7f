"""suggest_followups: 2-4 chips the client shows under the reply."""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, ok


@tool(name="suggest_followups")
def suggest_followups(suggestions: list[str]) -> dict[str, Any]:
    """Offer the user 2-4 short follow-up messages they can pick with one tap.

    Args:
        suggestions: 2 to 4 short messages, written as the user would say them.
    """
    chips = [s.strip() for s in suggestions if isinstance(s, str) and s.strip()]
    if not 2 <= len(chips) <= 4:
        return failed(f"give 2 to 4 non-empty suggestions, not {len(chips)}")
    if any(len(chip) > 120 for chip in chips):
        return failed("each suggestion must be at most 120 characters")
    return ok(f"Showing {len(chips)} follow-up chips.", suggestions=chips)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [suggest_followups] if ctx.client.app_tools else []


hinted("followups", suggest_followups)
