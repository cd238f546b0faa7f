"""What one person may use at once: media bytes a minute, open streams, messages a minute.

The rate limiter (``hub.api.limits``) counts requests; these count what a request costs, per
person (a signed-in caller, a dial-in device's owner, else the caller's address), so one member
or one device cannot take the disk, the file descriptors or everyone's inbox:

- **media**: the bytes a person's devices upload (``POST /api/media``), a token bucket of
  ``quotas.media_mb_per_minute``;
- **streams**: event streams and chat turns a person holds open at once, ``quotas.open_streams``;
- **messages**: messages to people (``POST /api/messages``), ``quotas.messages_per_minute``.

Over a quota is a 429 with ``Retry-After``; 0 turns a quota off. The numbers are read from the
settings at each request, so a test (or a future settings screen) can change them live.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from aiohttp import web

# A stream ends when its client leaves, which the hub cannot foresee: retry after this long.
STREAM_RETRY_S = 10
_WINDOW_S = 60.0


@dataclass
class _Bucket:
    level: float
    stamp: float


@dataclass
class Quotas:
    """The counters; one per application, under :data:`QUOTAS`."""

    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _streams: dict[str, int] = field(default_factory=dict)

    def spend(self, kind: str, who: str, cost: float, per_minute: float, what: str) -> None:
        """Take ``cost`` from ``who``'s bucket of ``kind`` (``per_minute`` fills it, and is
        its size); a 429 when it does not hold that much."""
        if per_minute <= 0:
            return
        now = self.clock()
        key = f"{kind}:{who}"
        bucket = self._buckets.setdefault(key, _Bucket(per_minute, now))
        bucket.level = min(per_minute, bucket.level + (now - bucket.stamp) * per_minute / _WINDOW_S)
        bucket.stamp = now
        if cost > per_minute:
            raise too_many(f"{what} is larger than the whole quota", _WINDOW_S)
        if bucket.level < cost:
            wait = (cost - bucket.level) * _WINDOW_S / per_minute
            raise too_many(f"{what} is over your quota for now", wait)
        bucket.level -= cost
        if len(self._buckets) > 4096:
            self._forget_full(now)

    @contextlib.contextmanager
    def stream(self, who: str, most: int) -> Iterator[None]:
        """Hold one of ``who``'s ``most`` stream slots while the block runs; a 429 when all
        are held."""
        held = self._streams.get(who, 0)
        if most > 0 and held >= most:
            raise too_many(
                f"you already hold {held} open streams (quotas.open_streams is {most}); close "
                "one first",
                STREAM_RETRY_S,
            )
        self._streams[who] = held + 1
        try:
            yield
        finally:
            left = self._streams[who] - 1
            if left:
                self._streams[who] = left
            else:
                del self._streams[who]

    def held(self, who: str) -> int:
        """How many streams ``who`` holds open now."""
        return self._streams.get(who, 0)

    def _forget_full(self, now: float) -> None:
        """A bucket idle for a whole window is full again: the same as no bucket."""
        for key in [k for k, b in self._buckets.items() if now - b.stamp >= _WINDOW_S]:
            del self._buckets[key]


QUOTAS = web.AppKey("quotas", Quotas)


def too_many(message: str, wait_s: float) -> web.HTTPException:
    retry = max(1, math.ceil(wait_s))
    return web.HTTPTooManyRequests(
        text=json.dumps({"error": f"{message}: retry after {retry} s"}),
        content_type="application/json",
        headers={"Retry-After": str(retry)},
    )


def person_of(request: web.Request, user_id: str | None) -> str:
    """Whose quota a request spends: the person's, else the caller's address."""
    return f"user:{user_id}" if user_id else f"addr:{request.remote or '?'}"
