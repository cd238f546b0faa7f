"""``tiny-hub mcp``: the hub's MCP server for clients that start a command (stdio).

It is a bridge to the running hub's ``/mcp``, not a second hub: the drivers' serial ports, the
camera and the memory's files belong to the one hub process, and a second process opening them
would fight it for the port and the database. Each JSON-RPC message read on stdin goes to the
hub over streamable HTTP with the owner's token (or a client's), and each answer comes back on
stdout, unchanged, through the ``mcp`` package's own two transports; so the client and the hub
negotiate the protocol between themselves. A hub that is not running is said on stderr, once,
and every request then gets a JSON-RPC error naming the fix, rather than no answer at all.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError, JSONRPCRequest

REFUSED = -32001
"""The JSON-RPC code a refusal of the hub's is carried with (the server-defined range)."""


async def bridge(url: str, token: str) -> None:
    """Carry messages between stdin/stdout and ``{url}/mcp`` until stdin closes. A hub that
    cannot be reached fails the requests in flight with an error, and the next message tries
    it again (the hub may have been started meanwhile)."""
    headers = {"Authorization": f"Bearer {token}"}
    pending: dict[Any, SessionMessage] = {}
    async with stdio_server() as (client_read, client_write):
        finished = False
        while not finished:
            try:
                finished = await _carry(url, headers, client_read, client_write, pending)
            except Exception as exc:  # the transport's failure, often an ExceptionGroup
                await _fail_pending(pending, client_write, url, _cause(exc))
        await client_write.aclose()  # stdio_server's writer ends when its stream does


async def _carry(
    url: str,
    headers: dict[str, str],
    client_read: Any,
    client_write: Any,
    pending: dict[Any, SessionMessage],
) -> bool:
    """One connection's worth of carrying; True when the client closed stdin."""
    stdin_closed = False
    async with (
        hub_client(headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (hub_read, hub_write),
        anyio.create_task_group() as tasks,
    ):

        async def to_hub() -> None:
            nonlocal stdin_closed
            async for message in client_read:
                if isinstance(message, Exception):
                    _say(f"unreadable message from the client: {message}")
                    continue
                if isinstance(message.message, JSONRPCRequest):
                    pending[message.message.id] = message
                await hub_write.send(message)
            stdin_closed = True
            tasks.cancel_scope.cancel()

        async def to_client() -> None:
            async for message in hub_read:
                if isinstance(message, Exception):
                    await _fail_pending(pending, client_write, url, message)
                    continue
                pending.pop(getattr(message.message, "id", None), None)
                await client_write.send(message)

        tasks.start_soon(to_hub)
        tasks.start_soon(to_client)
    return stdin_closed


def hub_client(headers: dict[str, str]) -> httpx2.AsyncClient:
    """The ``mcp`` package's HTTP client settings, with the hub's refusals made readable."""
    return httpx2.AsyncClient(
        headers=headers,
        follow_redirects=True,
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=_Refusals(httpx2.AsyncHTTPTransport()),
    )


class _Refusals(httpx2.AsyncBaseTransport):
    """The hub refuses a request before any MCP is spoken (a 401 for a wrong token, a 400 for
    an unknown protocol version) with its own error sentence, ``{"error": "..."}``. The
    package's client reads only a JSON-RPC error out of such an answer and otherwise says
    "Server returned an error response"; this hands it the hub's sentence as that error."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.status_code < 400:
            return response
        body = await response.aread()
        await response.aclose()
        said = _hub_error(body)
        if said is not None:
            error = {"code": REFUSED, "message": f"{said} (HTTP {response.status_code})"}
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        headers = [
            (k, v)
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")
        ]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _hub_error(body: bytes) -> str | None:
    """The sentence of the hub's ``{"error": "..."}`` body; None for anything else."""
    try:
        decoded = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return None
    said = decoded.get("error") if isinstance(decoded, dict) else None
    return said if isinstance(said, str) else None


def _cause(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _fail_pending(
    pending: dict[Any, SessionMessage], client_write: Any, url: str, problem: BaseException
) -> None:
    """The hub could not be asked: every request waiting for it gets an error that says why."""
    _say(f"cannot reach the hub at {url}/mcp: {problem}")
    text = f"the hub at {url} did not answer ({problem}); is `tiny-hub serve` running?"
    for request_id in list(pending):
        pending.pop(request_id)
        error = JSONRPCError(
            jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=text)
        )
        await client_write.send(SessionMessage(error))


def _say(text: str) -> None:
    print(f"tiny-hub mcp: {text}", file=sys.stderr, flush=True)
