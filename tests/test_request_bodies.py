"""Every body goes through one reader: numbers too long to read, nesting too deep, compressed
bodies (inflated off the event loop, their inflated bytes capped, a truncated stream refused),
and the MCP bridge reads bodies and headers the same way.

Requests go over real sockets to a real hub on 127.0.0.1; each refusal is checked for its JSON,
its status and for the log staying free of tracebacks.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import threading
import zlib
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama
from hub.api import limits
from hub.api.limits import GUARD, Limits
from hub.api.server import RunningServer
from hub.devices.registry import DeviceError
from hub.devices.relay import check_payload
from tests.conftest import StartHub, owner_headers
from tests.test_hardening import ROOMY, exchange, no_tracebacks, raw, split
from tests.test_route_policy import app_routes, concrete

JSON = {"Content-Type": "application/json"}
LONG_NUMBER = "1" * 5000  # past Python's 4300-digit limit for reading an integer
# Where the outside attack met a 500 (each reads a JSON body as its first step).
NAMED_ROUTES = (
    "/visit",
    "/api/chat",
    "/api/devices/heartbeat",
    "/learnings",
    "/api/messages",
    "/share",
    "/archive",
    "/api/tinys",
)
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    running = await start_hub(ollama_host=fake_ollama.url)
    running.runner.app[GUARD].limits = ROOMY
    return running


# --- numbers and nesting -----------------------------------------------------------------------


async def test_a_number_too_long_to_read_is_a_400_on_every_route_that_takes_a_body(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    body = f'{{"n": {LONG_NUMBER}, "deviceId": "x", "token": "y"}}'.encode()
    answers: dict[str, tuple[int, Any]] = {}
    async with aiohttp.ClientSession() as http:
        for method, path in app_routes(server.runner.app):
            if method not in ("POST", "PUT", "PATCH", "DELETE"):
                continue
            async with http.request(
                method,
                server.url + concrete(path),
                data=body,
                headers={**JSON, **owner_headers(server)},
            ) as response:
                answers[f"{method} {path}"] = (response.status, await response.json())
    assert not [route for route, (status, _) in answers.items() if status >= 500], answers
    for path in NAMED_ROUTES:
        status, answer = answers[f"POST {path}"]
        assert status == 400, (path, answer)
        assert "more than 4300 digits" in answer["error"], (path, answer)
    assert no_tracebacks(caplog) == []


@pytest.mark.parametrize(
    ("number", "why"), [("1e999", "too large"), ("Infinity", "not a JSON number")]
)
async def test_a_number_no_float_holds_is_a_400(
    server: RunningServer, number: str, why: str
) -> None:
    body = f'{{"fact": "x", "weight": {number}}}'.encode()
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/learnings", data=body, headers={**JSON, **owner_headers(server)}
        ) as response,
    ):
        assert response.status == 400
        assert why in (await response.json())["error"]


async def test_json_nested_past_the_parser_is_a_400_on_mcp_too(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    for path in ("/mcp", "/learnings"):
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                server.url + path,
                data=deep,
                headers={**JSON, **MCP_ACCEPT, **owner_headers(server)},
            ) as response,
        ):
            assert response.status == 400, path
            assert (await response.json())["error"] == "body is nested too deeply"
    assert no_tracebacks(caplog) == []


async def test_a_utf8_header_that_is_not_latin1_reaches_mcp(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps(PING).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + b"Accept: application/json, text/event-stream\r\n"
        + f"Authorization: {owner_headers(server)['Authorization']}\r\n".encode()
        + "X-Note: €\r\n".encode()
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    status, _, answer = split(await asyncio.to_thread(exchange, server.port, request))
    assert status == 200, answer
    assert json.loads(answer)["id"] == 1
    assert no_tracebacks(caplog) == []


# --- compressed bodies -------------------------------------------------------------------------


def gzip_of_zeros(size: int) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    out = [squeeze.compress(block) for _ in range(size // len(block))]
    return b"".join([*out, squeeze.flush()])


def post_gzip(path: str, body: bytes, token: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Encoding: gzip\r\nAuthorization: {token}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


async def test_a_gzip_body_is_inflated_and_read(server: RunningServer) -> None:
    body = gzip.compress(json.dumps({"fact": "I keep bees on the roof."}).encode())
    token = owner_headers(server)["Authorization"]
    status, _, answer = await raw(server, post_gzip("/learnings", body, token))
    assert status == 200, answer
    kept = server.hub.memory.recall(server.hub.owner.id, "bees", limit=1)
    assert [fact.text for fact in kept] == ["I keep bees on the roof."]


async def test_a_gzip_bomb_is_refused_by_its_inflated_size(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.runner.app[GUARD].limits = Limits(
        max_body_bytes=1 << 20, address_burst=10_000, token_burst=10_000
    )
    bomb = gzip_of_zeros(256 << 20)
    assert len(bomb) < 1 << 20  # under the cap as sent
    token = owner_headers(server)["Authorization"]
    status, _, answer = await raw(server, post_gzip("/learnings", bomb, token))
    assert status == 413
    assert answer["error"] == f"body too large once inflated (limit {1 << 20} bytes)"
    assert no_tracebacks(caplog) == []


@pytest.mark.parametrize("cut", ["truncated", "trailing bytes", "not gzip"])
async def test_a_gzip_body_that_does_not_end_as_gzip_is_a_400(
    server: RunningServer, cut: str
) -> None:
    whole = gzip.compress(json.dumps({"fact": "a fact that must not be kept"}).encode())
    body = {
        "truncated": whole[:-6],
        "trailing bytes": whole + b"junk",
        "not gzip": b"plain text",
    }[cut]
    token = owner_headers(server)["Authorization"]
    status, _, answer = await raw(server, post_gzip("/learnings", body, token))
    assert status == 400
    assert "not in its Content-Encoding" in answer["error"]
    assert server.hub.memory.count(server.hub.owner.id) == 0


async def test_an_encoding_the_hub_cannot_inflate_is_a_415(server: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/learnings",
            data=b"\x1b\x00",
            headers={**JSON, **owner_headers(server), "Content-Encoding": "br"},
        ) as response,
    ):
        assert response.status == 415
        assert response.headers["Accept-Encoding"] == "gzip, deflate"


async def test_inflating_runs_beside_the_event_loop(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one body is being inflated (held here until the hub has answered another
    request), the event loop keeps serving: inflating on the loop would never answer."""
    release, entered = threading.Event(), threading.Event()
    inflate = limits._inflate

    def held(raw_body: bytes, encoding: str, cap: int) -> bytes:
        entered.set()
        release.wait()
        return inflate(raw_body, encoding, cap)

    monkeypatch.setattr(limits, "_inflate", held)
    body = gzip.compress(json.dumps({"fact": "the inflated fact"}).encode())
    token = owner_headers(server)["Authorization"]
    learning = asyncio.create_task(raw(server, post_gzip("/learnings", body, token)))
    try:
        await asyncio.to_thread(entered.wait)
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{server.url}/api/health") as health,
        ):
            assert health.status == 200
    finally:
        release.set()
    status, _, answer = await learning
    assert status == 200, answer


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 4000 + "]" * 4000, "payload is nested too deeply"),
        ('{"a": NaN}', "payload is not usable JSON: NaN is not a JSON number"),
        ('{"a": Infinity}', "Infinity is not a JSON number"),
        ('{"a": 1e999}', "too large"),
        ('{"a": "\\ud800"}', "lone UTF-16 surrogate"),
        ("{oops", "payload is not valid JSON"),
    ],
)
def test_json_in_a_relay_payload_meets_the_bodys_limits(text: str, problem: str) -> None:
    """A relay payload is JSON written as a string inside a body: read with the body's rules,
    refused with a sentence naming the field, never a traceback."""
    with pytest.raises(DeviceError, match=re.escape(problem)):
        check_payload(text)
    assert check_payload('{"ok": true}') == '{"ok": true}'
