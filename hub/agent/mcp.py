"""MCP servers as tool clients of one turn (docs/protocol.md, turn step 5: "... then MCP clients").

It is one module on purpose: where a server comes from decides how far it is trusted, and the
parsing, the network guard and the session that enforce it stay together, so no path mounts a
server unchecked.

Where servers come from, and why they are treated differently:

- The owner's config, ``mcp.servers``: stdio servers (``command``, ``args``, ``env``, ``cwd``) or
  HTTP ones (``url``, ``transport``, ``headers``). They are mounted in the owner's turns only: a
  stdio server runs as the hub's user, next to the owner's files.
- The ``x-tiny-mcp-servers`` header, a JSON object of the same shape but HTTP only::

      {"search": {"url": "https://mcp.example.com/mcp",
                  "transport": "streamable-http",        # or "sse"; streamable-http if left out
                  "headers": {"Authorization": "Bearer ..."}}}

  A header never starts a command on this machine. Its URL is held to the ``http`` tool's rule
  (``hub.core.netguard``): public addresses only unless the owner allowed the host in
  ``http.allow_hosts``, checked before the first request and again for every request and
  redirect, and the connection goes to the address that was checked.

Clients start in parallel before the agent runs, each within ``mcp.start_timeout_s``; one that
cannot start, list its tools or pass the guard becomes a ``notice`` for the caller and the turn
goes on without it. Tool names are ``<server>_<tool>``, and they join after every other tier
through ``Mounted.add``, so none replaces a built-in or another server's tool. Every client is
stopped when the turn ends, also when it is cancelled.

strands' ``MCPClient.stop()`` waits for its session to finish, and a server that never answers
the handshake never lets it finish, so every transport here runs inside a cancel scope the hub
can fire from outside (``_Abortable``): a hanging server costs the turn its start timeout, and
its process is still shut down. The MCP and HTTPX packages take half a second to import, so they
are imported when a turn first has a server, not when the hub starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO
from urllib.parse import urlsplit

from strands.types.tools import AgentTool

from hub import contracts as c
from hub.core.netguard import Allowance, HostRefused, LookupFailed, resolve_checked

if TYPE_CHECKING:  # agent/turn.py imports this module, and the tools import the turn's helpers
    import anyio
    import httpx2

    from hub.agent.tools import Mounted
    from hub.people.identity import User
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

Transport = Literal["stdio", "streamable-http", "sse"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "streamable-http", "sse")
CONFIG_SOURCE = "mcp.servers"
TINY_SOURCE = "the tiny's mcpServers"

MAX_SERVERS = 8  # per header
MAX_HEADER_CHARS = 8192
MAX_HEADERS = 32  # forwarded to one server
MAX_TOOLS_PER_SERVER = 64
MAX_TOOL_NAME = 64  # what model providers accept
TOOL_CALL_TIMEOUT_S = 120.0  # one round of one MCP tool call
STOP_GRACE_S = 5.0  # a polite stop, then the session is cut
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
STDIO_KEYS = frozenset({"command", "args", "env", "cwd", "transport"})
HTTP_KEYS = frozenset({"url", "transport", "headers"})
ALLOW_HINT = "the hub's owner can allow a host with http.allow_hosts"


@dataclass(frozen=True)
class McpServer:
    """One server to mount, validated."""

    name: str
    transport: Transport
    source: str  # where it was named: mcp.servers or the header
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    guarded: bool = True  # its URL passes the network guard (it came from a request)


@dataclass(frozen=True)
class McpPlan:
    """What a turn will mount: the servers, what was wrong with the request, and the tools
    mounted so far (MCP tools join after them)."""

    servers: tuple[McpServer, ...]
    notices: tuple[str, ...]
    mounted: Mounted
    allow_hosts: tuple[str, ...] = ()
    start_timeout_s: float = 10.0
    log_path: Path | None = None  # where stdio servers' stderr goes


@dataclass
class McpSession:
    """The MCP tools of a running turn, and what the caller should be told."""

    tools: list[AgentTool] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


class _ReportedHere(logging.Filter):
    """strands logs a failed MCP start as an ERROR with a traceback, and this module already
    reports it (a notice for the caller, one warning line here): keep the log readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(
            ("client failed to initialize", "client initialization timed out")
        )


logging.getLogger("strands.tools.mcp.mcp_client").addFilter(_ReportedHere())


def notice_event(message: str) -> dict[str, Any]:
    return {"type": c.EV_NOTICE, "message": message}


# --- which servers -----------------------------------------------------------------------------


def plan_for_turn(
    hub: Hub,
    caller: User | None,
    headers: Mapping[str, str],
    mounted: Mounted,
    tiny_servers: Sequence[Mapping[str, Any]] = (),
) -> McpPlan:
    """The owner's configured servers (for the owner only), then the tiny's own list, then the
    header's; problems with any are notices, never a failed request. A tiny's list is held to
    the header's rules (HTTP only, the network guard): its author need not be this hub's owner."""
    servers: list[McpServer] = []
    notices: list[str] = []
    if caller is not None and caller.id == hub.owner.id:
        _collect(hub.settings.mcp_servers, CONFIG_SOURCE, servers, notices, from_header=False)
    if tiny_servers:
        _collect(_named(tiny_servers, notices), TINY_SOURCE, servers, notices, from_header=True)
    raw = headers.get(c.H_MCP_SERVERS, "").strip()
    if raw:
        parsed = _parse_header(raw, notices)
        if parsed:
            _collect(parsed, c.H_MCP_SERVERS, servers, notices, from_header=True)
    return McpPlan(
        servers=tuple(servers),
        notices=tuple(notices),
        mounted=mounted,
        allow_hosts=hub.settings.http_allow_hosts,
        start_timeout_s=hub.settings.mcp_start_timeout_s,
        log_path=hub.settings.home / "mcp.log",
    )


def _named(entries: Sequence[Mapping[str, Any]], notices: list[str]) -> dict[str, Any]:
    """A tiny's ``mcpServers`` (``[{name, url, transport?, headers?}]``) as the header's map."""
    named: dict[str, Any] = {}
    for index, entry in enumerate(entries[:MAX_SERVERS]):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            notices.append(f"MCP server {index + 1} of the tiny skipped: it has no name")
            continue
        named[name] = {key: value for key, value in entry.items() if key != "name"}
    return named


def _parse_header(raw: str, notices: list[str]) -> dict[str, Any] | None:
    if len(raw) > MAX_HEADER_CHARS:
        notices.append(f"{c.H_MCP_SERVERS} ignored: longer than {MAX_HEADER_CHARS} characters")
        return None
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        notices.append(f"{c.H_MCP_SERVERS} ignored: not JSON ({exc})")
        return None
    if not isinstance(parsed, dict):
        notices.append(
            f'{c.H_MCP_SERVERS} ignored: expected a JSON object like {{"name": {{"url": ...}}}}'
        )
        return None
    if len(parsed) > MAX_SERVERS:
        notices.append(f"{c.H_MCP_SERVERS}: only the first {MAX_SERVERS} servers are mounted")
        parsed = dict(list(parsed.items())[:MAX_SERVERS])
    return parsed


def _collect(
    entries: Mapping[str, Any],
    source: str,
    servers: list[McpServer],
    notices: list[str],
    *,
    from_header: bool,
) -> None:
    for name, entry in entries.items():
        if any(s.name == name for s in servers):
            notices.append(f"MCP server {name} ({source}) skipped: the name is already mounted")
            continue
        try:
            servers.append(parse_server(name, entry, source=source, from_header=from_header))
        except ValueError as exc:
            notices.append(f"MCP server {name} ({source}) skipped: {exc}")


def parse_server(name: str, entry: Any, *, source: str, from_header: bool) -> McpServer:
    """One entry of the header or the config; ValueError says what is wrong with it."""
    if not NAME.fullmatch(str(name)):
        raise ValueError("a name is 1-32 letters, digits, '_' or '-', starting with a letter/digit")
    if not isinstance(entry, dict):
        raise ValueError("expected an object with url (or, in the config, command)")
    transport = entry.get("transport") or ("stdio" if "command" in entry else "streamable-http")
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    if transport == "stdio":
        if from_header:
            raise ValueError(
                f"stdio servers (a command) come only from the hub owner's {CONFIG_SOURCE}, "
                "never from a request"
            )
        _only(entry, STDIO_KEYS)
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("command must be a non-empty string")
        return McpServer(
            name=name,
            transport="stdio",
            source=source,
            command=command,
            args=tuple(_strings(entry.get("args", []), "args")),
            env=tuple(_string_map(entry.get("env", {}), "env").items()),
            cwd=_string(entry.get("cwd", ""), "cwd"),
            guarded=False,
        )
    _only(entry, HTTP_KEYS)
    url = entry.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("url must be an http:// or https:// URL")
    try:
        if not urlsplit(url).hostname:
            raise ValueError("url has no host")
        urlsplit(url).port  # noqa: B018 (raises for a port out of range)
    except ValueError as exc:
        raise ValueError(f"url is not usable: {exc}") from None
    headers = _string_map(entry.get("headers", {}), "headers")
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    return McpServer(
        name=name,
        transport=transport,
        source=source,
        url=url,
        headers=tuple(headers.items()),
        guarded=from_header,
    )


def _only(entry: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed))
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {known})")


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return value


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must be an object of strings")
    return value


# --- the turn's clients ------------------------------------------------------------------------


@asynccontextmanager
async def mcp_session(plan: McpPlan | None) -> AsyncIterator[McpSession]:
    """Start every planned server, yield their tools and the notices, stop them all after."""
    session = McpSession(notices=list(plan.notices) if plan else [])
    if plan is None or not plan.servers:
        yield session
        return
    from hub.agent.tools import Mounted

    clients = [_Client(server, plan) for server in plan.servers]
    try:
        started = await asyncio.gather(*(client.start() for client in clients))
        mounted = Mounted(off=plan.mounted.off, taken=set(plan.mounted.taken))
        for tools, problem in started:
            if problem:
                session.notices.append(problem)
                continue
            for tool in tools:
                mounted.add("mcp", tool)
        if mounted.dropped:
            log.info("MCP tools dropped: %s", ", ".join(f"{n} ({w})" for n, w in mounted.dropped))
        session.tools = mounted.tools
        yield session
    finally:
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)


class _Client:
    """One server's strands MCPClient, started and stopped off the event loop (its calls
    block), within bounds."""

    def __init__(self, server: McpServer, plan: McpPlan) -> None:
        from strands.tools.mcp import MCPClient

        self.server = server
        self._plan = plan
        self._allowed = Allowance.of_hosts(plan.allow_hosts)
        self._abortable = _Abortable(self._open_transport)
        self._job: asyncio.Future[list[AgentTool]] | None = None
        self._started = False
        self.client = MCPClient(
            self._abortable.open,
            # strands' own bound, behind ours: ours aborts the session, which it cannot do
            startup_timeout=math.ceil(plan.start_timeout_s) + 5,
            application_name="tiny-hub",
        )

    async def start(self) -> tuple[list[AgentTool], str | None]:
        """The server's tools, or a notice saying why there are none."""
        name, timeout = self.server.name, self._plan.start_timeout_s
        try:
            async with asyncio.timeout(timeout):
                if self.server.guarded and (refusal := await self._refusal()) is not None:
                    return [], f"MCP server {name} was not mounted: {refusal}"
                self._job = asyncio.ensure_future(asyncio.to_thread(self._start_and_list))
                return await asyncio.shield(self._job), None
        except TimeoutError:
            self._abortable.abort()
            notice = f"MCP server {name} failed to start: no answer within {timeout:g} s"
        except Exception as exc:
            log.debug("MCP server %s failed to start", name, exc_info=True)
            notice = f"MCP server {name} failed to start: {describe(exc)}"
        log.warning("%s (%s)", notice, self.server.source)
        return [], notice

    async def close(self) -> None:
        """Stop the client; a start still running is aborted first. Never raises."""
        if self._job is not None and not self._job.done():
            self._abortable.abort()
            await _quietly(self._job)
        if not self._started:
            return  # MCPClient.start() cleans up after itself when it fails
        stopping = asyncio.ensure_future(asyncio.to_thread(self.client.stop, None, None, None))
        try:
            await asyncio.wait_for(asyncio.shield(stopping), STOP_GRACE_S)
        except TimeoutError:
            self._abortable.abort()
            await _quietly(stopping)
        except Exception as exc:  # the connection had already failed: nothing left to stop
            log.debug("MCP server %s: %s", self.server.name, describe(exc))

    async def _refusal(self) -> str | None:
        parts = urlsplit(self.server.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            await resolve_checked(host, port, self._allowed, shown=host)
        except HostRefused as exc:
            return f"refused: {exc}; {ALLOW_HINT}"
        except LookupFailed as exc:
            return str(exc)
        return None

    def _start_and_list(self) -> list[AgentTool]:
        """In a worker thread: start the session and list the tools (both block)."""
        from strands.tools.mcp import MCPAgentTool

        self.client.start()
        self._started = True
        found: list[Any] = []
        token: str | None = None
        while len(found) < MAX_TOOLS_PER_SERVER:
            page = self.client.list_tools_sync(token, prefix="")
            found.extend(page)
            token = page.pagination_token
            if token is None:
                break
        if len(found) > MAX_TOOLS_PER_SERVER:
            log.info("MCP server %s: only its first %d tools", self.server.name, len(found))
        return [
            MCPAgentTool(
                tool.mcp_tool,
                self.client,
                name_override=tool_name(self.server.name, tool.mcp_tool.name),
                timeout=timedelta(seconds=TOOL_CALL_TIMEOUT_S),
            )
            for tool in found[:MAX_TOOLS_PER_SERVER]
        ]

    def _open_transport(self) -> AbstractAsyncContextManager[Any]:
        server = self.server
        if server.transport == "stdio":
            return _stdio(server, self._plan.log_path)
        allowed = self._allowed if server.guarded else None
        if server.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(
                server.url,
                headers=dict(server.headers),
                httpx_client_factory=lambda headers=None, timeout=None, auth=None: http_client(
                    allowed, headers, timeout, auth
                ),
            )
        return _streamable_http(server, allowed)


def tool_name(server: str, tool: str) -> str:
    """``<server>_<tool>``, in the characters and length model providers accept."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}_{tool}")[:MAX_TOOL_NAME]


async def _quietly(job: asyncio.Future[Any]) -> None:
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.shield(job)


def describe(exc: BaseException) -> str:
    """The innermost cause, as a person would say it: strands wraps the real reason in an
    initialization error and anyio in exception groups."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return str(exc).strip() or type(exc).__name__


class _Aborted(Exception):
    """The hub cut the session (a start or a stop took too long)."""


class _Abortable:
    """Runs a transport inside a cancel scope the hub can fire from another thread: strands'
    stop() waits for its session, and a server that never finishes the handshake would keep
    that wait going for as long as it runs."""

    def __init__(self, opener: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scope: anyio.CancelScope | None = None
        self._aborted = False

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        import anyio

        with anyio.CancelScope() as scope:
            with self._lock:
                self._loop, self._scope = asyncio.get_running_loop(), scope
                if self._aborted:
                    scope.cancel()
            async with self._opener() as streams:
                yield streams
        if scope.cancelled_caught:
            raise _Aborted("the hub stopped the session")

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            if self._loop is not None and self._scope is not None:
                with contextlib.suppress(RuntimeError):  # its loop is already closed
                    self._loop.call_soon_threadsafe(self._scope.cancel)


@asynccontextmanager
async def _stdio(server: McpServer, log_path: Path | None) -> AsyncIterator[Any]:
    """A stdio server; its stderr goes to mcp.log in the data dir, never to the terminal the
    TUI owns."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=dict(server.env) or None,
        cwd=server.cwd or None,
    )
    with _errlog(log_path) as errlog:
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams


def _errlog(path: Path | None) -> TextIO:
    """Where a stdio server's stderr goes (a file the session holds open)."""
    return open(path or os.devnull, "a", encoding="utf-8")


@asynccontextmanager
async def _streamable_http(server: McpServer, allowed: Allowance | None) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client

    async with (
        http_client(allowed, dict(server.headers)) as client,
        streamable_http_client(server.url, http_client=client) as streams,
    ):
        yield streams


def http_client(
    allowed: Allowance | None,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """MCP's HTTP client defaults, with every request held to the network guard when
    `allowed` is given (a server named by a request), and no proxy from the environment."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    inner = httpx2.AsyncHTTPTransport(trust_env=False)
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        auth=auth,
        follow_redirects=True,
        trust_env=False,
        transport=inner if allowed is None else _guarded_transport_class()(inner, allowed),
    )


@cache
def _guarded_transport_class() -> Callable[
    [httpx2.AsyncBaseTransport, Allowance], httpx2.AsyncBaseTransport
]:
    """Defined on first use, so httpx2 is imported only when a turn has an MCP server."""
    import httpx2

    class GuardedTransport(httpx2.AsyncBaseTransport):
        """Checks every request's host (the first, each redirect) and connects to the checked
        address; the Host header and the TLS server name stay the host's name."""

        def __init__(self, inner: httpx2.AsyncBaseTransport, allowed: Allowance) -> None:
            self._inner, self._allowed = inner, allowed

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            host = request.url.raw_host.decode("ascii")  # IDNA-encoded, as DNS and TLS want
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            try:
                checked = await resolve_checked(host, port, self._allowed, shown=request.url.host)
            except HostRefused as exc:
                raise httpx2.ConnectError(f"refused: {exc}; {ALLOW_HINT}", request=request) from exc
            except LookupFailed as exc:
                raise httpx2.ConnectError(str(exc), request=request) from exc
            request.url = request.url.copy_with(host=checked[0]["host"])
            request.extensions = {**request.extensions, "sni_hostname": host}
            return await self._inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self._inner.aclose()

    return GuardedTransport
