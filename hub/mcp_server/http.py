"""``/mcp``: the hub's MCP server over streamable HTTP, on the hub's own port.

The ``mcp`` package serves streamable HTTP as an ASGI application; the hub is an aiohttp one.
Rather than a second port (a second thing to secure and to find), this route hands each request
to the package's own session manager through a small ASGI bridge: the request as an ASGI scope
and one body, the answer written back as it comes. The manager runs stateless, answering JSON,
so nothing outlives a request and every request is admitted on its own; there is no ``GET`` (a
standing event stream would have nothing to carry, and would hold a connection per client) and
no ``DELETE`` (no session to end): both are 405s, which the protocol allows.

Admission, before the package sees anything: the owner's token, or a token the owner issued to
a named client (``tiny-hub mcp token add``). Anonymous callers and any other token are refused
with a 401 and its ``WWW-Authenticate: Bearer`` challenge, a member's token with a 403: what this
serves is the owner's memory and hardware. An ``MCP-Protocol-Version`` naming no revision the
package speaks is a 400 that says which ones it does. The ``mcp`` package
is imported on the first request, not when the hub starts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from aiohttp import web

from hub.api.auth import Access, access
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.limits import read_body
from hub.api.spec import ANY, Operation, documented, obj
from hub.mcp_server.clients import OWNER_CLIENT, McpClient, McpClients
from hub.runtime.hub import Hub

routes = web.RouteTableDef()

PATH = "/mcp"
REALM = "tiny-hub"
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
# One JSON-RPC request or notification (the protocol has had no batches since 2025-06-18).
# The messages the package reads (JSON-RPC 2.0 as MCP has it): a request or a notification
# (a method; an id or none), or a client's answer to the server (an id and a result or an
# error). An unknown method is answered by the package with a JSON-RPC error, not refused.
_ID = {"type": ["string", "integer", "null"]}
_ANSWERED = {"type": ["string", "integer"]}  # an answer names the request it answers
JSONRPC = {
    "anyOf": [
        obj({"jsonrpc": {"const": "2.0"}, "method": {"type": "string"}}, id=_ID),
        obj({"jsonrpc": {"const": "2.0"}, "id": _ANSWERED, "result": {"type": "object"}}),
        obj(
            {
                "jsonrpc": {"const": "2.0"},
                "id": _ANSWERED,
                "error": obj({"code": {"type": "integer"}, "message": {"type": "string"}}),
            }
        ),
    ]
}
ASGIMessage = MutableMapping[str, Any]


class McpHttp:
    """The package's session manager, started on the first ``/mcp`` request (importing the
    ``mcp`` server costs about a second, which a hub nobody asks over MCP need not spend at
    start) and run in a task of its own: its task group must be entered and left by one task."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._manager: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._starting = asyncio.Lock()

    async def manager(self) -> Any:
        async with self._starting:
            if self._manager is None:
                self._manager = await self._start()
        return self._manager

    async def _start(self) -> Any:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from hub.mcp_server.server import build_server

        manager = StreamableHTTPSessionManager(
            build_server(self._hub), stateless=True, json_response=True
        )
        started = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                started.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="mcp-http")
        ready = asyncio.create_task(started.wait())
        await asyncio.wait([self._task, ready], return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: say why
        return manager

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


MCP_HTTP = web.AppKey("mcp_http", McpHttp)


async def mcp_http_ctx(app: web.Application) -> AsyncIterator[None]:
    app[MCP_HTTP] = McpHttp(app[HUB])
    yield
    await app[MCP_HTTP].close()


def admit(request: web.Request) -> McpClient:
    """The owner, or the named client the bearer token belongs to; a 401/403 for anyone else."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise unauthorized(
            "sign in required: send Authorization: Bearer <the owner's token or an MCP client "
            "token from tiny-hub mcp token add>",
            None,
        )
    hub = request.app[HUB]
    user = hub.identity.resolve(token)
    if user is not None:
        if not user.is_owner:
            raise http_error(web.HTTPForbidden, "only the hub's owner may use its MCP server")
        return OWNER_CLIENT
    client = McpClients(hub.db).resolve(token)
    if client is None:
        raise unauthorized("invalid token: not the owner's nor an MCP client's", "invalid_token")
    return client


def unauthorized(message: str, error: str | None) -> web.HTTPException:
    """A 401 with the challenge RFC 6750 asks of a bearer-token resource (the MCP authorization
    spec builds on it): the scheme and realm, and ``error`` when a token was sent but refused."""
    refused = http_error(web.HTTPUnauthorized, message)
    challenge = f'Bearer realm="{REALM}"'
    if error:
        said = message.replace('"', "'")
        challenge += f', error="{error}", error_description="{said}"'
    refused.headers["WWW-Authenticate"] = challenge
    return refused


def protocol_version_problem(request: web.Request) -> str | None:
    """Why the ``MCP-Protocol-Version`` header names no revision this server speaks (the spec
    asks for a 400); None when it is absent or known. The package itself would read an unknown
    revision as a future one and answer about that revision's request envelope instead."""
    from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

    given = request.headers.get(PROTOCOL_VERSION_HEADER)
    if given is None or given in KNOWN_PROTOCOL_VERSIONS:
        return None
    return f"unsupported {PROTOCOL_VERSION_HEADER} {given!r}: this server speaks " + ", ".join(
        KNOWN_PROTOCOL_VERSIONS
    )


@routes.post(PATH)
@access(Access.CLIENT)
@documented(
    Operation(
        "the hub's MCP server: one JSON-RPC message in, its answer out (streamable HTTP)",
        answers={200: ANY, 202: None},  # 202: a notification, answered with no body
        body=JSONRPC,
        errors=(405, 406),
        error_schema="McpError",
    )
)
async def serve_mcp(request: web.Request) -> web.StreamResponse:
    client = admit(request)
    if not request.app[HUB].settings.mcp_server_http:
        raise http_error(
            web.HTTPNotFound, "MCP over HTTP is off on this hub ([mcp_server] http = false)"
        )
    manager = await request.app[MCP_HTTP].manager()
    from hub.mcp_server.server import CLIENT_SCOPE_KEY

    if (problem := protocol_version_problem(request)) is not None:
        raise http_error(web.HTTPBadRequest, problem)
    # The hub's one body reader (inflated, capped, parsed with the hub's answers to bad JSON);
    # the package parses the same bytes again itself.
    if (problem := jsonrpc_problem(await read_json_body(request))) is not None:
        raise http_error(web.HTTPBadRequest, problem)
    body = await read_body(request)
    bridge = _AsgiBridge(request, body)
    await manager.handle_request(
        bridge.scope(CLIENT_SCOPE_KEY, client), bridge.receive, bridge.send
    )
    return await bridge.finish()


def jsonrpc_problem(message: Any) -> str | None:
    """Why the JSON ``message`` is not a JSON-RPC 2.0 message (or a batch of them), in the
    hub's words; None when it is one. The MCP package would answer a JSON-RPC error object
    instead, which no client of the hub's other routes expects for a body that is not JSON-RPC
    at all."""
    messages = message if isinstance(message, list) else [message]
    if not messages or not all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in messages):
        return 'the body must be a JSON-RPC 2.0 message: an object with "jsonrpc": "2.0"'
    return None


class _AsgiBridge:
    """One aiohttp request as the ASGI calls the ``mcp`` package expects."""

    def __init__(self, request: web.Request, body: bytes) -> None:
        self._request = request
        self._body: bytes | None = body
        self._done = asyncio.Event()
        self._response: web.StreamResponse | None = None

    def scope(self, key: str, client: McpClient) -> dict[str, Any]:
        request = self._request
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": f"{request.version.major}.{request.version.minor}",
            "method": request.method,
            "scheme": request.scheme,
            "path": request.path,
            "raw_path": request.rel_url.raw_path.encode("latin-1"),
            "query_string": request.rel_url.raw_query_string.encode("latin-1"),
            "root_path": "",
            # As they came: a value the hub has checked is UTF-8 (hub.api.auth) need not be
            # Latin-1, so decoded values cannot be encoded back that way.
            "headers": [(name.lower(), value) for name, value in request.raw_headers],
            "client": (request.remote or "", 0),
            "server": None,
            "state": {},
            key: client,
        }

    async def receive(self) -> ASGIMessage:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: ASGIMessage) -> None:
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=int(message["status"]))
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            self._response = response
            await response.prepare(self._request)
        elif message["type"] == "http.response.body" and self._response is not None:
            await self._response.write(bytes(message.get("body", b"")))
            if not message.get("more_body"):
                await self._response.write_eof()
                self._done.set()

    async def finish(self) -> web.StreamResponse:
        self._done.set()
        if self._response is None:
            raise http_error(web.HTTPInternalServerError, "the MCP server gave no answer")
        return self._response
