"""A small client of the hub's HTTP API: health, and /api/chat read as the contract's SSE stream.

The TUI and ``tiny-hub chat`` both use it, so the API has one reference client. It imports
nothing from the hub but ``hub.contracts``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from hub import contracts as c

Event = dict[str, Any]


class HubError(Exception):
    """The hub answered with an error, or could not be reached; the message says which.
    ``status`` is the hub's HTTP status (0 when it did not answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class HubClient:
    url: str
    token: str | None = None
    timeout: aiohttp.ClientTimeout = field(
        default_factory=lambda: aiohttp.ClientTimeout(total=None, connect=10, sock_read=120)
    )
    pin: str | None = None
    """The SHA-256 fingerprint (hex) of a hub's self-signed certificate: an https hub is then
    trusted by that fingerprint alone (``lan.tls``); without it, the usual CA checks apply."""
    _session: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)

    def open(self) -> None:
        """Keep one session, and so one pool of connections to the hub, for every request
        until ``close``: what a long-lived client (the TUI) does. Unopened, each request has
        a session of its own, so a one-shot caller has nothing to close."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> HubClient:
        self.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def _ssl(self) -> aiohttp.Fingerprint | bool:
        return aiohttp.Fingerprint(bytes.fromhex(self.pin)) if self.pin else True

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def health(self) -> dict[str, Any]:
        return await self.call("GET", "/api/health")

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """One JSON request to the hub (``/api/devices``, ``/learnings``, ...): the JSON
        answer, or HubError with the hub's own error sentence."""
        quick = aiohttp.ClientTimeout(total=30)
        try:
            async with self._request(method, path, params, body, headers, quick) as response:
                return await _json_or_raise(response)
        except aiohttp.ClientError as exc:
            raise HubError(f"cannot reach the hub at {self.url}: {exc}") from None

    @contextlib.asynccontextmanager
    async def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str | int] | None,
        body: Any,
        headers: Mapping[str, str] | None,
        limits: aiohttp.ClientTimeout,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        async with contextlib.AsyncExitStack() as stack:
            http = self._session
            if http is None or http.closed:
                http = await stack.enter_async_context(aiohttp.ClientSession())
            response = await stack.enter_async_context(
                http.request(
                    method,
                    f"{self.url}{path}",
                    params={k: str(v) for k, v in (params or {}).items()},
                    json=body,
                    headers=self._headers(headers),
                    ssl=self._ssl(),
                    timeout=limits,
                )
            )
            yield response

    async def follow_events(self, after: int = 0) -> AsyncIterator[Event]:
        """The owner's event ring (``GET /api/events``): stored events after ``after``, then
        live ones, until the caller stops iterating or the hub goes away (HubError)."""
        endless = aiohttp.ClientTimeout(total=None, connect=10, sock_read=None)
        async for event in self._sse(
            "GET",
            "/api/events",
            "lost the hub's event stream",
            params={"after": str(after)},
            read_timeout=endless,
        ):
            yield event

    async def stream_chat(
        self, messages: list[dict[str, Any]], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[Event]:
        """Yield each SSE event of one turn; return at ``[DONE]``. Closing this generator
        closes the connection, which cancels the turn in the hub."""
        async for event in self._sse(
            "POST", "/api/chat", "lost the hub", body={"messages": messages}, headers=headers
        ):
            yield event

    async def _sse(
        self,
        method: str,
        path: str,
        lost: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        read_timeout: aiohttp.ClientTimeout | None = None,
    ) -> AsyncIterator[Event]:
        """One Server-Sent Events response, event by event; the hub's error sentence (a JSON
        error before the stream) or ``lost`` (the connection failing) as HubError."""
        limits = read_timeout or self.timeout
        try:
            async with self._request(method, path, params, body, headers, limits) as response:
                if response.status != 200:
                    await _json_or_raise(response)
                async for event in _read_sse(response.content):
                    yield event
        except aiohttp.ClientError as exc:
            raise HubError(f"{lost} at {self.url}: {exc}") from None


async def _json_or_raise(response: aiohttp.ClientResponse) -> dict[str, Any]:
    try:
        body = await response.json(content_type=None)
    except (json.JSONDecodeError, aiohttp.ContentTypeError):
        body = {}
    if response.status >= 400 or not isinstance(body, dict):
        message = body.get("error") if isinstance(body, dict) else None
        raise HubError(
            f"the hub answered {response.status}: {message or response.reason}", response.status
        )
    return body


async def _read_sse(stream: aiohttp.StreamReader) -> AsyncIterator[Event]:
    data: list[str] = []
    async for raw in stream:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith(":"):
            continue  # a comment: the hub's keep-alive ping
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
            continue
        if line == "" and data:
            payload, data = "\n".join(data), []
            if payload == c.SSE_DONE:
                return
            try:
                event = json.loads(payload)
            except json.JSONDecodeError:
                raise HubError(f"the hub sent a malformed frame: {payload[:80]!r}") from None
            if not isinstance(event, dict):
                raise HubError(f"the hub sent a frame that is not an object: {payload[:80]!r}")
            yield event
