"""The http tool and its guard, against real aiohttp servers on 127.0.0.1.

No test sends traffic anywhere but loopback: every non-loopback target is first shown to be
refused by the address check itself, and only then handed to fetch_url, which must refuse it
before connecting (FetchRefused, quickly, never FetchFailed).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiohttp import web
from strands.types.tools import AgentTool, ToolResult

from hub.agent.tools.http import (
    FetchFailed,
    FetchRefused,
    FetchResult,
    PinnedResolver,
    fetch_url,
    make_http_tool,
    refusal_reason,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(92)  # 100 bytes
BIG = "a" * 10_000
LOOPBACK = ["127.0.0.1"]


class Site:
    """A real aiohttp server on a free loopback port."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.hits: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()

        async def hello(request: web.Request) -> web.Response:
            return web.Response(text="hello, tiny")

        async def echo_host(request: web.Request) -> web.Response:
            return web.Response(text=request.host)

        async def latin1(request: web.Request) -> web.Response:
            body = "café crème".encode("latin-1")
            return web.Response(body=body, content_type="text/plain", charset="latin-1")

        async def big(request: web.Request) -> web.Response:
            return web.Response(text=BIG)

        async def png(request: web.Request) -> web.Response:
            return web.Response(body=PNG, content_type="image/png")

        async def data(request: web.Request) -> web.Response:
            return web.json_response({"answer": 42})

        async def redirect(request: web.Request) -> web.Response:
            left = int(request.match_info["n"])
            if left == 0:
                return web.Response(text="arrived")
            raise web.HTTPFound(f"/redirect/{left - 1}")

        async def loop(request: web.Request) -> web.Response:
            raise web.HTTPFound("/loop")

        async def to(request: web.Request) -> web.Response:
            target = request.query["url"].replace("PORT", str(self.port))
            raise web.HTTPFound(target)

        async def slow(request: web.Request) -> web.Response:
            await self.release.wait()
            return web.Response(text="late")

        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            self.hits.append(request.path)
            return cast(web.StreamResponse, await handler(request))

        app.middlewares.append(record)
        app.router.add_get("/hello", hello)
        app.router.add_get("/echo-host", echo_host)
        app.router.add_get("/latin1", latin1)
        app.router.add_get("/big", big)
        app.router.add_get("/png", png)
        app.router.add_get("/json", data)
        app.router.add_get("/redirect/{n}", redirect)
        app.router.add_get("/loop", loop)
        app.router.add_get("/to", to)
        app.router.add_get("/slow", slow)

        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    server = Site()
    await server.start()
    yield server
    await server.stop()


def assert_refused_by_the_check(address: str) -> None:
    """Fail before any fetch is tried if the address check would let `address` through."""
    reason = refusal_reason(ipaddress.ip_address(address))
    assert reason is not None, f"{address} would be fetched: stopping before any traffic"


async def refused(url: str, **kwargs: Any) -> str:
    """fetch_url(url) must be refused by the guard, at once; returns the message."""
    with pytest.raises(FetchRefused) as caught:  # refused by the guard, not a failed fetch
        await fetch_url(url, timeout_s=5.0, **kwargs)
    return str(caught.value)


# -- loopback and names ----------------------------------------------------------------------


async def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(site: Site) -> None:
    message = await refused(f"{site.base}/hello")
    assert message == (
        "refused: 127.0.0.1 is a loopback address; "
        "the hub's owner can allow a host with http.allow_hosts"
    )
    assert site.hits == []


async def test_an_allowed_loopback_host_is_fetched(site: Site) -> None:
    result = await fetch_url(f"{site.base}/hello", allow_hosts=LOOPBACK)
    assert result == FetchResult(
        url=f"{site.base}/hello",
        status=200,
        content_type="text/plain",
        text="hello, tiny",
        truncated=False,
    )
    assert site.hits == ["/hello"]


async def test_localhost_is_refused_unless_allowed_by_name(site: Site) -> None:
    url = f"http://localhost:{site.port}/echo-host"
    assert "localhost" in await refused(url)
    # allowing the address does not allow the name, nor the other way round
    assert "localhost" in await refused(url, allow_hosts=LOOPBACK)
    assert "127.0.0.1" in await refused(f"{site.base}/hello", allow_hosts=["localhost"])
    assert site.hits == []

    result = await fetch_url(url, allow_hosts=["LocalHost"])
    # the connection went to the pinned address; the Host header stayed the name in the URL
    assert result.status == 200
    assert result.text == f"localhost:{site.port}"


@pytest.mark.parametrize(
    ("spelling", "phrase"),
    [
        ("2130706433", "a loopback address"),
        ("0x7f.0.0.1", "a loopback address"),
        ("017700000001", "a loopback address"),
        ("127.1", "a loopback address"),
        ("[::ffff:127.0.0.1]", "a loopback address"),
        ("[0:0:0:0:0:ffff:7f00:1]", "a loopback address"),
        ("[::1]", "a loopback address"),
        ("example.com@127.0.0.1", "a loopback address"),
        ("0.0.0.0", "an unspecified address"),
        ("0", "an unspecified address"),
    ],
)
async def test_loopback_in_odd_encodings_is_refused(site: Site, spelling: str, phrase: str) -> None:
    # The port is the live server's: without the guard these would reach it.
    message = await refused(f"http://{spelling}:{site.port}/hello")
    assert phrase in message
    assert "http.allow_hosts" in message
    assert site.hits == []


# -- private networks: refused at the check, no traffic --------------------------------------


@pytest.mark.parametrize(
    ("host", "address", "kind"),
    [
        ("169.254.169.254", "169.254.169.254", "cloud metadata"),
        ("[fd00:ec2::254]", "fd00:ec2::254", "cloud metadata"),
        ("10.0.0.1", "10.0.0.1", "private"),
        ("192.168.1.1", "192.168.1.1", "private"),
        ("172.16.0.1", "172.16.0.1", "private"),
        ("100.64.0.1", "100.64.0.1", "shared (carrier-grade NAT)"),
        ("169.254.1.1", "169.254.1.1", "link-local"),
        ("[fe80::1]", "fe80::1", "link-local"),
        ("[fd12:3456::1]", "fd12:3456::1", "private"),
        ("224.0.0.1", "224.0.0.1", "multicast"),
        ("240.0.0.1", "240.0.0.1", "private"),
        ("[::ffff:10.0.0.1]", "::ffff:10.0.0.1", "private"),
        ("[::ffff:169.254.169.254]", "::ffff:169.254.169.254", "cloud metadata"),
        ("[64:ff9b::a00:1]", "64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("[2002:c0a8:101::1]", "2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
        ("0xa9fea9fe", "169.254.169.254", "cloud metadata"),
    ],
)
async def test_private_addresses_are_refused_at_the_check(
    host: str, address: str, kind: str
) -> None:
    assert_refused_by_the_check(address)
    message = await refused(f"http://{host}/latest/meta-data/")
    assert f"a {kind} address" in message
    assert message.endswith("the hub's owner can allow a host with http.allow_hosts")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("192.0.2.1", "private"),
        ("ff02::1", "multicast"),
        ("64:ff9b:1::1", "private"),
        ("fe80::1%eth0", "link-local"),
    ],
)
def test_refusal_reason(address: str, reason: str | None) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) == reason


# -- redirects -------------------------------------------------------------------------------


async def test_redirects_between_allowed_hops_are_followed(site: Site) -> None:
    result = await fetch_url(f"{site.base}/redirect/3", allow_hosts=LOOPBACK, max_redirects=3)
    assert result.url == f"{site.base}/redirect/0"
    assert result.text == "arrived"
    assert site.hits == ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"]


async def test_too_many_redirects_is_an_error(site: Site) -> None:
    with pytest.raises(FetchFailed, match="too many redirects") as caught:
        await fetch_url(f"{site.base}/redirect/3", allow_hosts=LOOPBACK, max_redirects=2)
    assert str(caught.value).startswith(f"cannot fetch {site.base}/redirect/3: ")
    assert len(site.hits) == 3

    with pytest.raises(FetchFailed, match="too many redirects"):
        await fetch_url(f"{site.base}/loop", allow_hosts=LOOPBACK)
    assert site.hits[3:] == ["/loop"] * 6  # the first request and 5 redirects


async def test_a_redirect_to_a_private_address_is_refused(site: Site) -> None:
    assert_refused_by_the_check("10.0.0.1")
    message = await refused(f"{site.base}/to?url=http://10.0.0.1/admin", allow_hosts=LOOPBACK)
    assert message.startswith("refused: 10.0.0.1 is a private address")
    assert site.hits == ["/to"]


async def test_every_hop_is_checked_by_name_too(site: Site) -> None:
    url = f"{site.base}/to?url=http://localhost:PORT/echo-host"
    assert "localhost" in await refused(url, allow_hosts=LOOPBACK)
    assert site.hits == ["/to"]

    result = await fetch_url(url, allow_hosts=[*LOOPBACK, "localhost"])
    assert result.url == f"http://localhost:{site.port}/echo-host"
    assert result.text == f"localhost:{site.port}"


async def test_a_redirect_to_another_scheme_is_refused(site: Site) -> None:
    message = await refused(f"{site.base}/to?url=file:///etc/passwd", allow_hosts=LOOPBACK)
    assert "file: URLs are not allowed" in message


# -- bodies ----------------------------------------------------------------------------------


async def test_a_large_body_is_truncated(site: Site) -> None:
    result = await fetch_url(f"{site.base}/big", allow_hosts=LOOPBACK, max_bytes=1000)
    assert result.truncated is True
    assert result.text == "a" * 1000

    whole = await fetch_url(f"{site.base}/big", allow_hosts=LOOPBACK, max_bytes=len(BIG))
    assert whole.truncated is False
    assert whole.text == BIG


async def test_binary_content_is_summarised_not_decoded(site: Site) -> None:
    result = await fetch_url(f"{site.base}/png", allow_hosts=LOOPBACK)
    assert result.content_type == "image/png"
    assert result.text == "[binary content: image/png, 100 bytes]"
    assert result.truncated is False

    cut = await fetch_url(f"{site.base}/png", allow_hosts=LOOPBACK, max_bytes=10)
    assert cut.text == "[binary content: image/png, more than 10 bytes]"
    assert cut.truncated is True


async def test_text_is_decoded_with_the_response_charset(site: Site) -> None:
    result = await fetch_url(f"{site.base}/latin1", allow_hosts=LOOPBACK)
    assert result.text == "café crème"

    data = await fetch_url(f"{site.base}/json", allow_hosts=LOOPBACK)
    assert data.content_type == "application/json"
    assert json.loads(data.text) == {"answer": 42}


async def test_head_reads_no_body(site: Site) -> None:
    result = await fetch_url(f"{site.base}/hello", allow_hosts=LOOPBACK, method="HEAD")
    assert (result.status, result.text, result.truncated) == (200, "", False)


# -- schemes, methods, failures --------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://127.0.0.1/", "gopher://127.0.0.1:70/", "javascript:alert(1)"],
)
async def test_other_schemes_are_refused(url: str) -> None:
    message = await refused(url, allow_hosts=LOOPBACK)
    assert "only http(s)" in message


async def test_other_methods_are_refused(site: Site) -> None:
    assert "not POST" in await refused(f"{site.base}/hello", allow_hosts=LOOPBACK, method="POST")
    assert site.hits == []


async def test_a_closed_port_is_a_clear_failure(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/"
    with pytest.raises(FetchFailed) as caught:
        await fetch_url(url, allow_hosts=LOOPBACK)
    assert str(caught.value).startswith(f"cannot fetch {url}: cannot connect to 127.0.0.1:")
    assert "connection refused" in str(caught.value)


async def test_a_slow_server_times_out(site: Site) -> None:
    with pytest.raises(FetchFailed, match=r"no answer within 0\.5 s"):
        await fetch_url(f"{site.base}/slow", allow_hosts=LOOPBACK, timeout_s=0.5)


async def test_the_pinned_resolver_never_looks_a_name_up() -> None:
    resolver = PinnedResolver()
    with pytest.raises(OSError, match="not checked"):
        await resolver.resolve("localhost", 80, socket.AF_UNSPEC)

    resolver.pin(
        "example.test",
        [
            {
                "hostname": "example.test",
                "host": "203.0.113.7",
                "port": 80,
                "family": socket.AF_INET,
                "proto": socket.IPPROTO_TCP,
                "flags": 0,
            }
        ],
    )
    [answer] = await resolver.resolve("Example.Test", 8080, socket.AF_UNSPEC)
    assert (answer["hostname"], answer["host"], answer["port"]) == (
        "Example.Test",
        "203.0.113.7",
        8080,
    )
    with pytest.raises(OSError, match="no checked address"):
        await resolver.resolve("example.test", 80, socket.AF_INET6)


# -- the strands tool ------------------------------------------------------------------------


async def run_tool(agent_tool: AgentTool, **tool_input: Any) -> ToolResult:
    """Run the tool the way a strands Agent does: stream it a tool use, keep the last event."""
    events = [
        event
        async for event in agent_tool.stream(
            {"toolUseId": "use-1", "name": "http", "input": tool_input}, {}
        )
    ]
    result = cast(ToolResult, events[-1]["tool_result"])
    assert result["toolUseId"] == "use-1"
    return result


async def test_the_tool_is_named_http_and_takes_url_and_method() -> None:
    agent_tool = make_http_tool()
    assert agent_tool.tool_name == "http"
    schema = agent_tool.tool_spec["inputSchema"]["json"]
    assert set(schema["properties"]) == {"url", "method"}
    assert schema["required"] == ["url"]


async def test_the_tool_fetches_an_allowed_host(site: Site) -> None:
    result = await run_tool(make_http_tool(LOOPBACK), url=f"{site.base}/hello")
    assert result["status"] == "success"
    assert result["content"] == [
        {"text": f"HTTP 200 text/plain from {site.base}/hello\n\nhello, tiny"}
    ]


async def test_the_tool_can_be_called_directly(site: Site) -> None:
    direct = cast(Any, make_http_tool(LOOPBACK))
    result = await direct(url=f"{site.base}/hello", method="head")
    assert result == {
        "status": "success",
        "content": [{"text": f"HTTP 200 text/plain from {site.base}/hello\n\n"}],
    }


async def test_the_tool_reports_a_refusal_as_an_error(site: Site) -> None:
    result = await run_tool(make_http_tool(), url=f"{site.base}/hello")
    assert result["status"] == "error"
    [block] = result["content"]
    assert "loopback" in block["text"]
    assert "http.allow_hosts" in block["text"]
    assert site.hits == []


async def test_the_tool_refuses_other_methods(site: Site) -> None:
    result = await run_tool(make_http_tool(LOOPBACK), url=f"{site.base}/hello", method="POST")
    assert result["status"] == "error"
    assert "only does GET and HEAD" in result["content"][0]["text"]
    assert site.hits == []


async def test_the_tool_reports_a_failure_as_an_error(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/"
    result = await run_tool(make_http_tool(LOOPBACK), url=url)
    assert result["status"] == "error"
    assert result["content"][0]["text"].startswith(f"cannot fetch {url}: ")
