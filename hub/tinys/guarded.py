"""One HTTP exchange with any method, kept on the public internet by the network guard.

A tiny's OpenAPI schema names a server, and the model fills in the requests: both are text from
strangers. So loading a schema and calling its operations follow the `http` tool's policy
(``hub.netguard``): every hop's host is resolved and checked, the connection goes to exactly
the checked addresses through a ``PinnedResolver``, and private or loopback addresses are
refused unless the hub's owner named the host in ``http.allow_hosts``. The `http` tool only
reads (GET, HEAD); operations also write, which is why this exchange exists beside it.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import ResolveResult
from yarl import URL

from hub.netguard import Allowance, HostRefused, LookupFailed, PinnedResolver, resolve_checked

__all__ = ["ALLOW_HINT", "Exchange", "SendFailed", "SendRefused", "send"]

ALLOW_HINT = "the hub's owner can allow a host with http.allow_hosts"
USER_AGENT = "tiny-hub (openapi)"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class SendRefused(Exception):
    """Not sent by policy: a scheme other than http(s), or an address inside a private
    network. The message is meant for a person."""


class SendFailed(Exception):
    """Allowed, but the exchange went wrong: DNS, connection, TLS, timeout, redirects. The
    message is meant for a person."""


@dataclass(frozen=True)
class Exchange:
    """What came back: the final URL after redirects, the status, and at most `max_bytes` of
    the body (`truncated` when there was more)."""

    url: str
    status: int
    reason: str
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool

    @property
    def is_text(self) -> bool:
        kind = self.content_type.lower()
        return (
            kind.startswith("text/")
            or kind in ("application/json", "application/xml", "application/yaml")
            or kind.endswith(("+json", "+xml", "+yaml", "/x-yaml"))
        )

    def text(self) -> str:
        """The body decoded by its charset (UTF-8 when unknown); a multi-byte character cut
        by the size bound is dropped rather than shown as garbage."""
        try:
            decoder = codecs.getincrementaldecoder(self.charset or "utf-8")(errors="replace")
        except LookupError:
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(self.body, final=not self.truncated)


def _target(url: str | URL) -> URL:
    try:
        parsed = url if isinstance(url, URL) else URL(url.strip())
    except (ValueError, TypeError) as exc:
        raise SendFailed(f"{url} is not a valid URL ({exc})") from exc
    if parsed.scheme.lower() not in ("http", "https"):
        shown = f"{parsed.scheme}: URLs" if parsed.scheme else "relative URLs"
        raise SendRefused(f"refused: {url} is not reached; {shown} are not allowed, only http(s)")
    if not parsed.raw_host:
        raise SendFailed(f"{url} has no host")
    return parsed


async def _checked(target: URL, allowed: Allowance) -> list[ResolveResult]:
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        return await resolve_checked(target.raw_host or "", port, allowed, shown=target.host)
    except HostRefused as exc:
        raise SendRefused(f"refused: {exc}; {ALLOW_HINT}") from exc
    except LookupFailed as exc:
        raise SendFailed(str(exc)) from exc


async def _read(response: aiohttp.ClientResponse, max_bytes: int) -> Exchange:
    body = bytearray()
    while len(body) <= max_bytes:
        chunk = await response.content.read(max_bytes + 1 - len(body))
        if not chunk:
            break
        body += chunk
    return Exchange(
        url=str(response.url),
        status=response.status,
        reason=response.reason or "",
        content_type=response.content_type,
        charset=response.charset,
        body=bytes(body[:max_bytes]),
        truncated=len(body) > max_bytes,
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
    return str(exc) or type(exc).__name__


async def send(
    method: str,
    url: str | URL,
    *,
    allow_hosts: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    max_bytes: int = 262_144,
    timeout_s: float = 30.0,
    max_redirects: int = 3,
) -> Exchange:
    """Send one request and read at most `max_bytes` of the answer, every hop checked.

    Redirects are followed as browsers do (303, and 301/302 after anything but GET/HEAD, turn
    into a GET without the body); the caller's headers are dropped when a redirect leaves the
    origin, so a key meant for one API never reaches another host. Raises SendRefused and
    SendFailed, never an aiohttp error.
    """
    allowed = Allowance.of_hosts(allow_hosts)
    method = method.upper()
    current = start = _target(url)
    extra = dict(headers or {})
    resolver = PinnedResolver()
    try:
        async with asyncio.timeout(timeout_s):
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False),
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),
                headers={"User-Agent": USER_AGENT},
            ) as session:
                for hop in range(max_redirects + 1):
                    resolver.pin(current.raw_host or "", await _checked(current, allowed))
                    async with session.request(
                        method, current, headers=extra, data=body, allow_redirects=False
                    ) as response:
                        location = response.headers.get("Location")
                        if response.status not in REDIRECT_STATUSES or not location:
                            return await _read(response, max_bytes)
                        if hop == max_redirects:
                            raise SendFailed(
                                f"too many redirects (more than {max_redirects}, "
                                f"the last to {location})"
                            )
                        try:
                            following = response.url.join(URL(location))
                        except (ValueError, TypeError) as exc:
                            raise SendFailed(f"bad redirect to {location!r} ({exc})") from exc
                        status = response.status
                    if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
                        method, body = "GET", None
                        extra.pop("Content-Type", None)
                    following = _target(following)
                    if following.origin() != current.origin():
                        extra = {}
                    current = following
    except (SendRefused, SendFailed):
        raise
    except TimeoutError as exc:
        raise SendFailed(f"no answer within {timeout_s:g} s") from exc
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        at = "" if current == start else f" (at {current})"
        raise SendFailed(f"{_reason(exc)}{at}") from exc
    raise AssertionError("unreachable: the redirect loop always returns or raises")
