"""Every route's access policy is written in docs/http-api.md and enforced: none ships open.

The route table of docs/http-api.md has one row per method and path, and its "who" column says
``anyone``, ``user``, ``owner``, ``device`` (a dial-in device's ``{deviceId, token}`` in the body)
or ``client`` (an MCP client: the owner's token or a named client's). These tests hold the
application's route table, each handler's ``@access`` declaration and that column to one another,
then ask a running hub whether it really refuses callers. The routes of the drivers installed with
the hub are in the application's table, so they need their rows too; a driver package's routes carry
the access their driver declares, which test_driver_plugins.py holds a running hub to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from hub.api.app import create_app
from hub.api.auth import Access, declared_access
from hub.api.limits import GUARD, Limits
from hub.api.server import RunningServer
from hub.runtime.hub import Hub
from tests.conftest import StartHub, settings_for

ROUTES_DOC = Path(__file__).resolve().parent.parent / "docs" / "http-api.md"
WHO = ("anyone", "user", "owner", "device", "client")
_ROW = re.compile(r"^\|\s*`([A-Z]+) ([^`\s]+)[^`]*`\s*\|\s*([^|]*?)\s*\|")

Route = tuple[str, str]  # (method, path as aiohttp spells it: /archive/{id})


def readme_policy() -> dict[Route, str]:
    """The route table of docs/http-api.md's "## Routes" section: (method, path) → who."""
    text = ROUTES_DOC.read_text(encoding="utf-8")
    section = text.split("\n## Routes\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("| route | who | what |", 1)[1].split("\n\n", 1)[0]
    policy: dict[Route, str] = {}
    for line in table.splitlines()[2:]:
        match = _ROW.match(line)
        assert match, f"route row not in the form | `METHOD /path` | who | what |: {line}"
        method, raw_path, who = match.groups()
        path = re.sub(r"<([^>]+)>", r"{\1}", raw_path.split("?", 1)[0])
        assert who in WHO, f"{method} {path}: who is {who!r}, not one of {', '.join(WHO)}"
        assert (method, path) not in policy, f"{method} {path} is listed twice in docs/http-api.md"
        policy[(method, path)] = who
    return policy


def app_routes(app: web.Application) -> dict[Route, Any]:
    """(method, path) → handler for every route, without the HEAD aiohttp adds to each GET."""
    routes: dict[Route, Any] = {}
    for route in app.router.routes():
        if route.method in ("HEAD", "OPTIONS") or route.resource is None:
            continue
        routes[(route.method, route.resource.canonical)] = route.handler
    return routes


def declared_who(handler: Any) -> str:
    """The docs' word for what the handler declares (a dial-in route, ``Access.DEVICE``, is
    anonymous to the auth middleware and authenticates ``{deviceId, token}`` in the body)."""
    return {
        Access.DEVICE: "device",
        Access.ANONYMOUS: "anyone",
        Access.USER: "user",
        Access.OWNER: "owner",
        Access.CLIENT: "client",
    }[declared_access(handler)]


@pytest.fixture
def routes(home: Path) -> dict[Route, Any]:
    hub = Hub.open(settings_for(home))
    try:
        return app_routes(create_app(hub))
    finally:
        hub.close()


def test_readme_names_only_words_it_defines() -> None:
    assert readme_policy(), "the route table in docs/http-api.md is empty or missing"


def test_every_route_is_in_the_readme(routes: dict[Route, Any]) -> None:
    missing = sorted(set(routes) - set(readme_policy()))
    assert not missing, f"routes with no row in the route table in docs/http-api.md: {missing}"


def test_the_readme_lists_no_route_the_app_lacks(routes: dict[Route, Any]) -> None:
    extra = sorted(set(readme_policy()) - set(routes))
    assert not extra, f"rows in docs/http-api.md for routes the application does not have: {extra}"


def test_each_handler_declares_what_the_readme_says(routes: dict[Route, Any]) -> None:
    policy = readme_policy()
    wrong = {
        f"{method} {path}": f"docs {policy[(method, path)]}, handler {declared_who(handler)}"
        for (method, path), handler in routes.items()
        if (method, path) in policy and declared_who(handler) != policy[(method, path)]
    }
    assert not wrong, f"docs/http-api.md and the handlers disagree: {wrong}"


# --- behaviour: a running hub refuses who it should --------------------------------------------


def concrete(path: str) -> str:
    """A path with dummy values for its parameters."""
    return re.sub(r"\{[^}]+\}", "nothing-here", path)


async def request(
    server: RunningServer,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, server.url + concrete(path), headers=headers, json=body) as response,
    ):
        payload = await response.json(content_type=None) if response.status >= 400 else {}
        return response.status, payload if isinstance(payload, dict) else {}


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    running = await start_hub()
    # This test is about who may call, not how often: make room for one request per route.
    running.runner.app[GUARD].limits = Limits(address_burst=10_000, token_burst=10_000)
    return running


def routes_for(server: RunningServer, *who: str) -> list[Route]:
    policy = readme_policy()
    return [
        route
        for route, handler in app_routes(server.runner.app).items()
        if policy.get(route, declared_who(handler)) in who
    ]


async def test_anonymous_callers_get_401_from_every_user_and_owner_route(
    server: RunningServer,
) -> None:
    checked = routes_for(server, "user", "owner")
    assert len(checked) > 20
    for method, path in checked:
        status, payload = await request(server, method, path)
        assert status == 401, f"{method} {path} answered an anonymous caller with {status}"
        assert "sign in required" in payload.get("error", ""), (method, path, payload)


async def test_a_member_gets_403_from_every_owner_route(server: RunningServer) -> None:
    identity = server.hub.identity
    token = identity.issue_token(identity.add_user("member"), "route policy test")
    checked = routes_for(server, "owner")
    assert checked
    for method, path in checked:
        status, _ = await request(server, method, path, {"Authorization": f"Bearer {token}"})
        assert status == 403, f"{method} {path} answered a non-owner with {status}"


async def test_device_routes_refuse_a_wrong_device_token(server: RunningServer) -> None:
    checked = routes_for(server, "device")
    assert checked
    for method, path in checked:
        for body in ({}, {"deviceId": "nothing-here", "token": "wrong"}):
            status, payload = await request(server, method, path, body=body)
            assert status == 401, f"{method} {path} with {body} answered {status}: {payload}"


async def test_anyone_routes_do_not_ask_for_a_sign_in(server: RunningServer) -> None:
    checked = routes_for(server, "anyone")
    assert ("GET", "/api/health") in checked
    for method, path in checked:
        status, payload = await request(server, method, path, body={})
        assert status != 403, (method, path, payload)
        assert "sign in required" not in payload.get("error", ""), (method, path, payload)
