"""Which model URLs the hub dials as configured, and the guard on every other one.

A model's base URL can come from three places. The owner's ``config.toml`` (``model.base_url``,
``ollama.host``, or their environment variables) is trusted as written: a llama.cpp server on
this machine or LM Studio on the LAN is a normal setup. A base URL from a request header
(``x-tiny-model-base-url``) or from a member's saved choice is text from a caller, so it is held
to the network guard of the ``http`` tool (:mod:`hub.core.netguard`, with ``http.allow_hosts``):
loopback, private, link-local and metadata addresses are refused. The hub's own API key goes
only to a URL from its own config.

The providers open their own connections (strands' Ollama and OpenAI models through httpx,
the tool-capability probe through aiohttp), so a check of the URL before the turn would leave a
window: the name could resolve elsewhere a moment later (DNS rebinding), or the server could
redirect. So the clients themselves are guarded. httpx gets a transport whose network backend
resolves every host it connects to once, checks every address, and connects only to a checked
one (the TLS server name stays the host name); aiohttp gets ``netguard.GuardedConnector``, which
does the same for names and IP literals alike (aiohttp's resolver never sees a literal).
A base URL is checked when it is saved (``PUT /api/model``), when a turn or ``/api/health``
resolves it, and at every connection made to it.
Every connection, redirects included, passes through that one check. httpx has no parameter for
a network backend, so :func:`guarded_httpx_client` sets the transport's connection pool itself.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import aiohttp
import httpcore
import httpx

from hub.config import Settings
from hub.core.netguard import (
    Allowance,
    GuardedConnector,
    HostRefused,
    LookupFailed,
    resolve_checked,
)
from hub.core.urls import UrlRefused, canonical_url

__all__ = [
    "GuardedBackend",
    "ModelUrlRefused",
    "ModelUrlUnresolved",
    "check_url",
    "guard_for",
    "guarded_aiohttp_connector",
    "guarded_client_args",
    "guarded_httpx_client",
    "guarded_openai_client",
    "guarded_transport",
    "is_configured_url",
]

HINT = "the hub's owner can allow a host with http.allow_hosts"


class ModelUrlRefused(Exception):
    """A model base URL the guard does not let the hub dial; the message says why."""


class ModelUrlUnresolved(ModelUrlRefused):
    """The URL's host does not resolve now: refused for a turn, kept when saved (the name may
    resolve later, and every dial checks it again)."""


def _normal(url: str) -> str | None:
    """The URL in canonical form (``hub.core.urls``), so that a URL is judged as it will be
    dialled; None when it has no single reading."""
    text = url.strip().rstrip("/")
    try:
        return str(canonical_url(text if "://" in text else f"http://{text}")).rstrip("/")
    except UrlRefused:
        return None


def is_configured_url(url: str, settings: Settings) -> bool:
    """True for no URL at all (the provider's own, or the configured host) and for a URL the
    owner configured (``model.base_url``, ``ollama.host``)."""
    if not url.strip():
        return True
    configured = {_normal(u) for u in (settings.model_base_url, settings.ollama_host) if u}
    given = _normal(url)
    return given is not None and given in configured


def guard_for(url: str, settings: Settings) -> Allowance | None:
    """None when ``url`` is the owner's own; else what the guard allows it to reach."""
    if is_configured_url(url, settings):
        return None
    return Allowance.of_hosts(settings.http_allow_hosts)


async def check_url(url: str, allowance: Allowance) -> None:
    """Refuse a URL that is not http(s) or whose host is not allowed, before a turn starts,
    so the caller gets a clear 400 instead of an error inside the stream."""
    text = url.strip()
    try:
        parsed = canonical_url(text if "://" in text else f"http://{text}")
    except UrlRefused as exc:
        raise ModelUrlRefused(f"model base URL refused: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise ModelUrlRefused(f"model base URL {url[:200]!r} must be an http(s) URL with a host")
    # The providers append their own paths to a base (``/api/show``, ``/chat/completions``):
    # behind a query or a fragment those would become text of another URL's choosing.
    if parsed.user or parsed.password or "?" in text or "#" in text:
        raise ModelUrlRefused(
            f"model base URL refused: {url[:200]!r} has a user, password, query or fragment"
        )
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        await resolve_checked(parsed.raw_host, port, allowance, shown=parsed.host)
    except HostRefused as exc:
        raise ModelUrlRefused(f"model base URL refused: {exc}; {HINT}") from None
    except LookupFailed as exc:
        raise ModelUrlUnresolved(f"model base URL refused: {exc}") from None


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the guard checked."""

    def __init__(self, allowance: Allowance) -> None:
        self._allowance = allowance
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            checked = await resolve_checked(host, port, self._allowance)
        except (HostRefused, LookupFailed) as exc:
            raise httpcore.ConnectError(f"refused: {exc}; {HINT}") from None
        failure: httpcore.ConnectError | None = None
        for result in checked:
            try:
                return await self._inner.connect_tcp(
                    result["host"], port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host} has no address to connect to")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("refused: a Unix socket is this machine")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(
    allowance: Allowance, ssl_context: ssl.SSLContext | None = None
) -> httpx.AsyncHTTPTransport:
    """httpx's own transport over a connection pool whose network backend is guarded."""
    context = ssl_context or ssl.create_default_context()
    transport = httpx.AsyncHTTPTransport(verify=context)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context, network_backend=GuardedBackend(allowance)
    )
    return transport


def guarded_httpx_client(
    allowance: Allowance, ssl_context: ssl.SSLContext | None = None, **kwargs: Any
) -> httpx.AsyncClient:
    """An httpx client whose every connection, redirects included, passes the guard. No
    environment proxy: a proxy would make the connection for us, unchecked."""
    transport = guarded_transport(allowance, ssl_context)
    return httpx.AsyncClient(transport=transport, trust_env=False, **kwargs)


def guarded_client_args(allowance: Allowance, ssl_context: ssl.SSLContext) -> dict[str, Any]:
    """Keyword arguments for an httpx client made by someone else (``ollama.AsyncClient``
    passes them on): one guarded transport, shared by every client the provider makes."""
    return {"transport": guarded_transport(allowance, ssl_context), "trust_env": False}


def guarded_openai_client(allowance: Allowance, client_args: dict[str, Any]) -> Any:
    """An OpenAI SDK client over a guarded httpx client. One refusal is final: no retries."""
    import openai

    http_client = guarded_httpx_client(allowance, follow_redirects=True)
    return openai.AsyncOpenAI(**client_args, http_client=http_client, max_retries=0)


def guarded_aiohttp_connector(allowance: Allowance) -> aiohttp.TCPConnector:
    """An aiohttp connector that checks every host it connects to, IP literals included
    (``hub.core.netguard.GuardedConnector``)."""
    return GuardedConnector(allowance)
