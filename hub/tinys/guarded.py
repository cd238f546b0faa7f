"""One HTTP exchange with any method, kept on the public internet by the network guard.

A tiny's OpenAPI schema names a server, and the model fills in the requests; the `http` tool
fetches whatever URL the model names. All of it is text from strangers, so every exchange follows
one policy (``hub.core.netguard``): every hop's host is resolved and checked, the connection goes to
exactly the checked addresses through a ``PinnedResolver``, and private or loopback addresses
are refused unless the hub's owner named the host in ``http.allow_hosts``.

The exchange lives here, below both of its users: ``hub.tinys.openapi`` (loading a schema,
calling its operations, which also write) and ``hub.agent.tools.http`` (GET and HEAD, in its
own words). The `http` tool's module cannot be the home, since importing it from ``hub.tinys``
would import the tool package and come round to ``hub.tinys`` again.
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

from hub.core.netguard import Allowance, HostRefused, LookupFailed, PinnedResolver, resolve_checked
from hub.core.urls import UrlRefused, canonical_url

__all__ = ["ALLOW_HINT", "Exchange", "SendFailed", "SendRefused", "send"]

ALLOW_HINT = "the hub's owner can allow a host with http.allow_hosts"
USER_AGENT = "tiny-hub (openapi)"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class _Unsent(Exception):
    """The message is meant for a person. For a caller that words failures its own way,
    `reason` says what went wrong without naming a URL, `subject` is the URL it is about when
    that URL itself is at fault (not a URL, no host, not http(s), a host that does not
    resolve), and `at` is the hop the exchange had reached when the connection went wrong."""

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        subject: str | URL | None = None,
        at: URL | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason
        self.subject = subject
        self.at = at


class SendRefused(_Unsent):
    """Not sent by policy: a scheme other than http(s), or an address inside a private
    network."""


class SendFailed(_Unsent):
    """Allowed, but the exchange went wrong: DNS, connection, TLS, timeout, redirects."""


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
        parsed = canonical_url(url)  # the URL the host check reads is the one connected to
    except UrlRefused as exc:
        reason = f"not a URL the hub reads one way only: {exc}"
        raise SendFailed(f"{url} is {reason}", reason=reason, subject=url) from exc
    if parsed.scheme.lower() not in ("http", "https"):
        shown = f"{parsed.scheme}: URLs" if parsed.scheme else "relative URLs"
        reason = f"{shown} are not allowed, only http(s)"
        raise SendRefused(f"refused: {url} is not reached; {reason}", reason=reason, subject=url)
    if not parsed.raw_host:
        raise SendFailed(f"{url} has no host", reason="the URL has no host", subject=url)
    return parsed


async def _checked(target: URL, allowed: Allowance) -> list[ResolveResult]:
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        return await resolve_checked(target.raw_host or "", port, allowed, shown=target.host)
    except HostRefused as exc:
        raise SendRefused(f"refused: {exc}; {ALLOW_HINT}") from exc
    except LookupFailed as exc:
        raise SendFailed(str(exc), subject=target) from exc


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
    user_agent: str = USER_AGENT,
) -> Exchange:
    """Send one request and read at most `max_bytes` of the answer, every hop checked.

    Redirects are followed as browsers do (303 after anything but HEAD, and 301/302 after
    anything but GET/HEAD, turn into a GET without the body); the caller's headers are dropped
    when a redirect leaves the origin, so a key meant for one API never reaches another host.
    Raises SendRefused and SendFailed, never an aiohttp error.
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
                headers={"User-Agent": user_agent},
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
                    if method != "HEAD" and (
                        status == 303 or (status in (301, 302) and method != "GET")
                    ):
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
        reason = _reason(exc)
        at = "" if current == start else f" (at {current})"
        raise SendFailed(f"{reason}{at}", reason=reason, at=current) from exc
    raise AssertionError("unreachable: the redirect loop always returns or raises")
