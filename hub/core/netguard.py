"""Whether a host may be reached from the hub, and the checked addresses to reach it at.

The hub runs inside someone's home network, next to a router's admin page, a NAS, a printer
and maybe a cloud metadata service, all of which trust anything already inside the network.
Whatever makes the hub connect somewhere on someone else's behalf (the agent's `http` tool, an
endpoint device's URL) must not turn it into a pivot into that network: only public addresses
are reached unless the hub's owner has allowed a host (or, for some callers, a range).

A check on the host name alone is not enough, because a name can resolve to several addresses
and can resolve differently a moment later (DNS rebinding). So `resolve_checked` resolves the
host itself, refuses it if any of its addresses is not allowed, and returns exactly those
checked addresses; a `PinnedResolver` hands them to aiohttp without ever looking anything up,
so the connection goes to an address that was checked, with no window between the check and
the connect. The Host header and the TLS server name stay the original host name.

IP literals are recognised in every notation the OS accepts, including the legacy IPv4 forms
(2130706433, 0x7f.0.0.1, 017700000001, 127.1) that inet_aton, and so getaddrinfo, turn into an
address; IPv4 carried inside IPv6 (::ffff:a.b.c.d, NAT64, 6to4) is judged by the IPv4 address.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = [
    "Allowance",
    "GuardedConnector",
    "HostRefused",
    "IPAddress",
    "IPNetwork",
    "LookupFailed",
    "PinnedResolver",
    "is_localhost_name",
    "literal_address",
    "normalise_host",
    "refusal_reason",
    "refused_by_spelling",
    "resolve_checked",
]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

_METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_INET_ATON_CHARS = frozenset("0123456789abcdefxABCDEFX.")
_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class HostRefused(Exception):
    """The host, or an address it resolves to, may not be reached. The message is a phrase for
    a person ("10.0.0.1 is a private address"); callers add their own prefix and hint."""

    def __init__(self, message: str, host: str, address: IPAddress | None, reason: str) -> None:
        super().__init__(message)
        self.host = host
        self.address = address
        self.reason = reason


class LookupFailed(Exception):
    """The host name could not be resolved to an IPv4 or IPv6 address. The message is a phrase
    for a person ("cannot resolve example.invalid (...)")."""


def refusal_reason(address: IPAddress) -> str | None:
    """Why `address` must not be reached without the owner's say-so, or None if it is public.

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


def literal_address(host: str) -> IPAddress | None:
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


def is_localhost_name(host: str) -> bool:
    """True for `localhost` and names under it, which resolve to this machine."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def normalise_host(host: str) -> str:
    """The form in which hosts from URLs and from allow lists are compared.

    Standard IP notations compare by address ("::1" is "0:0::1"); legacy forms stay as written,
    so allowing 127.0.0.1 does not allow 2130706433. Names compare case-insensitively.
    """
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


@dataclass(frozen=True)
class Allowance:
    """What the hub's owner allowed beyond the public internet.

    `hosts` are exact host names or IP literals in `normalise_host` form: such a host is reached
    whatever it resolves to. `networks` are ranges: an address inside one is reached whatever
    name led to it. `never` names refusal reasons (as `refusal_reason` spells them) that no
    allowance overrides.
    """

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    never: frozenset[str] = frozenset()

    @classmethod
    def of_hosts(cls, hosts: Iterable[str]) -> Allowance:
        """Exact hosts only (blank entries are skipped)."""
        return cls(hosts=frozenset(normalise_host(host) for host in hosts if host.strip()))

    def names(self, *hosts: str | None) -> bool:
        """True if any of `hosts` (spellings of one host) was allowed by name."""
        return any(host is not None and normalise_host(host) in self.hosts for host in hosts)

    def covers(self, address: IPAddress) -> bool:
        """True if `address` lies in an allowed range."""
        return any(address in network for network in self.networks)

    def refuses(self, address: IPAddress, *, named: bool) -> str | None:
        """The refusal reason for `address`, or None if it may be reached (`named`: its host
        was allowed by name)."""
        reason = refusal_reason(address)
        if reason is None or reason in self.never:
            return reason
        if named or self.covers(address):
            return None
        return reason


NOTHING_ALLOWED = Allowance()


def refused_by_spelling(url: str, allowance: Allowance = NOTHING_ALLOWED) -> str | None:
    """Why ``url``'s host may not be reached, judged from its spelling alone (an IP literal in
    any notation, a loopback name), or None. For a URL being saved, where nothing is looked
    up: what a name resolves to is judged by :func:`resolve_checked` when it is dialled."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None  # not a URL the dial could use either; its own check says why
    if not host or allowance.names(host):
        return None
    literal = literal_address(host)
    if literal is not None:
        reason = allowance.refuses(literal, named=False)
        return None if reason is None else f"{host} is {_a(reason)} address"
    if is_localhost_name(host):
        return f"{host} is this machine (a loopback name)"
    return None


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


async def resolve_checked(
    host: str,
    port: int,
    allowance: Allowance = NOTHING_ALLOWED,
    *,
    shown: str | None = None,
) -> list[ResolveResult]:
    """Resolve `host`, check every address, and return the addresses that may be connected to.

    `host` is the host as it will be connected to (a URL's raw, IDNA-encoded host, IPv6 without
    brackets); `shown` is the spelling to use in messages (a URL's decoded host), which is also
    matched against the allowed names. Raises HostRefused when the host or any of its addresses
    is not allowed, and LookupFailed when it does not resolve.
    """
    shown = shown or host
    named = allowance.names(shown, host)

    literal = literal_address(host)
    if literal is not None:
        if (reason := allowance.refuses(literal, named=named)) is not None:
            spelled = shown if shown == str(literal) else f"{shown} ({literal})"
            raise HostRefused(f"{spelled} is {_a(reason)} address", shown, literal, reason)
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [
            ResolveResult(
                hostname=host,
                host=str(literal),
                port=port,
                family=family,
                proto=socket.IPPROTO_TCP,
                flags=_NUMERIC_FLAGS,
            )
        ]

    if not named and (is_localhost_name(shown) or is_localhost_name(host)):
        raise HostRefused(f"{shown} is this machine (a loopback name)", shown, None, "loopback")

    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise LookupFailed(f"cannot resolve {shown} ({exc})") from exc

    results: list[ResolveResult] = []
    seen: set[str] = set()
    for family, _type, proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address_text = str(sockaddr[0])
        address = ipaddress.ip_address(address_text)
        if (reason := allowance.refuses(address, named=named)) is not None:
            raise HostRefused(
                f"{shown} resolves to {address}, {_a(reason)} address", shown, address, reason
            )
        if address_text in seen:
            continue
        seen.add(address_text)
        results.append(
            ResolveResult(
                hostname=host,
                host=address_text,
                port=port,
                family=family,
                proto=proto or socket.IPPROTO_TCP,
                flags=_NUMERIC_FLAGS,
            )
        )
    if not results:
        raise LookupFailed(f"{shown} has no IPv4 or IPv6 address")
    return results


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
            raise OSError(f"{host} was not checked by the network guard")
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


class GuardedConnector(aiohttp.TCPConnector):
    """An aiohttp connector that checks every host it connects to, IP literals included.

    aiohttp hands a host name to its resolver but connects to an IP literal (``127.0.0.1``,
    ``[::1]``) without asking the resolver, so a guarded resolver alone lets a literal through.
    This connector answers the step that both take (``_resolve_host``) with
    :func:`resolve_checked`: every connection, each redirect's included, goes to an address this
    module checked, whatever the host is spelled as. A refusal is an OSError, which aiohttp
    raises as a ``ClientConnectorError`` naming the host.
    """

    def __init__(self, allowance: Allowance = NOTHING_ALLOWED, **kwargs: Any) -> None:
        super().__init__(use_dns_cache=False, **kwargs)
        self._allowance = allowance

    async def _resolve_host(
        self, host: str, port: int, traces: Sequence[Any] | None = None
    ) -> list[ResolveResult]:
        try:
            return await resolve_checked(host, port, self._allowance)
        except (HostRefused, LookupFailed) as exc:
            raise OSError(errno.EACCES, f"refused: {exc}") from None
