"""The agent's `http` tool, and the guard that keeps it on the public internet.

The hub runs inside someone's home network, and the model that drives this tool is steered by
whatever text reaches it: a web page, a message, a memory. Without a guard, "fetch this URL" would
let that text reach the router's admin page, the NAS, the printer or a cloud metadata service, all
of which trust anything already inside the network. So a public tiny must not turn the hub into
a pivot into the home network: only public addresses are fetched unless the hub's owner has
named a host in `http.allow_hosts`.

A check on the host name alone is not enough, because a name can resolve to several addresses
and can resolve differently a moment later (DNS rebinding). So the guard resolves every hop
(the first URL and every redirect) itself, refuses the hop if any of its addresses is not
public, and then hands exactly those checked addresses to aiohttp through a resolver that never
looks anything up: the connection goes to an address that was checked, with no window between
the check and the connect. The Host header and the TLS server name stay the original host name.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from strands import tool
from strands.types.tools import AgentTool
from yarl import URL

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "FetchResult",
    "PinnedResolver",
    "fetch_url",
    "make_http_tool",
    "refusal_reason",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_METHODS = ("GET", "HEAD")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ALLOW_HINT = "the hub's owner can allow a host with http.allow_hosts"
USER_AGENT = "tiny-hub (http tool)"

_METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_INET_ATON_CHARS = frozenset("0123456789abcdefxABCDEFX.")
_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


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


def refusal_reason(address: IPAddress) -> str | None:
    """Why `address` must not be fetched without the owner's say-so, or None if it is public.

    IPv4 addresses carried inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4
    2002::/16) are judged by the IPv4 address they carry.
    """
    if address in _METADATA:
        return "cloud metadata"
    if isinstance(address, ipaddress.IPv6Address):
        embedded: ipaddress.IPv4Address | None = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
        if embedded is not None and (reason := refusal_reason(embedded)) is not None:
            return reason
        if address.ipv4_mapped is not None:
            return None  # a connection to ::ffff:a.b.c.d goes to a.b.c.d, judged just above
        if address in _NAT64_LOCAL:
            return "private"
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "shared (carrier-grade NAT)"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "non-public"
    return None


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _literal_address(host: str) -> IPAddress | None:
    """The IP address `host` spells, in any notation the OS would accept, or None for a name.

    Besides the standard notations this catches the legacy IPv4 forms (2130706433, 0x7f.0.0.1,
    017700000001, 127.1) that inet_aton, and so getaddrinfo, turn into an address.
    """
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and set(host) <= _INET_ATON_CHARS and any(ch.isdigit() for ch in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _is_localhost_name(host: str) -> bool:
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def _normalise_host(host: str) -> str:
    """The form in which hosts from URLs and from allow_hosts are compared."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        # Standard IP notations compare by address ("::1" is "0:0::1"); legacy forms stay as
        # written, so allowing 127.0.0.1 does not allow 2130706433.
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _pin_key(host: str) -> str:
    return host.lower().rstrip(".")


class PinnedResolver(AbstractResolver):
    """An aiohttp resolver that only answers with addresses the guard has already checked.

    It never looks a name up: a host that was not pinned is an error, so aiohttp cannot
    connect anywhere the guard has not seen.
    """

    def __init__(self) -> None:
        self._pins: dict[str, list[ResolveResult]] = {}

    def pin(self, host: str, results: list[ResolveResult]) -> None:
        self._pins[_pin_key(host)] = list(results)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        pinned = self._pins.get(_pin_key(host))
        if not pinned:
            raise OSError(f"{host} was not checked by the http guard")
        results = [
            ResolveResult(
                hostname=host,
                host=result["host"],
                port=port,
                family=result["family"],
                proto=result["proto"],
                flags=result["flags"],
            )
            for result in pinned
            if family == socket.AF_UNSPEC or result["family"] == family
        ]
        if not results:
            raise OSError(f"{host} has no checked address in family {family!r}")
        return results

    async def close(self) -> None:
        return None


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


async def _checked_addresses(target: URL, allowed: frozenset[str]) -> list[ResolveResult]:
    """Resolve the target's host and check every address; the list is what may be connected to."""
    host = target.host or ""
    raw_host = target.raw_host or ""
    port = target.port or (443 if target.scheme == "https" else 80)
    is_allowed = bool({_normalise_host(host), _normalise_host(raw_host)} & allowed)

    literal = _literal_address(host)
    if literal is not None:
        if not is_allowed and (reason := refusal_reason(literal)) is not None:
            spelled = host if host == str(literal) else f"{host} ({literal})"
            raise FetchRefused(f"refused: {spelled} is {_a(reason)} address; {ALLOW_HINT}")
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [
            ResolveResult(
                hostname=raw_host,
                host=str(literal),
                port=port,
                family=family,
                proto=socket.IPPROTO_TCP,
                flags=_NUMERIC_FLAGS,
            )
        ]

    if not is_allowed and _is_localhost_name(host):
        raise FetchRefused(f"refused: {host} is this machine (a loopback name); {ALLOW_HINT}")

    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(
            raw_host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchFailed(f"cannot fetch {target}: cannot resolve {host} ({exc})") from exc

    results: list[ResolveResult] = []
    seen: set[str] = set()
    for family, _type, proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address_text = str(sockaddr[0])
        address = ipaddress.ip_address(address_text)
        if not is_allowed and (reason := refusal_reason(address)) is not None:
            raise FetchRefused(
                f"refused: {host} resolves to {address}, {_a(reason)} address; {ALLOW_HINT}"
            )
        if address_text in seen:
            continue
        seen.add(address_text)
        results.append(
            ResolveResult(
                hostname=raw_host,
                host=address_text,
                port=port,
                family=family,
                proto=proto or socket.IPPROTO_TCP,
                flags=_NUMERIC_FLAGS,
            )
        )
    if not results:
        raise FetchFailed(f"cannot fetch {target}: {host} has no IPv4 or IPv6 address")
    return results


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
    allowed = frozenset(_normalise_host(host) for host in allow_hosts if host.strip())
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
