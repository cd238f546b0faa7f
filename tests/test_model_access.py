"""Model base URLs a caller picks pass the network guard; the hub's key goes only to its own.

A loopback listener counts every connection it accepts: the proof that nothing reached it is
its count, not the hub's answer. Headers, saved choices and every provider family (Ollama,
OpenAI-compatible, custom) are tried, in the spellings the OS accepts for loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fakes.ollama import FakeOllama
from hub import contracts as c
from hub.agent.model_access import guarded_httpx_client, is_configured_url
from hub.agent.models import ModelChoice
from hub.api.limits import GUARD, Limits
from hub.core.netguard import Allowance
from hub.people.preferences import SavedModel, save_model
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import post_chat

CHAT = {"messages": [{"role": "user", "content": "hi"}]}


@dataclass
class Listener:
    """A loopback service that must never be reached: it counts connections and answers a
    secret, as an internal service would."""

    port: int = 0
    connections: int = 0
    server: asyncio.Server | None = None
    body: bytes = b'{"secret": "INTERNAL_SERVICE_DATA"}'

    async def start(self) -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            body = self.body
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(accepted, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener()
    await found.start()
    yield found
    assert found.server is not None
    found.server.close()


def spellings(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/v1",
        f"http://localhost:{port}/v1",
        f"http://127.1:{port}",
        f"http://2130706433:{port}",
        f"http://0x7f.0.0.1:{port}",
        f"http://[::ffff:127.0.0.1]:{port}",
        f"http://sub.localhost:{port}",
        f"127.0.0.1:{port}",
    ]


# Every provider: those that never dial a base URL are held to the same check, so no provider
# is the one that forgot.
PROVIDERS = (*c.LOCAL_PROVIDERS, *c.CLOUD_PROVIDERS)


async def test_no_model_header_reaches_a_loopback_listener(
    start_hub: StartHub, fake_ollama: FakeOllama, listener: Listener
) -> None:
    # dozens of anonymous turns: neither the rate limit nor the daily allowance answers them
    server = await start_hub(ollama_host=fake_ollama.url, anonymous_daily_chats=10_000)
    server.runner.app[GUARD].limits = Limits(address_burst=10_000)
    answers: list[tuple[int, str]] = []
    async with aiohttp.ClientSession() as http:
        for provider in PROVIDERS:
            for url in spellings(listener.port):
                headers = {
                    c.H_MODEL_PROVIDER: provider,
                    c.H_MODEL_ID: "m",
                    c.H_MODEL_BASE_URL: url,
                }
                async with http.post(
                    f"{server.url}/api/chat", json=CHAT, headers=headers
                ) as response:
                    answers.append((response.status, await response.text()))
    assert listener.connections == 0
    assert all(status == 400 for status, _ in answers), answers
    assert all("refused" in text for _, text in answers), answers
    assert not any("INTERNAL_SERVICE_DATA" in text for _, text in answers)


async def test_no_saved_choice_reaches_a_loopback_listener(
    start_hub: StartHub, fake_ollama: FakeOllama, listener: Listener
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    member = server.hub.identity.add_user("guest")
    auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
    async with aiohttp.ClientSession() as http:
        for provider in ("custom", "openai", "ollama"):
            saved = {"provider": provider, "id": "m", "baseUrl": spellings(listener.port)[0]}
            async with http.put(f"{server.url}/api/model", json=saved, headers=auth) as put:
                assert put.status == 400, await put.text()  # refused when saved
            # and one saved before that check (or by hand) is refused when a turn uses it
            save_model(server.hub.db, member, SavedModel(provider, "m", saved["baseUrl"]))
            async with http.post(f"{server.url}/api/chat", json=CHAT, headers=auth) as response:
                assert response.status == 400
                assert "refused" in (await response.json())["error"]
    assert listener.connections == 0


async def test_a_public_header_url_is_still_dialled(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    """The header keeps working: a public host passes the guard (here it only fails to
    resolve, inside the stream, because tests stay off the network)."""
    server = await start_hub(ollama_host=fake_ollama.url)
    choice = await server.hub.models.resolve(
        {c.H_MODEL_PROVIDER: "custom", c.H_MODEL_ID: "m", c.H_MODEL_BASE_URL: "https://1.1.1.1/v1"}
    )
    assert choice.base_url == "https://1.1.1.1/v1"


@dataclass
class Redirector:
    """An allowed host that redirects every request to the loopback listener."""

    target: str
    seen: list[str] = field(default_factory=list)
    runner: web.AppRunner | None = None
    url: str = ""

    async def start(self) -> None:
        async def redirect(request: web.Request) -> web.Response:
            self.seen.append(request.path)
            raise web.HTTPTemporaryRedirect(self.target + request.path)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", redirect)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://localhost:{port}"


@pytest.mark.parametrize("provider", ["ollama", "custom"])
async def test_a_redirect_to_loopback_is_refused_at_connect(
    start_hub: StartHub, fake_ollama: FakeOllama, listener: Listener, provider: str
) -> None:
    """The host ``localhost`` is allowed by name; the hop to 127.0.0.1 it redirects to is
    not, and the provider's own HTTP client meets the guard there."""
    redirector = Redirector(f"http://127.0.0.1:{listener.port}")
    await redirector.start()
    try:
        server = await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=["localhost"])
        headers = {
            c.H_MODEL_PROVIDER: provider,
            c.H_MODEL_ID: "m",
            c.H_MODEL_BASE_URL: redirector.url + ("/v1" if provider == "custom" else ""),
        }
        transcript = await post_chat(server.url, CHAT, headers)
    finally:
        assert redirector.runner is not None
        await redirector.runner.cleanup()
    assert redirector.seen, "the allowed host was dialled"
    assert listener.connections == 0
    errors = transcript.of_type(c.EV_ERROR)
    assert errors and "INTERNAL_SERVICE_DATA" not in str(errors)
    assert "127.0.0.1 is a loopback address" in errors[0]["error"]


async def test_the_guarded_client_checks_the_address_it_connects_to(listener: Listener) -> None:
    """Without any check before it (a name that resolved elsewhere a moment ago), the client
    itself refuses: the check sits where the connection is made."""
    async with guarded_httpx_client(Allowance()) as client:
        with pytest.raises(Exception, match="loopback"):
            await client.get(f"http://127.0.0.1:{listener.port}/")
    assert listener.connections == 0


async def test_the_owners_configured_url_is_trusted(home: Any, listener: Listener) -> None:
    settings = settings_for(
        home, model_base_url=f"http://127.0.0.1:{listener.port}/v1/", ollama_host="127.0.0.1:9"
    )
    assert is_configured_url(f"http://127.0.0.1:{listener.port}/v1", settings)
    assert is_configured_url("http://127.0.0.1:9", settings)
    assert is_configured_url("", settings)
    assert not is_configured_url(f"http://127.0.0.1:{listener.port}/v2", settings)


@dataclass
class KeyCatcher:
    """An OpenAI-compatible endpoint that records the Authorization header it receives."""

    authorizations: list[str] = field(default_factory=list)
    runner: web.AppRunner | None = None
    url: str = ""

    async def start(self) -> None:
        async def completions(request: web.Request) -> web.Response:
            self.authorizations.append(request.headers.get("Authorization", ""))
            return web.json_response({"error": {"message": "no model here"}}, status=404)

        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://localhost:{self.runner.addresses[0][1]}/v1"

    async def stop(self) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def test_the_hubs_key_never_goes_to_a_url_a_member_saved(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    owners, members = KeyCatcher(), KeyCatcher()
    await owners.start()
    await members.start()
    try:
        server = await start_hub(
            ollama_host=fake_ollama.url,
            model_provider="openai",
            model_id="gpt-x",
            model_api_key="sk-HUB-KEY",
            model_base_url=owners.url,
            http_allow_hosts=["localhost"],  # the member's host passes the guard: only the key
        )
        member = server.hub.identity.add_user("guest")
        auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(member, 'test')}"}
        async with aiohttp.ClientSession() as http:
            saved = {"provider": "openai", "id": "gpt-y", "baseUrl": members.url}
            async with http.put(f"{server.url}/api/model", json=saved, headers=auth) as put:
                assert put.status == 200
        await post_chat(server.url, CHAT, auth)
        await post_chat(server.url, CHAT, owner_headers(server))
    finally:
        await owners.stop()
        await members.stop()
    assert members.authorizations and owners.authorizations
    assert all("sk-HUB-KEY" not in header for header in members.authorizations)
    assert all(header == "Bearer sk-HUB-KEY" for header in owners.authorizations)


def test_a_choice_never_shows_its_key() -> None:
    choice = ModelChoice("openai", "m", True, "test", api_key="sk-secret")
    assert "sk-secret" not in repr(choice)
    assert "sk-secret" not in str(choice.describe())
