"""The hub's limits, on real hubs: oversized bodies, request rates, and slow (trickled) bodies.

Each test tightens the running hub's limits through ``app[GUARD]`` so it needs no big payloads
and no long waits; the assertions are about what happened, never how long it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from hub import contracts as c
from hub.api.limits import GUARD, Guard, Limits
from hub.api.server import RunningServer
from tests.conftest import StartHub, error_message, owner_headers
from tests.test_route_policy import app_routes, concrete

ROOMY = Limits(address_burst=10_000, token_burst=10_000)


def guard(server: RunningServer) -> Guard:
    return server.runner.app[GUARD]


def tighten(server: RunningServer, **limits: Any) -> None:
    guard(server).limits = replace(ROOMY, **limits)


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    running = await start_hub()
    tighten(running)
    return running


# --- raw HTTP, for what aiohttp's client will not do (lie about a length, trickle) -------------


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], Any]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines if line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, json.loads(body) if body else None


@contextlib.asynccontextmanager
async def raw_connection(
    server: RunningServer,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def request_head(method: str, path: str, length: int, extra: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


# --- body size ---------------------------------------------------------------------------------


async def test_a_huge_content_length_is_a_413_on_every_route_before_any_body(
    server: RunningServer,
) -> None:
    """Only the headers are sent: an answer at all proves the hub did not wait for the body."""
    routes = app_routes(server.runner.app)
    assert ("POST", "/api/media") in routes
    for method, path in routes:
        async with raw_connection(server) as (reader, writer):
            writer.write(request_head(method, concrete(path), 10**12))
            await writer.drain()
            status, headers, body = await read_response(reader)
        assert status == 413, f"{method} {path} answered {status}"
        assert "body too large" in error_message(body)
        assert headers.get("connection", "").lower() == "close"


@pytest.mark.parametrize(
    ("path", "auth"),
    [
        ("/api/chat", False),
        ("/learnings", True),
        ("/api/media", False),
        ("/api/pair", False),
        ("/api/tinys", True),
    ],
)
@pytest.mark.parametrize("chunked", [False, True])
async def test_an_oversized_body_is_a_json_413(
    server: RunningServer, path: str, auth: bool, chunked: bool
) -> None:
    assert ("POST", path) in app_routes(server.runner.app)
    tighten(server, max_body_bytes=64 * 1024)
    payload = json.dumps({"data": "x" * 100_000}).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 8192):
            yield payload[start : start + 8192]

    headers = {"content-type": "application/json", **(owner_headers(server) if auth else {})}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            server.url + path, data=chunks() if chunked else payload, headers=headers
        ) as response,
    ):
        assert response.status == 413
        assert (await response.json())["error"] == "body too large (limit 65536 bytes)"
    async with aiohttp.ClientSession() as http, http.get(f"{server.url}/api/health") as health:
        assert health.status == 200


async def test_a_chunked_body_past_the_applications_cap_is_a_json_413(
    server: RunningServer,
) -> None:
    """At the real cap, with no Content-Length to refuse early: aiohttp's own limit trips."""

    async def chunks() -> AsyncIterator[bytes]:
        block = b"x" * (1024 * 1024)
        for _ in range(c.MAX_REQUEST_BYTES // len(block) + 2):
            yield block

    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/api/media", data=chunks(), headers={"content-type": "application/json"}
        ) as response,
    ):
        assert response.status == 413
        assert "body too large" in (await response.json())["error"]


# --- request rate ------------------------------------------------------------------------------


async def get_health(server: RunningServer, token: str | None = None) -> aiohttp.ClientResponse:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/api/health", headers=headers) as response,
    ):
        await response.read()
        return response


def token_of(server: RunningServer) -> str:
    return owner_headers(server)["Authorization"].removeprefix("Bearer ")


async def test_one_address_over_its_rate_gets_429_while_a_token_still_passes(
    server: RunningServer,
) -> None:
    tighten(server, address_rate_per_s=0.001, address_burst=3)
    for _ in range(3):
        assert (await get_health(server)).status == 200
    refused = await get_health(server)
    assert refused.status == 429
    assert int(refused.headers["Retry-After"]) >= 1
    async with aiohttp.ClientSession() as http, http.get(f"{server.url}/api/health") as response:
        assert "too many requests" in (await response.json())["error"]
    assert (await get_health(server, token_of(server))).status == 200


async def test_made_up_tokens_are_charged_to_the_address(server: RunningServer) -> None:
    tighten(server, address_rate_per_s=0.001, address_burst=3)
    statuses = [(await get_health(server, f"guess-{i}")).status for i in range(5)]
    assert statuses == [401, 401, 401, 429, 429]


async def test_each_token_has_its_own_bucket(server: RunningServer) -> None:
    tighten(server, token_rate_per_s=0.001, token_burst=2)
    identity = server.hub.identity
    member = identity.issue_token(identity.add_user("member"), "limits test")
    owner = token_of(server)
    assert [(await get_health(server, owner)).status for _ in range(3)] == [200, 200, 429]
    assert (await get_health(server, member)).status == 200
    assert (await get_health(server)).status == 200  # the address's own bucket is untouched


async def test_the_default_limits_let_a_busy_client_through(server: RunningServer) -> None:
    """The defaults must never trip a real client (or this suite): a burst of 50 anonymous
    requests from one address all pass."""
    guard(server).limits = Limits()
    statuses = await asyncio.gather(*(get_health(server) for _ in range(50)))
    assert {response.status for response in statuses} == {200}


def test_the_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    bucket = Guard(clock=lambda: now[0])
    assert [bucket.take("k", 2.0, 2) for _ in range(2)] == [0.0, 0.0]
    assert bucket.take("k", 2.0, 2) == pytest.approx(0.5)
    now[0] += 0.5
    assert bucket.take("k", 2.0, 2) == 0.0
    assert bucket.take("other", 2.0, 2) == 0.0


# --- slow bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "route", [("POST", "/api/chat"), ("POST", "/api/media"), ("GET", "/api/health")]
)
async def test_a_trickled_body_is_a_408_and_the_hub_serves_others_meanwhile(
    server: RunningServer, route: tuple[str, str]
) -> None:
    tighten(server, body_read_timeout_s=2.0)
    method, path = route
    async with raw_connection(server) as (reader, writer):
        writer.write(request_head(method, path, 1000) + b"{")
        await writer.drain()
        answer = asyncio.create_task(read_response(reader))
        await asyncio.sleep(0)

        assert (await get_health(server)).status == 200
        assert not answer.done(), "the trickling client was answered before the deadline"

        while not answer.done():  # a byte at a time until the hub gives up on it
            with contextlib.suppress(ConnectionError):
                writer.write(b" ")
                await writer.drain()
            await asyncio.wait({answer}, timeout=0.05)
        status, headers, body = answer.result()
    assert status == 408
    assert "did not arrive within 2 s" in body["error"]
    assert headers.get("connection", "").lower() == "close"
    assert (await get_health(server)).status == 200
