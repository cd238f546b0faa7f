"""Every URL the hub dials on a person's behalf meets one address policy (``hub.core.netguard``).

The source is read for every place that opens an outbound HTTP connection (an aiohttp session or
connector, an httpx client or transport, a provider's client, ``urlopen``); each must be listed
here, either as guarded (its function names the policy's piece it goes through) or as a dial
the person does not steer (the hub's own config, its own API, a fixed public service). A new site
fails this test until it is listed, so none can skip the policy unnoticed. Then the policy is
tried on real loopback listeners: saved, probed, dialled.
"""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from hub.core.netguard import Allowance, GuardedConnector
from hub.people.preferences import SavedModel, save_model
from tests.conftest import StartHub
from tests.test_model_access import Listener

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("hub", "drivers", "tui", "media", "firmware_bridges")
DIALLERS = frozenset(
    {
        "ClientSession",
        "TCPConnector",
        "AsyncClient",
        "AsyncHTTPTransport",
        "AsyncOpenAI",
        "OllamaModel",
        "OpenAIModel",
        "AnthropicModel",
        "GeminiModel",
        "BedrockModel",
        "urlopen",
        "sse_client",
        "streamable_http_client",
        "open_connection",
        "create_connection",
    }
)

# site → what in the same function proves the dial goes through the policy.
GUARDED = {
    "hub/agent/mcp.py:_Client._open_transport:sse_client": "http_client(",
    "hub/agent/mcp.py:_streamable_http:streamable_http_client": "http_client(",
    "hub/agent/mcp.py:http_client:AsyncHTTPTransport": "_guarded_transport_class",
    "hub/agent/mcp.py:http_client:AsyncClient": "_guarded_transport_class",
    "hub/agent/model_access.py:guarded_transport:AsyncHTTPTransport": "GuardedBackend",
    "hub/agent/model_access.py:guarded_httpx_client:AsyncClient": "guarded_transport",
    "hub/agent/model_access.py:guarded_openai_client:AsyncOpenAI": "guarded_httpx_client",
    "hub/agent/models.py:ollama_capabilities:ClientSession": "guarded_aiohttp_connector",
    "hub/agent/models.py:ModelRouter.build:OllamaModel": "guarded_client_args",
    "hub/agent/models.py:build_cloud_model:OpenAIModel": "guarded_openai_client",
    "hub/devices/endpoint.py:EndpointClient._exchange:TCPConnector": "resolve_checked",
    "hub/devices/endpoint.py:EndpointClient._exchange:ClientSession": "resolve_checked",
    "hub/tinys/guarded.py:send:ClientSession": "_checked(",
    "hub/tinys/guarded.py:send:TCPConnector": "PinnedResolver",
}
# site → why no person steers where it goes.
NOT_A_PERSONS = {
    "hub/agent/models.py:probe_ollama:ClientSession": "the owner's ollama.host, as configured",
    "hub/agent/models.py:build_cloud_model:AnthropicModel": "Anthropic's own API; no base URL",
    "hub/agent/models.py:build_cloud_model:GeminiModel": "Google's own API; no base URL",
    "hub/agent/models.py:build_cloud_model:BedrockModel": "AWS's own API; no base URL",
    "hub/cli/doctor.py:_health:urlopen": "this hub's own /api/health",
    "hub/client/http.py:HubClient.open:ClientSession": "the TUI's and CLI's hub",
    "hub/client/http.py:HubClient._request:ClientSession": "the TUI's and CLI's hub",
    "hub/cloud/client.py:CloudClient._call:ClientSession": "the cloud the owner joined",
    "hub/cloud/memory_sync.py:MemoryCloud._call:ClientSession": "the cloud the owner joined",
    "hub/mcp_server/stdio.py:_carry:streamable_http_client": "this hub's own /mcp",
    "hub/mcp_server/stdio.py:hub_client:AsyncClient": "this hub's own /mcp",
    "hub/mcp_server/stdio.py:hub_client:AsyncHTTPTransport": "this hub's own /mcp",
    "hub/telegram/poller.py:TelegramPoller.start:ClientSession": "api.telegram.org",
    "hub/telegram/setup.py:call_bot:ClientSession": "api.telegram.org",
    "firmware_bridges/emulators/phone.py:EmulatedPhone.start:ClientSession": "an emulator's hub",
}


def dialling_sites() -> dict[str, str]:
    """site (``path:function:call``) → the source of the function it is in."""
    found: dict[str, str] = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            relative = path.relative_to(ROOT).as_posix()
            _visit(ast.parse(text), [], relative, text, text, found)
    return found


def _visit(
    node: ast.AST, names: list[str], path: str, text: str, scope: str, found: dict[str, str]
) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = ast.get_source_segment(text, child) or ""
            _visit(child, [*names, child.name], path, text, inner, found)
            continue
        if isinstance(child, ast.Call):
            func = child.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in DIALLERS:
                found[f"{path}:{'.'.join(names)}:{called}"] = scope
        _visit(child, names, path, text, scope, found)


def test_every_dialling_site_is_listed_and_the_guarded_ones_go_through_the_policy() -> None:
    sites = dialling_sites()
    unlisted = sorted(set(sites) - set(GUARDED) - set(NOT_A_PERSONS))
    assert not unlisted, f"dialling sites neither guarded nor explained here: {unlisted}"
    gone = sorted((set(GUARDED) | set(NOT_A_PERSONS)) - set(sites))
    assert not gone, f"listed here but no longer in the source: {gone}"
    unguarded = sorted(site for site, mark in GUARDED.items() if mark not in sites[site])
    assert not unguarded, f"listed as guarded, but their function skips the policy: {unguarded}"


# --- the policy on real listeners -----------------------------------------------------------


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener(body=b'{"capabilities": ["tools"]}')
    await found.start()
    yield found
    assert found.server is not None
    found.server.close()


async def test_the_guarded_connector_refuses_an_ip_literal(listener: Listener) -> None:
    """aiohttp never asks a resolver about an IP literal; the connector checks it anyway."""
    for host in ("127.0.0.1", "[::ffff:127.0.0.1]", "localhost"):
        async with aiohttp.ClientSession(connector=GuardedConnector(Allowance())) as http:
            with pytest.raises(aiohttp.ClientConnectorError, match="loopback"):
                await http.get(f"http://{host}:{listener.port}/")
    assert listener.connections == 0


@pytest.mark.parametrize(
    "base",
    [
        "http://127.0.0.1:{port}/api/pull?",
        "http://127.0.0.1:{port}",
        "http://localhost:{port}",
        "http://2130706433:{port}",
        "http://10.0.0.1:{port}",
        "https://example.com/v1?x=1",
        "https://example.com/v1#frag",
        "https://user:pw@example.com/v1",
    ],
)
async def test_a_member_cannot_save_a_base_the_policy_refuses(
    start_hub: StartHub, listener: Listener, http: aiohttp.ClientSession, base: str
) -> None:
    server = await start_hub()
    member = server.hub.identity.add_user("guest")
    auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
    saved = {
        "provider": "ollama",
        "id": "attacker/model:latest",
        "baseUrl": base.format(port=listener.port),
    }
    async with http.put(f"{server.url}/api/model", json=saved, headers=auth) as put:
        assert put.status == 400, await put.text()
        assert "refused" in (await put.json())["error"]
    async with http.get(f"{server.url}/api/model", headers=auth) as got:
        assert (await got.json())["saved"] is None
    assert listener.connections == 0


async def test_a_members_health_never_probes_a_loopback_base(
    start_hub: StartHub, listener: Listener, http: aiohttp.ClientSession
) -> None:
    """A base saved before the check (or written by hand) is refused when health probes it:
    nothing reaches the listener, and the answer says no tools, whatever listens there."""
    server = await start_hub()
    member = server.hub.identity.add_user("guest")
    auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
    for base in (
        f"http://127.0.0.1:{listener.port}/api/pull?",
        f"http://127.0.0.1:{listener.port}",
    ):
        save_model(server.hub.db, member, SavedModel("ollama", "attacker/model:latest", base))
        async with http.get(f"{server.url}/api/health", headers=auth) as response:
            assert response.status == 200
            model = (await response.json())["model"]
        assert model["toolsCapable"] is False
    assert listener.connections == 0


async def test_the_owners_configured_ollama_is_the_loopback_that_is_dialled(
    start_hub: StartHub, listener: Listener, http: aiohttp.ClientSession
) -> None:
    """The owner's ollama.host is trusted as written, and a saved choice naming it passes."""
    server = await start_hub(ollama_host=f"http://127.0.0.1:{listener.port}")
    member = server.hub.identity.add_user("guest")
    auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
    saved = {"provider": "ollama", "id": "m", "baseUrl": f"http://127.0.0.1:{listener.port}"}
    async with http.put(f"{server.url}/api/model", json=saved, headers=auth) as put:
        assert put.status == 200, await put.text()


async def test_a_tiny_cannot_save_a_worker_or_mcp_server_on_loopback(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    member = server.hub.identity.add_user("guest")
    auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
    for fields in (
        {"name": "pivot", "worker": "http://127.0.0.1:11434/openapi.json"},
        {"name": "pivot", "worker": "http://0x7f.0.0.1/openapi.json"},
        {"name": "pivot", "mcpServers": [{"name": "m", "url": "http://localhost:9/mcp"}]},
        {"name": "pivot", "mcpServers": [{"name": "m", "url": "http://169.254.169.254/"}]},
    ):
        async with http.post(f"{server.url}/api/tinys", json=fields, headers=auth) as response:
            assert response.status == 400, await response.text()
            assert "is refused" in (await response.json())["error"]
    assert server.hub.tinys.get("pivot") is None
