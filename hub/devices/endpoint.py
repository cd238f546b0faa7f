"""Dialling an endpoint device (docs/protocol.md, endpoint devices): its HTTPS API, with the
owner's secret.

It is one module on purpose: every check (the URL, its addresses, redirects, TLS, sizes, content
types) guards the same outbound call that carries the owner's secret, so no caller can import
half of them.

An endpoint device is a robot, printer or service with its own HTTPS API. The hub calls it on
its owner's behalf with ``Authorization: Bearer <secret>``:

    GET  /api/telemetry        any JSON                                     20 s
    POST /api/chat {prompt}    {reply} | {result} | {text} | plain text     90 s
    GET  /api/camera/snapshot  image/png, image/jpeg or image/webp, ≤ 8 MB  10 s

The device's URL was typed by a person and the secret is the owner's, so the hub is careful
about where it sends them:

* https:// only, at a public host name. IP literals in any notation, ``localhost``, ``.local``,
  ``.internal`` and dotless names are refused, unless the hub's owner allowed the host by name,
  or the address by range, in ``devices.allow_private`` (a home LAN has devices on private
  addresses). Cloud metadata, unspecified and multicast addresses are never dialled.
* At call time the host is resolved and checked again by ``hub.core.netguard``: a public name that
  resolves to a private address is refused, and the connection goes to exactly the address
  that was checked (no DNS-rebinding window).
* A redirect is refused, never followed: it could carry the bearer to another origin.
* A 401/403 is reported as "device rejected our credential".
* A snapshot's content type is pinned from our own allowlist (and must match the bytes); the
  device's header is never echoed, and a multipart stream is refused.
* The secret never appears in an error message or a log line.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from hub.core.netguard import (
    Allowance,
    HostRefused,
    IPNetwork,
    LookupFailed,
    PinnedResolver,
    is_localhost_name,
    literal_address,
    resolve_checked,
)

__all__ = [
    "EndpointClient",
    "EndpointError",
    "EndpointPolicy",
    "EndpointRefused",
    "check_endpoint_url",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

ALLOW_HINT = "the hub's owner can allow a private host or range in devices.allow_private"
USER_AGENT = "tiny-hub (endpoint devices)"
# Refusal reasons (hub.core.netguard.refusal_reason) that no allowance overrides: none is a device.
NEVER_DIALLED = frozenset({"cloud metadata", "unspecified", "multicast"})
# Our own allowlist: the type the device names -> the type we return.
SNAPSHOT_TYPES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/webp": "image/webp",
}
_FORMAT_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP"}
_CHAT_KEYS = ("reply", "result", "text")
_MAX_URL = 2048
_NAME = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9_-]{1,63}(?<!-))*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


class EndpointError(Exception):
    """The device could not be used; the message is a sentence for its owner."""


class EndpointRefused(EndpointError):
    """The URL, its address, or where the device tried to send us is not allowed."""


@dataclass(frozen=True)
class EndpointPolicy:
    """What the hub's owner allows beyond public host names.

    ``allow_private`` holds host names (exact, case-insensitive: ``printer.local``, ``robot``)
    and addresses or CIDR ranges (``192.168.1.20``, ``192.168.1.0/24``, ``fd00::/8``). A named
    host is dialled whatever private address it resolves to; an address in a range is dialled
    whichever allowed name (or IP literal in standard notation) led to it. ``ssl_context``
    replaces the default trust store (tests trust a self-signed certificate with it).
    """

    allow_private: tuple[str, ...] = ()
    ssl_context: ssl.SSLContext | None = None

    def __post_init__(self) -> None:
        _allowance(self)  # a bad range fails here, when the policy is made


def _allowance(policy: EndpointPolicy) -> Allowance:
    hosts: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in policy.allow_private:
        text = entry.strip().lower()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
        except ValueError:
            if "/" in text or ":" in text or literal_address(text) is not None:
                raise ValueError(
                    f"devices.allow_private: {entry!r} is neither a host name "
                    "nor an address or CIDR range in standard notation"
                ) from None
            hosts.add(text.rstrip("."))
    return Allowance(hosts=frozenset(hosts), networks=tuple(networks), never=NEVER_DIALLED)


DEFAULT_POLICY = EndpointPolicy()


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _shorten(text: str, limit: int = 120) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refuse(message: str) -> NoReturn:
    raise EndpointRefused(f"refused: {message}")


def _check_literal(host: str, spelled: str, allowance: Allowance) -> None:
    """An IP literal is dialled only in standard notation, and only when the owner allowed it."""
    shown = _shorten(spelled or host)
    literal = None if "%" in host else literal_address(host)
    if literal is None:
        _refuse(f"{shown} is not a valid host name or IP address")
    if spelled != host or host != str(literal):
        meant = getattr(literal, "ipv4_mapped", None) or literal
        _refuse(
            f"{shown} spells the IP address {meant} in an unusual notation; "
            "enroll the device by its https host name"
        )
    reason = allowance.refuses(literal, named=False)
    if reason is not None and reason in NEVER_DIALLED:
        _refuse(f"{host} is {_a(reason)} address, which is never dialled")
    if reason is not None:
        _refuse(f"{host} is {_a(reason)} address; {ALLOW_HINT}")
    if not allowance.covers(literal):
        _refuse(f"{host} is an IP address; enroll the device by its https host name")


def _check_name(host: str, allowance: Allowance) -> None:
    name = host.rstrip(".")
    if len(name) > 253 or not _NAME.fullmatch(name):
        _refuse(f"{_shorten(host)} is not a valid host name")
    if allowance.names(name):
        return
    if is_localhost_name(name):
        _refuse(f"{host} is this machine (a loopback name); {ALLOW_HINT}")
    if name.endswith(".local"):
        _refuse(f"{host} is a .local (mDNS) name on the home network; {ALLOW_HINT}")
    if name.endswith(".internal"):
        _refuse(f"{host} is an .internal name, not a public host name; {ALLOW_HINT}")
    if "." not in name:
        _refuse(f"{host} has no dot: it is a bare name on the home network; {ALLOW_HINT}")


def _spelled_host(text: str) -> str:
    """The host exactly as the URL text spells it (lower case, no brackets), before yarl
    normalises it: a literal must be written in standard notation, not reach one by mapping."""
    try:
        return urlsplit(text).hostname or ""
    except ValueError:
        return ""


def check_endpoint_url(url: str, policy: EndpointPolicy = DEFAULT_POLICY) -> str:
    """The device URL in normal form (https, lower-case host, no trailing slash), or
    EndpointRefused saying why it will not be dialled.

    These are the structural checks, made at enrollment and again before every call; the
    addresses the host resolves to are checked at call time.
    """
    if not isinstance(url, str) or not url.strip():
        _refuse("the device URL is empty")
    text = url.strip()
    if len(text) > _MAX_URL:
        _refuse(f"the device URL is longer than {_MAX_URL} characters")
    if any(not ch.isprintable() or ch.isspace() for ch in text):
        _refuse("the device URL contains spaces or control characters")
    try:
        parsed = URL(text)
        port = parsed.explicit_port
    except (ValueError, TypeError):
        _refuse("the device URL is not a valid URL")
    scheme = parsed.scheme.lower()
    if scheme != "https":
        shown = f"{scheme}://" if scheme else "a relative URL"
        _refuse(f"the device URL is {shown}; a device is only dialled over https://")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        _refuse(
            "the device URL carries a user name or password; "
            "the secret is sent in the Authorization header, never in the URL"
        )
    if parsed.raw_query_string or parsed.raw_fragment:
        _refuse("the device URL has a query or a fragment; enroll the base URL of its API")
    host = (parsed.raw_host or "").lower()
    if not host:
        _refuse("the device URL has no host")
    if port == 0:
        _refuse("the device URL has port 0")

    allowance = _allowance(policy)
    name = host.rstrip(".")
    last_label = name.rsplit(".", 1)[-1]
    if ":" in host or "%" in host or _NUMERIC_LABEL.fullmatch(last_label):
        _check_literal(host, _spelled_host(text), allowance)
    else:
        _check_name(host, allowance)

    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != 443:
        netloc = f"{netloc}:{port}"
    return f"https://{netloc}{parsed.raw_path.rstrip('/')}"


@dataclass(frozen=True)
class _Call:
    base: str
    method: str
    path: str
    budget: float

    @property
    def device(self) -> str:
        return f"the device at {self.base}"

    @property
    def route(self) -> str:
        return f"{self.method} {self.path}"


def _headers(secret: str, accept: str) -> dict[str, str]:
    if not isinstance(secret, str):
        raise EndpointError("the device's secret must be text")
    if any(not " " <= ch <= "~" for ch in secret):
        raise EndpointError(
            "the secret enrolled for this device has characters that cannot travel in an "
            "Authorization header (line breaks, control characters or non-ASCII)"
        )
    headers = {"User-Agent": USER_AGENT, "Accept": accept}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    return headers


def _scrub(text: str, secret: str) -> str:
    """`text` with the secret blanked out, in any letter case (hosts and types are lowered)."""
    if isinstance(secret, str) and len(secret) >= 4:
        return re.sub(re.escape(secret), "[secret]", text, flags=re.IGNORECASE)
    return text


def _check_status(response: aiohttp.ClientResponse, call: _Call) -> None:
    status = response.status
    if 300 <= status < 400:
        location = response.headers.get("Location")
        to = f" to {_shorten(location)}" if location else ""
        raise EndpointRefused(
            f"refused: {call.device} answered {call.route} with a redirect (HTTP {status}{to}); "
            "redirects are never followed, since they could carry our credential elsewhere: "
            "serve the API at the enrolled URL"
        )
    if status in (401, 403):
        raise EndpointError(
            f"device rejected our credential: {call.device} answered HTTP {status} to "
            f"{call.route}; check the secret enrolled for it"
        )
    if not 200 <= status < 300:
        reason = f" {_shorten(response.reason, 60)}" if response.reason else ""
        raise EndpointError(f"{call.device} answered HTTP {status}{reason} to {call.route}")
    if _media_type(response).startswith("multipart/"):
        raise EndpointError(
            f"{call.device} answered {call.route} with a multipart stream; "
            "the hub reads one complete answer, not a stream"
        )


def _media_type(response: aiohttp.ClientResponse) -> str:
    header = response.headers.get("Content-Type", "")
    return header.split(";", 1)[0].strip().lower()


async def _read_capped(response: aiohttp.ClientResponse, limit: int, call: _Call) -> bytes:
    """The whole body, or EndpointError as soon as it is known to exceed `limit` bytes."""
    too_big = f"{call.device} sent more than {limit} bytes for {call.route}"
    if response.content_length is not None and response.content_length > limit:
        response.close()
        raise EndpointError(f"{too_big} ({response.content_length} announced)")
    body = bytearray()
    while True:
        chunk = await response.content.read(limit + 1 - len(body))
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            response.close()
            raise EndpointError(too_big)


def _decode(body: bytes, response: aiohttp.ClientResponse) -> str:
    try:
        return body.decode(response.charset or "utf-8")
    except (LookupError, UnicodeDecodeError):
        return body.decode("utf-8", errors="replace")


def _strict_json(text: str) -> Any:
    def refuse_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse_constant)


def _chat_reply(text: str) -> str:
    """{reply} | {result} | {text} (the first present, non-null), a JSON string, or the text."""
    try:
        parsed = _strict_json(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(parsed, dict):
        for key in _CHAT_KEYS:
            value = parsed.get(key)
            if value is not None:
                return value if isinstance(value, str) else json.dumps(value)
    if isinstance(parsed, str):
        return parsed
    return text


def _looks_like(body: bytes, content_type: str) -> bool:
    if content_type == "image/png":
        return body.startswith(b"\x89PNG\r\n\x1a\n")
    if content_type == "image/jpeg":
        return body.startswith(b"\xff\xd8\xff")
    return body[:4] == b"RIFF" and body[8:12] == b"WEBP"


def _tls_detail(exc: aiohttp.ClientSSLError) -> str:
    error: object = exc.os_error
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        error = exc.certificate_error
    if isinstance(error, ssl.SSLCertVerificationError) and error.verify_message:
        return str(error.verify_message)
    if isinstance(error, ssl.SSLError) and error.reason:
        return str(error.reason).lower().replace("_", " ")
    return type(error).__name__


def _failure(exc: BaseException, call: _Call) -> EndpointError:
    """The sentence for a failure of the exchange itself."""
    if isinstance(exc, TimeoutError):
        return EndpointError(
            f"{call.device} did not answer within {call.budget:g} s ({call.route})"
        )
    if isinstance(exc, aiohttp.ClientSSLError):
        return EndpointError(
            f"could not make a trusted TLS connection to {call.device} ({_tls_detail(exc)})"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return EndpointError(
                f"{call.device} refused the connection: nothing is listening there"
            )
        why = exc.os_error.strerror or type(exc.os_error).__name__
        return EndpointError(f"could not connect to {call.device} ({why})")
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return EndpointError(f"{call.device} closed the connection before answering {call.route}")
    return EndpointError(f"could not reach {call.device} for {call.route} ({type(exc).__name__})")


class EndpointClient:
    """Calls an endpoint device's three routes, under the owner's policy, one session a call."""

    TELEMETRY_S = 20.0
    CHAT_S = 90.0
    SNAPSHOT_S = 10.0
    SNAPSHOT_MAX = 8 * 1024 * 1024
    TEXT_MAX = 1024 * 1024  # telemetry and chat bodies

    def __init__(self, policy: EndpointPolicy = DEFAULT_POLICY) -> None:
        self.policy = policy

    async def telemetry(self, url: str, secret: str) -> Any:
        """The device's telemetry, parsed from JSON."""

        async def read(response: aiohttp.ClientResponse, call: _Call) -> Any:
            text = _decode(await _read_capped(response, self.TEXT_MAX, call), response)
            try:
                return _strict_json(text)
            except (ValueError, RecursionError):
                raise EndpointError(f"{call.device} sent telemetry that is not JSON") from None

        return await self._call(
            url, secret, "GET", "/api/telemetry", self.TELEMETRY_S, "application/json", read
        )

    async def chat(self, url: str, secret: str, prompt: str) -> str:
        """The device's answer to `prompt`: {reply}, {result}, {text} or plain text."""

        async def read(response: aiohttp.ClientResponse, call: _Call) -> str:
            text = _decode(await _read_capped(response, self.TEXT_MAX, call), response)
            reply = _chat_reply(text)
            if not reply.strip():
                raise EndpointError(f"{call.device} sent an empty answer to {call.route}")
            return reply

        return await self._call(
            url,
            secret,
            "POST",
            "/api/chat",
            self.CHAT_S,
            "application/json, text/plain",
            read,
            payload={"prompt": prompt},
        )

    async def snapshot(self, url: str, secret: str) -> tuple[bytes, str]:
        """A still frame and its canonical content type (image/png, image/jpeg, image/webp)."""

        async def read(response: aiohttp.ClientResponse, call: _Call) -> tuple[bytes, str]:
            sent = _media_type(response)
            content_type = SNAPSHOT_TYPES.get(sent)
            if content_type is None:
                shown = _shorten(sent, 60) or "no content type"
                response.close()
                raise EndpointError(
                    f"{call.device} sent {shown} for {call.route}, "
                    "not a PNG, JPEG or WebP still image"
                )
            body = await _read_capped(response, self.SNAPSHOT_MAX, call)
            if not _looks_like(body, content_type):
                raise EndpointError(
                    f"{call.device} labelled its snapshot {content_type}, "
                    f"but the bytes are not a {_FORMAT_NAMES[content_type]} image"
                )
            return body, content_type

        accept = "image/png, image/jpeg, image/webp"
        return await self._call(
            url, secret, "GET", "/api/camera/snapshot", self.SNAPSHOT_S, accept, read
        )

    async def _call(
        self,
        url: str,
        secret: str,
        method: str,
        path: str,
        budget: float,
        accept: str,
        read: Callable[[aiohttp.ClientResponse, _Call], Awaitable[T]],
        *,
        payload: dict[str, Any] | None = None,
    ) -> T:
        call = _Call(base="?", method=method, path=path, budget=budget)
        try:
            call = _Call(check_endpoint_url(url, self.policy), method, path, budget)
            headers = _headers(secret, accept)
            async with asyncio.timeout(budget):
                result = await self._exchange(call, headers, read, payload)
        except EndpointError as exc:
            error: EndpointError = type(exc)(_scrub(str(exc), secret))
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            error = _failure(exc, call)
            error = type(error)(_scrub(str(error), secret))
        else:
            log.debug("endpoint %s%s %s: answered", call.base, call.path, call.method)
            return result
        log.info("endpoint %s %s: %s", call.route, call.base, error)
        raise error

    async def _exchange(
        self,
        call: _Call,
        headers: dict[str, str],
        read: Callable[[aiohttp.ClientResponse, _Call], Awaitable[T]],
        payload: dict[str, Any] | None,
    ) -> T:
        target = URL(call.base + call.path, encoded=True)
        host = target.raw_host or ""
        try:
            addresses = await resolve_checked(
                host, target.port or 443, _allowance(self.policy), shown=host.rstrip(".")
            )
        except HostRefused as exc:
            if exc.reason in NEVER_DIALLED:
                raise EndpointRefused(f"refused: {exc}, which is never dialled") from None
            raise EndpointRefused(f"refused: {exc}; {ALLOW_HINT}") from None
        except LookupFailed as exc:
            raise EndpointError(f"could not reach {call.device}: {exc}") from None
        resolver = PinnedResolver()
        resolver.pin(host, addresses)
        ssl_setting: ssl.SSLContext | bool = self.policy.ssl_context or True
        connector = aiohttp.TCPConnector(
            resolver=resolver, use_dns_cache=False, ssl=ssl_setting, force_close=True
        )
        async with (
            aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),
                headers=headers,
            ) as session,
            session.request(call.method, target, json=payload, allow_redirects=False) as response,
        ):
            _check_status(response, call)
            return await read(response, call)
