"""customize_page: the tiny's owner changes its chat page. The page is the client's, so the
client acts on the tool call it sees in the stream and the result here tells the model the
request went out. (The phone's own tools are in agent/tools/phone.py.)"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, sent_to_client

CUSTOMIZE_LIMIT_BYTES = 8 * 1024


@tool(name="customize_page")
def customize_page(css: str = "", js: str = "", persist: bool = False) -> dict[str, Any]:
    """Inject CSS and/or JavaScript into this tiny's chat page (owner only).

    Args:
        css: a stylesheet, at most 8 KB.
        js: a script, at most 8 KB.
        persist: keep it for every visitor, not just this session.
    """
    for label, code in (("css", css), ("js", js)):
        if len(code.encode("utf-8")) > CUSTOMIZE_LIMIT_BYTES:
            return failed(f"{label} is over 8 KB")
    if not css and not js:
        return failed("give css, js or both")
    return sent_to_client("customize_page", css=css, js=js, persist=persist)


TINY_OWNER_TOOLS: list[AgentTool] = [customize_page]


def tools(ctx: ToolContext) -> list[AgentTool]:
    return list(TINY_OWNER_TOOLS) if ctx.owns_tiny else []


hinted("page", customize_page)
