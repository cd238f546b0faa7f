"""Limits that keep one client from starving the rest: body size, request rate, slow bodies.

The hub listens on the LAN, so anything that can reach it may send too much, too often or too
slowly. Three rules, each a JSON error a client can act on:

- **Size**: a declared ``Content-Length`` above the cap is a 413 before a byte of the body is
  read; a chunked body is counted as it arrives and refused the moment it passes the cap. A
  compressed body (``Content-Encoding: gzip`` or ``deflate``) is inflated in a worker thread,
  never on the event loop, and the same cap holds for its inflated bytes; a truncated stream
  is a 400.
- **Rate**: a token bucket per caller. A request that presents a token naming a user is charged
  to that token (a signed-in person gets more room); anything else — anonymous callers, dial-in
  devices (their token is in the body) and tokens that name nobody — is charged to the peer
  address, so rotating made-up tokens cannot dodge the limit. Over the limit is a 429 with
  ``Retry-After``. A request is charged once, when it arrives: a long-lived stream
  (``/api/events``, a chat turn) costs one request however long it stays open.
- **Slow bodies**: the whole body must arrive within a deadline, else 408. The read is awaited
  on the event loop, so a client trickling a byte at a time holds only its own connection.

The limits live in a mutable :class:`Guard` under the application key :data:`GUARD`, so a test
(or a future setting) can tighten them on a running hub.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from hub import contracts as c
from hub.api.auth import presented_caller, undecodable_header
from hub.api.connection import describe_protocol_error
from hub.api.errors import Handler, json_error


@dataclass(frozen=True)
class Limits:
    """The numbers; the defaults are the contract's constants."""

    max_body_bytes: int = c.MAX_REQUEST_BYTES
    body_read_timeout_s: float = c.BODY_READ_TIMEOUT_S
    address_rate_per_s: float = c.ADDRESS_RATE_PER_S
    address_burst: int = c.ADDRESS_BURST
    token_rate_per_s: float = c.TOKEN_RATE_PER_S
    token_burst: int = c.TOKEN_BURST


def scaled_limits(scale: float) -> Limits:
    """The contract's limits with the request rates and bursts ``scale`` times as large
    (``access.rate_limit_scale``: 1 in use; a fuzzing run or a benchmark sets more)."""
    base = Limits()
    if scale == 1.0:
        return base
    return replace(
        base,
        address_rate_per_s=base.address_rate_per_s * scale,
        address_burst=max(1, round(base.address_burst * scale)),
        token_rate_per_s=base.token_rate_per_s * scale,
        token_burst=max(1, round(base.token_burst * scale)),
    )


@dataclass
class _Bucket:
    tokens: float
    stamp: float


# Idle buckets are dropped once this many exist: a full bucket is the same as no bucket.
_PRUNE_ABOVE = 4096


@dataclass
class Guard:
    """The limits in force and the buckets they fill; one per application."""

    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def take(self, key: str, rate: float, burst: int) -> float:
        """Spend one request from ``key``'s bucket: 0 when allowed, else seconds to wait."""
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= _PRUNE_ABOVE:
                self._prune(now)
            bucket = self._buckets[key] = _Bucket(float(burst), now)
        bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.stamp) * rate)
        bucket.stamp = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate if rate > 0 else math.inf

    def _prune(self, now: float) -> None:
        limits = self.limits
        rate = min(limits.address_rate_per_s, limits.token_rate_per_s)
        burst = max(limits.address_burst, limits.token_burst)
        refill_s = burst / rate if rate > 0 else math.inf
        for key in [k for k, b in self._buckets.items() if now - b.stamp >= refill_s]:
            del self._buckets[key]


GUARD = web.AppKey("limits", Guard)


def _closing_error(status: int, message: str) -> web.Response:
    """A JSON error that also ends the connection: the rest of the body is not worth reading
    (aiohttp still drains it briefly, so the client sees this answer and not a reset)."""
    response = web.json_response({"error": message}, status=status)
    response.force_close()
    return response


def _too_large_message(limit: int) -> str:
    return f"body too large (limit {limit} bytes)"


def _too_large(cap: int, size: int) -> web.HTTPException:
    exc = web.HTTPRequestEntityTooLarge(
        max_size=cap,
        actual_size=size,
        text=json.dumps({"error": _too_large_message(cap)}),
        content_type="application/json",
    )
    exc.force_close()
    return exc


def _timed_out(deadline_s: float) -> web.HTTPException:
    message = f"the request body did not arrive within {deadline_s:g} s"
    exc = web.HTTPRequestTimeout(
        text=json.dumps({"error": message}), content_type="application/json"
    )
    exc.force_close()
    return exc


def _unreadable(exc: RequestPayloadError) -> web.HTTPException:
    message = f"the request body cannot be read: {describe_protocol_error(exc.__cause__)}"
    error = web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")
    error.force_close()
    return error


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Charge the request to its token or address, and refuse a declared oversized body, all
    before the route or the auth check does any work."""
    guard = request.app[GUARD]
    limits = guard.limits
    bad_header = undecodable_header(request)
    token, user = (None, None) if bad_header else presented_caller(request)
    if user is not None and token:
        key = "token:" + hashlib.sha256(token.encode()).hexdigest()
        wait = guard.take(key, limits.token_rate_per_s, limits.token_burst)
    else:
        key = f"addr:{request.remote or '?'}"
        wait = guard.take(key, limits.address_rate_per_s, limits.address_burst)
    if wait > 0:
        retry = max(1, math.ceil(wait)) if math.isfinite(wait) else 3600
        return web.json_response(
            {"error": f"too many requests: slow down and retry after {retry} s"},
            status=429,
            headers={"Retry-After": str(retry)},
        )
    if bad_header:
        return json_error(400, f"header {bad_header} is not valid UTF-8")
    if (request.content_length or 0) > limits.max_body_bytes:
        return _closing_error(413, _too_large_message(limits.max_body_bytes))
    return await handler(request)


async def read_body(request: web.Request) -> bytes:
    """The whole body within the size cap and the read deadline, inflated when it came with a
    ``Content-Encoding``, read once and kept on the request: the one way every route (and the
    MCP bridge) reads a body. A JSON 413, 408, 415 or 400 ``HTTPException`` otherwise."""
    kept: bytes | None = request.get(_BODY)
    if kept is not None:
        return kept
    guard = request.app.get(GUARD)
    limits = guard.limits if guard is not None else Limits()
    cap = min(limits.max_body_bytes, request.client_max_size or limits.max_body_bytes)
    encoding = _content_encoding(request)
    try:
        async with asyncio.timeout(limits.body_read_timeout_s):
            raw = await request.read()
    except TimeoutError:
        raise _timed_out(limits.body_read_timeout_s) from None
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(cap, cap + 1) from None
    except RequestPayloadError as exc:  # e.g. a chunked body whose framing is broken
        # The body is over: else aiohttp drains it after the answer, meets the same error again
        # and logs it as an unhandled exception.
        request.content.feed_eof()
        raise _unreadable(exc) from None
    if len(raw) > cap:
        raise _too_large(cap, len(raw))
    if encoding is not None:
        raw = await _inflated(raw, encoding, cap)
    request[_BODY] = raw
    return raw


_BODY: web.RequestKey[bytes] = web.RequestKey("body")
# What zlib's wbits must be for each Content-Encoding the hub takes (gzip's header and
# trailer; deflate is zlib-wrapped, RFC 9110).
_INFLATE_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}


def _content_encoding(request: web.Request) -> str | None:
    """The body's one Content-Encoding the hub can inflate, None for none; a 415 otherwise."""
    declared = request.headers.get("Content-Encoding", "").strip().lower()
    if declared in ("", "identity"):
        return None
    if declared not in _INFLATE_WBITS:
        error = web.HTTPUnsupportedMediaType(
            text=json.dumps(
                {
                    "error": f"Content-Encoding {declared[:40]!r} is not taken: send gzip, "
                    "deflate or none"
                }
            ),
            content_type="application/json",
            headers={"Accept-Encoding": "gzip, deflate"},
        )
        error.force_close()
        raise error
    return declared


class _Uninflatable(Exception):
    """The compressed body cannot be inflated; ``too_large``: it inflates past the cap."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


async def _inflated(raw: bytes, encoding: str, cap: int) -> bytes:
    """``raw`` inflated, in a worker thread (inflating megabytes holds the CPU for a while, and
    the event loop serves everyone), stopping one byte past ``cap`` of inflated bytes: a small
    body that would inflate to gigabytes costs what ``cap`` costs, no more."""
    try:
        return await asyncio.to_thread(_inflate, raw, encoding, cap)
    except _Uninflatable as exc:
        if exc.too_large:
            error = _too_large(cap, cap + 1)
            error.text = json.dumps({"error": f"body too large once inflated (limit {cap} bytes)"})
            raise error from None
        error = web.HTTPBadRequest(
            text=json.dumps({"error": f"the body is not in its Content-Encoding: {exc}"}),
            content_type="application/json",
        )
        error.force_close()
        raise error from None


def _inflate(raw: bytes, encoding: str, cap: int) -> bytes:
    inflater = zlib.decompressobj(_INFLATE_WBITS[encoding])
    try:
        inflated = inflater.decompress(raw, cap + 1)
    except zlib.error as exc:
        raise _Uninflatable(f"not {encoding} data ({exc})") from None
    if len(inflated) > cap:
        raise _Uninflatable("too large", too_large=True)
    if not inflater.eof:
        raise _Uninflatable(f"the {encoding} stream is cut short (truncated)")
    if inflater.unused_data:
        raise _Uninflatable(f"bytes follow the end of the {encoding} stream")
    return inflated


@web.middleware
async def body_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Read any body up front under :func:`read_body`'s rules, so every route — also one that
    ignores its body — answers a slow or oversized one the same way. It runs after the auth
    check: a caller who may not use the route is refused without its body being read."""
    if request.body_exists:
        await read_body(request)
    return await handler(request)
