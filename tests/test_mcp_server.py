"""The hub as an MCP server: a client written with the ``mcp`` package lists what the owner
exposed, gets the answers the hub's agent gets, is refused without the right token, and every
hardware call lands in the driver audit log."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import ClientSession, MCPError, stdio_client
from mcp_types import ImageContent, TextResourceContents

from drivers.flipper.tools import flipper_status
from fakes.camera import EmulatedCamera
from fakes.ollama import FakeOllama, Reply
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from harness.machine import camera_on
from harness.waits import until
from hub.agent.tools.context import ToolContext
from hub.agent.tools.memory import recall
from hub.api.server import RunningServer
from hub.cli import main
from hub.mcp_server.clients import McpClients
from hub.people.preferences import set_tool_enabled
from hub.store.migrations import open_database
from media.video import is_jpeg
from tests.conftest import StartHub, owner_headers, settings_for
from tests.mcp_client import http_session, stdio_params, stdio_session, texts
from tests.toolcall import call_tool, use_tool

MEMORY_TOOLS = {"learn", "recall", "unlearn", "memory_graph"}
FLIPPER_TOOLS = {"flipper_status", "flipper_listen", "flipper_files", "flipper_find"}


def owner_token(server: RunningServer) -> str:
    return server.hub.settings.owner_token_path.read_text().strip()


async def listed(server: RunningServer, token: str) -> set[str]:
    async with http_session(server.url, token) as session:
        return {tool.name for tool in (await session.list_tools()).tools}


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    return await start_hub()


@pytest.fixture
def emulator(tmp_path: Path) -> Any:
    device = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    device.start()
    yield device
    device.stop()


@pytest.fixture
async def flipper_hub(start_hub: StartHub, emulator: FlipperEmulator, tmp_path: Path) -> Any:
    server = await start_hub(
        drivers={"flipper": {"port": str(tmp_path / "flipper")}},
        mcp_server_groups=["memory", "drivers"],
    )

    def online() -> bool:
        return any(
            r["driver"] == "flipper" and r["status"] == "online"
            for r in server.hub.drivers.records()
        )

    await until(online, what="the emulated Flipper online")
    return server


async def test_the_default_exposes_memory_and_ask_tiny_and_no_hardware(
    server: RunningServer,
) -> None:
    names = await listed(server, owner_token(server))
    assert names == {*MEMORY_TOOLS, "ask_tiny"}


async def test_a_tool_the_owner_turned_off_is_off_for_clients_too(server: RunningServer) -> None:
    set_tool_enabled(server.hub.db, server.hub.owner, "memory_graph", False)
    assert await listed(server, owner_token(server)) == {*MEMORY_TOOLS, "ask_tiny"} - {
        "memory_graph"
    }


async def test_recall_over_mcp_answers_as_the_agents_recall(server: RunningServer) -> None:
    hub = server.hub
    hub.memory.learn(hub.owner.id, "Ada's sister Mia lives in Lyon")
    hub.memory.learn(hub.owner.id, "Ada takes her coffee black")
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    agents = call_tool(recall, ToolContext(hub, hub.owner, tiny), query="where does Mia live?")
    async with http_session(server.url, owner_token(server)) as session:
        result = await session.call_tool("recall", {"query": "where does Mia live?"})
    assert not result.is_error
    assert texts(result)[0] == agents["content"][0]["text"]
    assert "Lyon" in texts(result)[0]
    assert result.structured_content == agents["content"][1]["json"]


async def test_anonymous_and_wrong_tokens_are_refused(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    member = server.hub.identity.issue_token(server.hub.identity.add_user("bea"), "test")
    for headers, status in (
        ({}, 401),
        ({"Authorization": "Bearer tk_not-a-token"}, 401),
        ({"Authorization": "Basic abc"}, 401),
        ({"Authorization": f"Bearer {member}"}, 403),
    ):
        async with http.post(f"{server.url}/mcp", json=hello, headers=headers) as response:
            body = await response.json()
            assert response.status == status, (headers, body)
            assert "error" in body
    with pytest.raises(Exception):  # noqa: B017 - the client's own failure type is its choice
        await listed(server, "tk_not-a-token")


async def test_a_named_client_token_opens_mcp_only_until_removed(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    clients = McpClients(server.hub.db)
    token = clients.add("claude-desktop")
    assert "recall" in await listed(server, token)
    async with http.get(
        f"{server.url}/api/devices", headers={"Authorization": f"Bearer {token}"}
    ) as response:
        assert response.status == 401, "a client token is not the owner's token elsewhere"
    assert [c.name for c in clients.list()] == ["claude-desktop"]
    assert clients.list()[0].last_used_at is not None
    assert clients.remove("claude-desktop")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {token}"}
    async with http.post(f"{server.url}/mcp", json=hello, headers=headers) as response:
        assert response.status == 401


async def test_flipper_status_over_mcp_answers_as_the_agent_and_is_audited(
    flipper_hub: RunningServer, http: aiohttp.ClientSession
) -> None:
    server = flipper_hub
    names = await listed(server, owner_token(server))
    assert names >= FLIPPER_TOOLS and "camera_photo" not in names and "use_device" not in names
    agents = await use_tool(server, flipper_status)
    async with http_session(server.url, owner_token(server)) as session:
        result = await session.call_tool("flipper_status", {})
    assert not result.is_error, texts(result)
    assert texts(result)[0] == agents["content"][0]["text"]
    assert "Unyana" in texts(result)[0]
    async with http.get(
        f"{server.url}/api/drivers/audit", headers=owner_headers(server)
    ) as response:
        commands = (await response.json())["commands"]
    by_mcp = [c for c in commands if c["driver"] == "mcp"]
    assert [(c["device_id"], c["command"]) for c in by_mcp] == [("mcp:owner", "flipper_status {}")]
    flipper_ids = [c["id"] for c in commands if c["driver"] == "flipper"]
    assert flipper_ids and max(flipper_ids) > by_mcp[0]["id"], "the Flipper was asked after"


async def test_a_hardware_group_turned_off_is_neither_listed_nor_callable(
    server: RunningServer,
) -> None:
    async with http_session(server.url, owner_token(server)) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        result = await session.call_tool("flipper_status", {})
    assert not names & FLIPPER_TOOLS
    assert result.is_error and "not have exposed it" in texts(result)[0]
    assert server.hub.audit.recent() == [], "a refused call touches no hardware"


async def test_resources_are_the_recent_facts_and_the_devices(start_hub: StartHub) -> None:
    server = await start_hub(mcp_server_groups=["memory", "devices"])
    hub = server.hub
    hub.memory.learn(hub.owner.id, "Ada's bike is the blue one")
    hub.devices.registry.enroll(hub.owner.id, name="laptop", kind="daemon")
    async with http_session(server.url, owner_token(server)) as session:
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        facts = await session.read_resource("tiny-hub://memory/recent")
        devices = await session.read_resource("tiny-hub://devices")
    assert uris == {"tiny-hub://memory/recent", "tiny-hub://devices"}
    assert isinstance(facts.contents[0], TextResourceContents)
    assert isinstance(devices.contents[0], TextResourceContents)
    assert [f["fact"] for f in json.loads(facts.contents[0].text)["facts"]] == [
        "Ada's bike is the blue one"
    ]
    listed_devices = json.loads(devices.contents[0].text)["devices"]
    assert [(d["name"], d["online"]) for d in listed_devices] == [("laptop", False)]


async def test_flipper_status_over_stdio_answers_as_the_agent(
    flipper_hub: RunningServer,
) -> None:
    agents = await use_tool(flipper_hub, flipper_status)
    async with stdio_session(flipper_hub) as session:
        result = await session.call_tool("flipper_status", {})
    assert not result.is_error and texts(result)[0] == agents["content"][0]["text"]


async def test_the_stdio_command_bridges_to_the_running_hub(start_hub: StartHub) -> None:
    server = await start_hub(mcp_server_groups=["memory"])
    hub = server.hub
    hub.memory.learn(hub.owner.id, "Ada's sister Mia lives in Lyon")
    async with stdio_session(server) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        result = await session.call_tool("recall", {"query": "where does Mia live?"})
    assert names == MEMORY_TOOLS
    assert "Lyon" in texts(result)[0] and not result.is_error


async def test_the_stdio_command_says_when_the_hub_is_not_running(
    server: RunningServer, closed_port: int
) -> None:
    params = stdio_params(server, "--url", f"http://127.0.0.1:{closed_port}")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with pytest.raises(MCPError, match="is `tiny-hub serve` running"):
            await session.initialize()


async def test_a_photo_comes_back_as_image_content_and_is_audited(start_hub: StartHub) -> None:
    camera = EmulatedCamera(size=(320, 240))
    server = await start_hub(**camera_on(camera), mcp_server_groups=["senses"])
    async with http_session(server.url, owner_token(server)) as session:
        result = await session.call_tool("camera_photo", {})
    assert not result.is_error, texts(result)
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert [image.mime_type for image in images] == ["image/jpeg"]
    assert is_jpeg(base64.b64decode(images[0].data))
    assert "Photo taken" in texts(result)[0]
    audited = [(c["driver"], c["command"]) for c in server.hub.audit.recent()]
    assert audited == [("mcp", "camera_photo {}")]


def test_the_token_command_adds_lists_and_removes_named_clients(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "token", "add", "claude-desktop", "--home", str(home)]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    db = open_database(settings_for(home).db_path)
    try:
        client = McpClients(db).resolve(token)
    finally:
        db.conn.close()
    assert client is not None and client.name == "claude-desktop"
    assert main(["mcp", "token", "list", "--home", str(home)]) == 0
    assert capsys.readouterr().out.startswith("claude-desktop\t")
    assert main(["mcp", "token", "add", "claude-desktop", "--home", str(home)]) == 2
    assert "already a client named" in capsys.readouterr().err
    assert main(["mcp", "token", "remove", "claude-desktop", "--home", str(home)]) == 0
    assert main(["mcp", "token", "remove", "claude-desktop", "--home", str(home)]) == 2
    assert "no MCP client named claude-desktop" in capsys.readouterr().err


async def test_malformed_requests_get_a_4xx_never_a_500(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    auth = {"Authorization": f"Bearer {owner_token(server)}"}
    accept = {"Accept": "application/json, text/event-stream", **auth}
    cases: list[tuple[str, dict[str, str], Any]] = [
        ("POST", {**accept, "Content-Type": "application/json"}, b"{not json"),
        ("POST", {**accept, "Content-Type": "application/json"}, b'{"jsonrpc": "2.0"}'),
        ("POST", {**accept, "Content-Type": "application/json"}, b"[]"),
        ("POST", {**accept, "Content-Type": "text/plain"}, b"hello"),
        ("POST", {**auth, "Content-Type": "application/json"}, b'{"jsonrpc":"2.0","id":1}'),
        ("GET", accept, None),  # no standing event stream: 405
        ("DELETE", accept, None),
    ]
    for method, headers, body in cases:
        async with http.request(
            method, f"{server.url}/mcp", headers=headers, data=body
        ) as response:
            await response.read()
            assert 400 <= response.status < 500, (method, body, response.status)


async def test_ask_tiny_is_a_turn_of_the_hubs_own_agent(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["Mia", " lives in", " Lyon."]))
    async with http_session(server.url, owner_token(server)) as session:
        answered = await session.call_tool("ask_tiny", {"prompt": "where does Mia live?"})
        empty = await session.call_tool("ask_tiny", {"prompt": "  "})
    assert not answered.is_error and texts(answered) == ["Mia lives in Lyon."]
    assert empty.is_error and "prompt must be" in texts(empty)[0]
    asked = json.dumps(fake_ollama.requests[-1]) if fake_ollama.requests else ""
    assert "where does Mia live?" in asked


async def test_mcp_over_http_turned_off_is_a_404_even_for_the_owner(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(mcp_server_http=False)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {owner_token(server)}"}
    async with http.post(f"{server.url}/mcp", json=hello, headers=headers) as response:
        assert response.status == 404
        assert "[mcp_server] http = false" in (await response.json())["error"]
