"""The agent's `http` tool, kept on the public internet by the network guard.

The hub runs inside someone's home network, and the model that drives this tool is steered by
whatever text reaches it: a web page, a message, a memory. Without a guard, "fetch this URL" would
let that text reach the router's admin page, the NAS, the printer or a cloud metadata service, all
of which trust anything already inside the network. So a public tiny must not turn the hub into
a pivot into the home network: only public addresses are fetched unless the hub's owner has
named a host in `http.allow_hosts`.

Every hop (the first URL and every redirect) goes through `hub.netguard`: its host is resolved
and checked there, and the connection goes to exactly the checked addresses through a
`PinnedResolver`, so DNS rebinding has no window between the check and the connect.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import ResolveResult
from strands import tool
from strands.types.tools import AgentTool
from yarl import URL

from hub.netguard import (
    Allowance,
    HostRefused,
    LookupFailed,
    PinnedResolver,
    refusal_reason,
    resolve_checked,
)

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "FetchResult",
    "PinnedResolver",
    "fetch_url",
    "make_http_tool",
    "refusal_reason",
]

ALLOWED_METHODS = ("GET", "HEAD")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ALLOW_HINT = "the hub's owner can allow a host with http.allow_hosts"
USER_AGENT = "tiny-hub (http tool)"


class FetchRefused(Exception):
    """The target is not fetched by policy: a scheme or method that is not allowed, or an
    address inside a private network. The message is meant for a person."""


class FetchFailed(Exception):
    """The target was allowed but could not be fetched: DNS, connection, TLS, timeout, too many
    redirects. The message is meant for a person."""


@dataclass(frozen=True)
class FetchResult:
    url: str  # the final URL, after redirects
    status: int
    content_type: str
    text: str
    truncated: bool


def _parse_target(url: str | URL) -> URL:
    try:
        parsed = url if isinstance(url, URL) else URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise FetchFailed(f"cannot fetch {url}: not a valid URL ({exc})") from exc
    scheme = parsed.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"{scheme}: URLs" if scheme else "relative URLs"
        raise FetchRefused(f"refused: {url} is not fetched; {shown} are not allowed, only http(s)")
    if not parsed.raw_host:
        raise FetchFailed(f"cannot fetch {url}: the URL has no host")
    return parsed


async def _checked_addresses(target: URL, allowed: Allowance) -> list[ResolveResult]:
    """Resolve the target's host and check every address; the list is what may be connected to."""
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        return await resolve_checked(target.raw_host or "", port, allowed, shown=target.host)
    except HostRefused as exc:
        raise FetchRefused(f"refused: {exc}; {ALLOW_HINT}") from exc
    except LookupFailed as exc:
        raise FetchFailed(f"cannot fetch {target}: {exc}") from exc


def _is_text(content_type: str) -> bool:
    content_type = content_type.lower()
    return (
        content_type.startswith("text/")
        or content_type in ("application/json", "application/xml")
        or content_type.endswith(("+json", "+xml"))
    )


async def _read_result(
    response: aiohttp.ClientResponse, method: str, max_bytes: int
) -> FetchResult:
    content_type = response.content_type
    body = bytearray()
    if method != "HEAD":
        while len(body) <= max_bytes:
            chunk = await response.content.read(max_bytes + 1 - len(body))
            if not chunk:
                break
            body += chunk
    truncated = len(body) > max_bytes
    data = bytes(body[:max_bytes])

    if method == "HEAD":
        text = ""
    elif _is_text(content_type):
        try:
            decoder = codecs.getincrementaldecoder(response.charset or "utf-8")(errors="replace")
        except LookupError:
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # A cut in the middle of a multi-byte character is dropped rather than shown as garbage.
        text = decoder.decode(data, final=not truncated)
    else:
        size = f"more than {max_bytes} bytes" if truncated else f"{len(data)} bytes"
        text = f"[binary content: {content_type}, {size}]"
    return FetchResult(
        url=str(response.url),
        status=response.status,
        content_type=content_type,
        text=text,
        truncated=truncated,
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"cannot resolve {exc.host} ({exc.os_error})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if isinstance(os_error, ConnectionRefusedError):
            why = "connection refused: nothing is listening there"
        elif os_error.errno is not None:
            why = os.strerror(os_error.errno)
        else:
            why = str(os_error) or type(os_error).__name__
        return f"cannot connect to {exc.host}:{exc.port} ({why})"
    text = str(exc)
    return text if text else type(exc).__name__


async def fetch_url(
    url: str,
    *,
    allow_hosts: Sequence[str] = (),
    max_bytes: int = 262_144,
    timeout_s: float = 15.0,
    max_redirects: int = 5,
    method: str = "GET",
) -> FetchResult:
    """Fetch `url` (GET or HEAD), following up to `max_redirects` redirects, every hop checked.

    Raises FetchRefused when the scheme, the method or an address of any hop is not allowed,
    and FetchFailed when the fetch itself goes wrong (DNS, connection, TLS, timeout, too many
    redirects). Hosts in `allow_hosts` (exact name or IP literal, case-insensitive) skip the
    address check.
    """
    if max_bytes < 0 or max_redirects < 0:
        raise ValueError("max_bytes and max_redirects must not be negative")
    method = method.strip().upper()
    if method not in ALLOWED_METHODS:
        raise FetchRefused(f"refused: the http tool only does GET and HEAD, not {method or '?'}")
    allowed = Allowance.of_hosts(allow_hosts)
    current = _parse_target(url)

    resolver = PinnedResolver()
    try:
        async with asyncio.timeout(timeout_s):
            connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
            async with aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),
                headers={"User-Agent": USER_AGENT},
            ) as session:
                for hop in range(max_redirects + 1):
                    resolver.pin(current.raw_host or "", await _checked_addresses(current, allowed))
                    async with session.request(method, current, allow_redirects=False) as response:
                        location = response.headers.get("Location")
                        if response.status not in REDIRECT_STATUSES or not location:
                            return await _read_result(response, method, max_bytes)
                        if hop == max_redirects:
                            raise FetchFailed(
                                f"cannot fetch {url}: too many redirects "
                                f"(more than {max_redirects}, the last to {location})"
                            )
                        try:
                            next_url = response.url.join(URL(location))
                        except (ValueError, TypeError) as exc:
                            raise FetchFailed(
                                f"cannot fetch {url}: bad redirect to {location!r} ({exc})"
                            ) from exc
                    current = _parse_target(next_url)
    except (FetchRefused, FetchFailed):
        raise
    except TimeoutError as exc:
        raise FetchFailed(f"cannot fetch {url}: no answer within {timeout_s:g} s") from exc
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        at = "" if str(current) == url else f" (at {current})"
        raise FetchFailed(f"cannot fetch {url}{at}: {_reason(exc)}") from exc
    raise AssertionError("unreachable: the redirect loop always returns or raises")


def _error(message: str) -> dict[str, Any]:
    return {"status": "error", "content": [{"text": message}]}


def make_http_tool(allow_hosts: Sequence[str] = ()) -> AgentTool:
    """The strands tool named `http`, bound to the owner's `http.allow_hosts`."""
    allowed = tuple(allow_hosts)

    @tool(name="http")
    async def http(url: str, method: str = "GET") -> dict[str, Any]:
        """Fetch a URL from the public internet and read its text.

        Returns the HTTP status, the content type, the final URL after redirects and the body
        as text (binary content is only described). Addresses inside private networks are
        refused unless the hub's owner has allowed the host.

        Args:
            url: The absolute http:// or https:// URL to fetch.
            method: GET to read the body (the default), or HEAD for the status only.
        """
        verb = method.strip().upper()
        if verb not in ALLOWED_METHODS:
            return _error(f"method {method!r} is not allowed: the http tool only does GET and HEAD")
        try:
            result = await fetch_url(url, allow_hosts=allowed, method=verb)
        except (FetchRefused, FetchFailed) as exc:
            return _error(str(exc))
        text = f"HTTP {result.status} {result.content_type} from {result.url}\n\n{result.text}"
        if result.truncated:
            text += "\n\n[truncated: only the beginning of the body was read]"
        return {"status": "success", "content": [{"text": text}]}

    return http
