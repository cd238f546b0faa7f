"""A web page cannot use the hub: not by posting a form or plain text to it (no preflight), not
from another site's page (Origin), not by rebinding its own name to the hub (Host); the hub's
own clients (the TUI's and CLI's HubClient, phones, MCP clients) are unaffected. And every 405
says which methods the path serves.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub.api.limits import GUARD
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub, error_message, owner_headers
from tests.test_hardening import ROOMY
from tests.test_route_policy import app_routes, concrete

CHAT = {"messages": [{"role": "user", "content": "hi"}]}
EVIL = "https://evil.example"
STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    running = await start_hub(ollama_host=fake_ollama.url)
    running.runner.app[GUARD].limits = ROOMY
    return running


async def send(
    server: RunningServer, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, Any, dict[str, str]]:
    async with (
        aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as http,
        http.request(method, server.url + path, headers=headers, data=body or None) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text) if text else None, dict(response.headers)


async def test_the_attack_as_found_is_refused_and_runs_no_turn(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    """A rebound page posting a form: refused for its host, its origin and its body alike."""
    fake_ollama.script(Reply(chunks=["a turn on the owner's model"]))
    form = {"Origin": EVIL, "Content-Type": "application/x-www-form-urlencoded"}
    for headers in (
        {**form, "Host": "evil.example"},
        form,
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "text/plain;charset=UTF-8"},
        {},  # fetch() with a Blob body sends no Content-Type at all
    ):
        status, answer, _ = await send(
            server, "POST", "/api/chat", headers, json.dumps(CHAT).encode()
        )
        assert status in (403, 415), (headers, status, answer)
        assert "error" in answer
    assert fake_ollama.requests == []


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 403),
        ({"Host": "evil.example:8765"}, 403),
        ({"Host": "127.0.0.1"}, 200),
        ({"Host": "[::1]:8765"}, 200),
        ({"Host": "localhost:8765"}, 200),
        ({"Host": "tinyhub"}, 200),  # a one-word name: the LAN's own DNS, not the internet's
        ({"Host": "kitchen-hub.local"}, 200),
        ({"Host": "hub.home.arpa:8765"}, 200),
        ({"Origin": EVIL}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://127.0.0.1:1"}, 403),  # another port is another origin
    ],
)
async def test_host_and_origin_decide_before_anything_else(
    server: RunningServer, headers: dict[str, str], status: int
) -> None:
    got, answer, _ = await send(server, "GET", "/api/health", headers)
    assert got == status, answer
    if status == 403:
        assert "access.allowed_" in answer["error"]


async def test_the_page_the_hub_would_serve_itself_is_same_origin(server: RunningServer) -> None:
    headers = {"Origin": server.url, "Content-Type": "application/json", **owner_headers(server)}
    status, answer, _ = await send(server, "POST", "/learnings", headers, b'{"fact": "same"}')
    assert status == 200, answer


async def test_the_owner_can_allow_a_host_and_an_origin(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(
        ollama_host=fake_ollama.url,
        allowed_hosts=("hub.tail1234.ts.net",),
        allowed_origins=("https://dash.example",),
    )
    for headers in ({"Host": "hub.tail1234.ts.net"}, {"Origin": "https://dash.example"}):
        status, answer, _ = await send(server, "GET", "/api/health", headers)
        assert status == 200, (headers, answer)
    status, _, _ = await send(server, "GET", "/api/health", {"Host": "other.ts.net"})
    assert status == 403


async def test_every_state_changing_route_takes_json_only(server: RunningServer) -> None:
    body = json.dumps({"deviceId": "x", "token": "y"}).encode()
    refused = {}
    for method, path in app_routes(server.runner.app):
        if method not in STATE_CHANGING:
            continue
        headers = {"Content-Type": "text/plain", **owner_headers(server)}
        status, answer, _ = await send(server, method, concrete(path), headers, body)
        refused[f"{method} {path}"] = status
        assert status == 415, (method, path, answer)
        assert "Content-Type: application/json" in error_message(answer)
    assert len(refused) >= 40


async def test_mcp_refuses_another_sites_page(server: RunningServer) -> None:
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **owner_headers(server),
    }
    status, answer, _ = await send(server, "POST", "/mcp", {**headers, "Origin": EVIL}, ping)
    assert status == 403, answer
    status, answer, _ = await send(server, "POST", "/mcp", headers, ping)
    assert status == 200 and answer["id"] == 1


async def test_every_405_says_what_is_allowed(server: RunningServer) -> None:
    served: dict[str, set[str]] = {}
    for method, path in app_routes(server.runner.app):
        served.setdefault(path, set()).add(method)
    for path, methods in served.items():
        unserved = next(m for m in ("PATCH", "PUT", "DELETE", "POST", "GET") if m not in methods)
        headers = owner_headers(server)
        status, answer, headers = await send(server, unserved, concrete(path), headers)
        assert status == 405, (unserved, path, answer)
        allowed = {m.strip() for m in headers["Allow"].split(",")}
        assert methods <= allowed, (path, headers["Allow"])
    status, _, headers = await send(server, "GET", "/mcp", owner_headers(server))
    assert (status, headers["Allow"]) == (405, "POST")


async def test_the_hubs_own_client_is_unaffected(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    """HubClient (the TUI's and the CLI's): health, a JSON call, a bodiless POST, a chat."""
    fake_ollama.script(Reply(chunks=["hello"]))
    token = owner_headers(server)["Authorization"].split(" ", 1)[1]
    async with HubClient(server.url, token) as client:
        assert (await client.health())["ok"]
        assert (await client.call("POST", "/learnings", body={"fact": "tea, no sugar"}))["ok"]
        offer = await client.call("POST", "/api/pair/offer")
        assert offer["code"]
        events = [e async for e in client.stream_chat(CHAT["messages"])]
    assert "hello" in json.dumps(events)
