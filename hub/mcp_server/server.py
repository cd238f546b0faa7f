"""The hub as an MCP server: the low-level ``mcp`` Server, its tools and its resources.

Each request names its caller through the HTTP route that admitted it (``hub.mcp_server.http``
puts the client in the request's ASGI scope); a request with no caller is refused, so nothing
is ever served anonymously. Tools are listed fresh for every request, so a group turned on, or
a driver's device that came online, shows up on the next ``tools/list``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from hub import __version__
from hub.agent.compose import AnswerFailed, answer_with_images
from hub.agent.tools.context import ToolContext
from hub.mcp_server.clients import McpClient
from hub.mcp_server.exposed import Exposed, audit, exposed_tools, owner_context, run_tool
from hub.runtime.hub import Hub

SERVER_NAME = "tiny-hub"
CLIENT_SCOPE_KEY = "tiny_hub.mcp_client"
ASK_TINY = "ask_tiny"
FACTS_URI = "tiny-hub://memory/recent"
DEVICES_URI = "tiny-hub://devices"
RECENT_FACTS = 50
ASK_TINY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "description": "what to ask, in plain words"}},
    "required": ["prompt"],
}
ASK_TINY_MAX = 4000
IMAGE_TYPES = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "gif": "image/gif"}
INSTRUCTIONS = (
    "The person's own companion hub: their memory (recall before asking them something they "
    "may have told you; learn what they ask you to remember) and, when they turned it on, "
    "their hardware. ask_tiny hands a request to the hub's own agent."
)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> McpClient:
    """The client the HTTP route admitted; a request without one is refused."""
    scope = getattr(ctx.request, "scope", None)
    client = scope.get(CLIENT_SCOPE_KEY) if isinstance(scope, dict) else None
    if not isinstance(client, McpClient):
        raise MCPError(types.INVALID_REQUEST, "sign in required: the hub's MCP needs a token")
    return client


def build_server(hub: Hub) -> Server[Any]:
    """One Server for the hub; each handler reads the hub's settings when it runs."""

    def groups() -> Sequence[str]:
        return hub.settings.mcp_server_groups

    def catalogue() -> tuple[ToolContext, list[Exposed]]:
        ctx = owner_context(hub)
        return ctx, exposed_tools(ctx, groups())

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller_of(ctx)
        _, tools = catalogue()
        listed = [
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools
        ]
        if "agent" in groups():
            listed.append(_ask_tiny_tool())
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        client = caller_of(ctx)
        arguments = dict(params.arguments or {})
        if params.name == ASK_TINY and "agent" in groups():
            return await _ask_tiny(hub, arguments)
        turn, tools = catalogue()
        exposed = next((t for t in tools if t.name == params.name), None)
        if exposed is None:
            return _error(f"no tool {params.name} here (the owner may not have exposed it)")
        audit(hub, client.name, exposed, arguments)
        return as_mcp_result(await run_tool(turn, exposed, arguments))

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        caller_of(ctx)
        return types.ListResourcesResult(resources=_resources(groups()))

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        caller_of(ctx)
        offered = {r.uri for r in _resources(groups())}
        if params.uri not in offered:
            raise MCPError(types.INVALID_PARAMS, f"no resource {params.uri} here")
        body = _recent_facts(hub) if params.uri == FACTS_URI else _devices(hub)
        text = json.dumps(body, ensure_ascii=False)
        contents = types.TextResourceContents(
            uri=params.uri, mime_type="application/json", text=text
        )
        return types.ReadResourceResult(contents=[contents])

    async def list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """None: every resource here has a fixed URI. Answered (empty) rather than "method not
        found", since declaring resources promises this list too."""
        caller_of(ctx)
        return types.ListResourceTemplatesResult(resource_templates=[])

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


def as_mcp_result(result: Any) -> types.CallToolResult:
    """A strands tool result as MCP content: text as text, JSON as text the client can parse
    (and as structured content), pictures as image content."""
    content: list[types.ContentBlock] = []
    structured: Any = None
    for block in result.get("content", []):
        if "text" in block:
            content.append(types.TextContent(text=str(block["text"])))
        elif "json" in block:
            structured = block["json"]
            content.append(types.TextContent(text=json.dumps(block["json"], default=str)))
        elif "image" in block:
            image = block["image"]
            data = base64.b64encode(image["source"]["bytes"]).decode("ascii")
            mime = IMAGE_TYPES.get(str(image.get("format")), "image/jpeg")
            content.append(types.ImageContent(data=data, mime_type=mime))
    is_error = result.get("status") == "error"
    structured = structured if isinstance(structured, dict) else None
    return types.CallToolResult(content=content, structured_content=structured, is_error=is_error)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _ask_tiny_tool() -> types.Tool:
    return types.Tool(
        name=ASK_TINY,
        description=(
            "Ask the person's own companion (the hub's agent, with their memory and tools) "
            "to answer or do something; it answers as it would in their chat."
        ),
        input_schema=ASK_TINY_SCHEMA,
    )


async def _ask_tiny(hub: Hub, arguments: dict[str, Any]) -> types.CallToolResult:
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > ASK_TINY_MAX:
        return _error(f"prompt must be 1-{ASK_TINY_MAX} characters")
    try:
        answered = await answer_with_images(hub, hub.owner, prompt)
    except AnswerFailed as exc:
        return _error(str(exc))
    content: list[types.ContentBlock] = [types.TextContent(text=answered.text)]
    for picture in answered.images:
        mime = IMAGE_TYPES.get(picture.format, "image/jpeg")
        data = base64.b64encode(picture.data).decode("ascii")
        content.append(types.ImageContent(data=data, mime_type=mime))
    return types.CallToolResult(content=content)


def _resources(groups: Sequence[str]) -> list[types.Resource]:
    found = []
    if "memory" in groups:
        found.append(
            types.Resource(
                uri=FACTS_URI,
                name="recent_facts",
                description=f"the {RECENT_FACTS} newest facts the hub holds about the person",
                mime_type="application/json",
            )
        )
    if "devices" in groups or "drivers" in groups:
        found.append(
            types.Resource(
                uri=DEVICES_URI,
                name="devices",
                description="the person's enrolled devices and the hardware on this hub, with "
                "whether each is online",
                mime_type="application/json",
            )
        )
    return found


def _recent_facts(hub: Hub) -> dict[str, Any]:
    facts = hub.memory.recent(hub.owner.id, limit=RECENT_FACTS)
    return {"facts": [f.as_json() for f in facts]}


def _devices(hub: Hub) -> dict[str, Any]:
    now = hub.devices.now()
    enrolled = [d.as_json(now) for d in hub.devices.registry.list(hub.owner.id)]
    return {"devices": enrolled, "hardware": hub.drivers.records()}
