"""/api/tools: the caller's tools by hand (``tiny-hub tools``, the TUI's Tools screen).

Listing, turning a tool off and on, forging one, installing one from GitHub and trying a forged
one run the same code as the agent's ``manage_tools``, ``create_tool``, ``install_tool`` and
``my_*`` tools (the mount list, ``hub.preferences``, ``hub.forge.keeping``): the same checks in
the sandbox, the same allowlist, the same protected set. Removing a forged tool stays a proposal
the person confirms, as from a chat.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.api.auth import Access, access, signed_in
from hub.api.body import read_json_body
from hub.api.keys import HUB
from hub.api.spec import (
    ANY,
    BOOLEAN,
    STRING,
    Operation,
    array,
    closed,
    documented,
    matching,
    obj,
    text,
)
from hub.core.errors import Refused
from hub.forge.keeping import install_pinned, keep_checked, ran
from hub.forge.store import (
    MAX_CODE_BYTES,
    MAX_DESCRIPTION_CHARS,
    ForgedDraft,
    ForgeRefused,
    ForgeStore,
)
from hub.people.identity import User
from hub.people.preferences import disabled_tools, set_tool_enabled
from hub.runtime.hub import Hub

routes = web.RouteTableDef()

MAX_TOOL_BODY_BYTES = 65_536
# One tool by name; "install" is the install route's, so a method it lacks is its 405.
ONE_TOOL = "/api/tools/{name:(?!install$)[^{}/]+}"
TOOL = obj(
    {"name": STRING, "tier": STRING, "on": BOOLEAN, "protected": BOOLEAN, "description": STRING}
)


class ToolRefused(Refused):
    pass


class NoSuchTool(Refused):
    status = 404


def listed(hub: Hub, user: User) -> list[dict[str, Any]]:
    """Every tool this person's turns get with the default tiny, with its tier and whether it
    is on (MCP servers' tools join when a turn starts, so they are not here)."""
    tiny = hub.tinys.resolve(c.DEFAULT_TINY, user, None)
    every = mount_tools(ToolContext(hub, user, tiny), with_off=True)
    off = disabled_tools(hub.db, user) - c.PROTECTED_TOOLS
    return [
        {
            "name": tool.tool_name,
            "tier": every.tiers[tool.tool_name],
            "on": tool.tool_name not in off,
            "protected": tool.tool_name in c.PROTECTED_TOOLS,
            "description": first_sentence(str(tool.tool_spec.get("description", ""))),
        }
        for tool in sorted(every.tools, key=lambda t: t.tool_name)
    ]


def first_sentence(text: str) -> str:
    """A tool's description up to its first full stop (its arguments follow)."""
    one = " ".join(text.split())
    end = one.find(". ")
    return one[: end + 1] if end >= 0 else one


async def _object_body(request: web.Request, fields: tuple[str, ...]) -> dict[str, Any]:
    body = await read_json_body(request, MAX_TOOL_BODY_BYTES)
    if not isinstance(body, dict):
        raise ToolRefused("body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ToolRefused(f"unknown field(s): {', '.join(unknown)} ({', '.join(fields)})")
    return body


def _saved(saved: Any) -> web.Response:
    return web.json_response({"tool": saved.as_json()})


@routes.get("/api/tools")
@access(Access.USER)
@documented(
    Operation(
        "every tool your turns get, by tier and on or off; your forged tools; trusted owners",
        answers={200: obj({"tools": array(TOOL), "forged": array(ANY), "trusted": array(STRING)})},
    )
)
async def list_tools(request: web.Request) -> web.Response:
    hub, user = request.app[HUB], signed_in(request)
    store = ForgeStore(hub.db)
    return web.json_response(
        {
            "tools": listed(hub, user),
            "forged": [tool.as_json() for tool in store.of(user.id)],
            "trusted": store.trusted(user.id),
        }
    )


@routes.post("/api/tools")
@access(Access.USER)
@documented(
    Operation(
        "forge a tool: one JavaScript arrow function, run once in the sandbox before it is kept",
        body=closed(
            {
                "name": matching(r"^ *(my_)?[a-z][a-z0-9_]{0,39} *$"),
                "description": text(MAX_DESCRIPTION_CHARS),
                "code": text(MAX_CODE_BYTES),
            },
            inputSchema=obj(type={"const": "object"}),
        ),
        answers={200: obj({"tool": ANY})},
    )
)
async def forge_tool(request: web.Request) -> web.Response:
    body = await _object_body(request, ("name", "description", "code", "inputSchema"))
    name, description, code = (body.get(field, "") for field in ("name", "description", "code"))
    if not (isinstance(name, str) and isinstance(description, str) and isinstance(code, str)):
        raise ToolRefused("name, description and code must be strings")
    try:
        draft = ForgedDraft.checked(name, description, body.get("inputSchema"), code)
        return _saved(await keep_checked(request.app[HUB], signed_in(request), draft))
    except ForgeRefused as exc:
        raise ToolRefused(str(exc)) from None


@routes.post("/api/tools/install")
@access(Access.USER)
@documented(
    Operation(
        "install a tool file from GitHub pinned by commit (raw URL at a 40-hex SHA), from an "
        "owner on the hub's allowlist or trusted by you",
        body=closed({"url": STRING}),
        answers={200: obj({"tool": ANY})},
    )
)
async def install_tool(request: web.Request) -> web.Response:
    body = await _object_body(request, ("url",))
    url = body.get("url")
    if not isinstance(url, str):
        raise ToolRefused("url must be a string")
    try:
        return _saved(await install_pinned(request.app[HUB], signed_in(request), url))
    except ForgeRefused as exc:
        raise ToolRefused(str(exc)) from None


@routes.patch(ONE_TOOL)
@access(Access.USER)
@documented(
    Operation(
        "turn one of your tools off or on again (from your next message; protected ones stay on)",
        body=closed({"on": BOOLEAN}),
        answers={200: TOOL},
        errors=(404,),
    )
)
async def switch_tool(request: web.Request) -> web.Response:
    body = await _object_body(request, ("on",))
    wanted = body.get("on")
    if not isinstance(wanted, bool):
        raise ToolRefused("on must be true or false")
    hub, user, name = request.app[HUB], signed_in(request), request.match_info["name"]
    if not wanted and name in c.PROTECTED_TOOLS:
        raise ToolRefused(f"{name} is protected and cannot be turned off")
    known = {tool["name"] for tool in listed(hub, user)} | disabled_tools(hub.db, user)
    if name not in known:
        raise NoSuchTool(f"you have no tool named {name}")
    set_tool_enabled(hub.db, user, name, enabled=wanted)
    now = [tool for tool in listed(hub, user) if tool["name"] == name]
    gone = {"name": name, "tier": "", "on": wanted, "protected": False, "description": ""}
    shown = now[0] if now else gone  # a forged tool since removed: turned on or off all the same
    return web.json_response(shown)


@routes.post(ONE_TOOL + "/run")
@access(Access.USER)
@documented(
    Operation(
        "try one of your forged tools with an input, in the sandbox, as a turn would call it",
        body=closed(input=obj()),
        answers={200: obj({"ok": BOOLEAN, "result": STRING})},
        errors=(404,),
    )
)
async def run_tool(request: web.Request) -> web.Response:
    body = await _object_body(request, ("input",))
    given = body.get("input", {})
    if not isinstance(given, dict):
        raise ToolRefused("input must be a JSON object")
    hub, user = request.app[HUB], signed_in(request)
    forged = ForgeStore(hub.db).named(user.id, request.match_info["name"])
    if forged is None:
        raise NoSuchTool(f"you have no forged tool named {request.match_info['name']}")
    succeeded, result = await ran(hub.sandbox, forged, given)
    return web.json_response({"ok": succeeded, "result": result})
