"""The hub's MCP server held to the specification (streamable HTTP, 2025-11-25) by clients we
did not write: the ``mcp`` package's own client, and the MCP Inspector's CLI where Node can run
it. Each test is one place where a client of the spec would otherwise stumble."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest
from mcp import ClientSession, MCPError, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from hub import __version__
from hub.api.server import RunningServer
from hub.cli import main
from tests.conftest import StartHub
from tests.mcp_client import http_session, stdio_params

ALL_GROUPS = ["memory", "agent", "devices", "drivers", "senses"]
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


def owner_token(server: RunningServer) -> str:
    return server.hub.settings.owner_token_path.read_text().strip()


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    return await start_hub(mcp_server_groups=ALL_GROUPS)


async def test_a_401_says_how_to_authenticate(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    for headers, error in (
        ({}, None),
        ({"Authorization": "Bearer tk_not-a-token"}, "invalid_token"),
    ):
        async with http.post(f"{server.url}/mcp", json=HELLO, headers=headers) as response:
            await response.read()
            assert response.status == 401
            challenge = response.headers.get("WWW-Authenticate", "")
        assert challenge.startswith("Bearer "), challenge
        assert 'realm="tiny-hub"' in challenge
        assert (f'error="{error}"' in challenge) if error else "error=" not in challenge


async def test_the_server_says_its_version(server: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {owner_token(server)}"}
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(f"{server.url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
    assert initialized.server_info.name == "tiny-hub"
    assert initialized.server_info.version == __version__


async def test_resource_templates_are_listed_with_the_resources(server: RunningServer) -> None:
    async with http_session(server.url, owner_token(server)) as session:
        resources = await session.list_resources()
        templates = await session.list_resource_templates()
    assert resources.resources, "the resources capability is declared and used"
    assert templates.resource_templates == []


async def test_a_bad_protocol_version_header_is_named_in_the_answer(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    headers = {
        "Authorization": f"Bearer {owner_token(server)}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "1999-01-01",
    }
    async with http.post(f"{server.url}/mcp", json=HELLO, headers=headers) as response:
        body = await response.json()
    assert response.status == 400
    said = json.dumps(body)
    assert "MCP-Protocol-Version" in said and "1999-01-01" in said, said
    assert "2025-11-25" in said, "the versions it does speak are named"
    assert "_meta" not in said, said


async def test_every_default_is_valid_against_its_own_schema(server: RunningServer) -> None:
    async with http_session(server.url, owner_token(server)) as session:
        tools = (await session.list_tools()).tools
    checked = 0
    for tool in tools:
        for name, schema in tool.input_schema.get("properties", {}).items():
            if "default" in schema:
                checked += 1
                try:
                    jsonschema.validate(schema["default"], schema)
                except jsonschema.ValidationError as exc:
                    pytest.fail(f"{tool.name}.{name}: default {schema['default']!r}: {exc.message}")
    assert checked, "some tool has a default to check"
    learn = next(tool for tool in tools if tool.name == "learn")
    assert "supersedes" in learn.input_schema["properties"]


async def test_the_stdio_bridge_says_a_token_was_refused(server: RunningServer) -> None:
    params = stdio_params(server, "--url", server.url, "--token", "tk_not-a-token")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        with pytest.raises(MCPError) as refused:
            await session.initialize()
    said = str(refused.value)
    assert "invalid token" in said and "401" in said, said
    assert "Server returned an error response" not in said


def test_token_list_shows_dates_a_person_reads(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "token", "add", "claude-desktop", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["mcp", "token", "list", "--home", str(home)]) == 0
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(
        r"claude-desktop\tadded \d{4}-\d\d-\d\d \d\d:\d\d\tlast used never", line
    ), line


def inspector_command() -> list[str] | None:
    """The Inspector's CLI if it runs here: Node's npx, and the package in npm's cache (the
    suite never downloads it: ``scripts/bench mcp_inspector`` or ``npx -y`` once fetches it)."""
    npx = shutil.which("npx")
    if npx is None:
        return None
    probe = subprocess.run(
        [npx, "--offline", "-y", INSPECTOR, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return [npx, "--offline", "-y", INSPECTOR] if probe.returncode == 0 else None


@pytest.mark.slow
@pytest.mark.parametrize(
    "method",
    [
        ["--method", "tools/list"],
        ["--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=garden"],
        ["--method", "resources/list"],
        ["--method", "resources/templates/list"],
    ],
    ids=lambda m: m[1],
)
async def test_the_mcp_inspector_cli_exits_0_against_tiny_hub_mcp(
    server: RunningServer, method: list[str]
) -> None:
    command = inspector_command()
    if command is None:
        pytest.skip(
            f"needs Node's npx with {INSPECTOR} in npm's cache; the same four requests go "
            "through the mcp package's client in this module"
        )
    env = {**os.environ, "TINY_HUB_HOME": str(server.hub.settings.home)}
    bridge = [sys.executable, "-m", "hub.cli", "mcp", "--url", server.url]
    inspector = await asyncio.create_subprocess_exec(
        *command,
        "--cli",
        *bridge,
        *method,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(inspector.communicate(), timeout=300)
    assert inspector.returncode == 0, (out + err).decode()
    answer: Any = json.loads(out)
    assert isinstance(answer, dict) and answer
