"""The daily curve: how many chat requests a caller may make today.

Anonymous callers get ``community.anonymous_daily_chats`` per address, signed-in people
``community.member_daily_chats`` plus ``REQUESTS_PER_POINT`` per reputation point, at most
``MAX_REPUTATION_BONUS`` more; the hub's owner has no limit. That bonus is all reputation buys:
the walls loosen for people the community has vouched for. Days are UTC days; the count is kept
in SQLite (migration 0016), so a restart does not hand out a fresh allowance.

The clock is a seam (``AdjustableClock``): tests move it to the next day instead of waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hub.community.reputation import score
from hub.core.errors import Refused
from hub.people.identity import User
from hub.store.db import Database

REQUESTS_PER_POINT = 5
MAX_REPUTATION_BONUS = 200


@dataclass(frozen=True)
class Allowance:
    limit: int | None  # None: no limit (the owner)
    used: int
    reset_at: float  # the next UTC midnight, in seconds since the epoch

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    def as_json(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "used": self.used,
            "remaining": self.remaining,
            "resetAt": _iso(self.reset_at),
        }


class OverAllowance(Refused):
    """Today's chat requests are spent; ``retry_after_s`` until the allowance resets."""

    status = 429

    def __init__(self, allowance: Allowance, now: float) -> None:
        self.allowance = allowance
        self.retry_after_s = max(1, int(allowance.reset_at - now + 0.999))
        super().__init__(
            f"today's {allowance.limit} chat requests are used up; the allowance resets at "
            f"{_iso(allowance.reset_at)} (in {self.retry_after_s} s). Reputation adds "
            f"{REQUESTS_PER_POINT} a point"
        )

    def as_json(self) -> dict[str, Any]:
        return {"error": str(self), **self.allowance.as_json()}


class ChatAllowance:
    def __init__(
        self,
        db: Database,
        anonymous_per_day: int,
        member_per_day: int,
        clock: Callable[[], float],
    ) -> None:
        self._db = db
        self.anonymous_per_day, self.member_per_day = anonymous_per_day, member_per_day
        self.clock = clock

    def limit_for(self, user: User | None) -> int | None:
        if user is None:
            return self.anonymous_per_day
        if user.is_owner:
            return None
        bonus = min(score(self._db, user.id) * REQUESTS_PER_POINT, MAX_REPUTATION_BONUS)
        return self.member_per_day + bonus

    def peek(self, user: User | None, address: str) -> Allowance:
        day, reset_at = _day(self.clock())
        row = self._db.execute(
            "SELECT used FROM chat_allowance WHERE caller = ? AND day = ?",
            [_key(user, address), day],
        ).fetchone()
        return Allowance(self.limit_for(user), int(row[0]) if row else 0, reset_at)

    def charge(self, user: User | None, address: str) -> Allowance:
        """Spend one request of today's allowance, or OverAllowance (nothing spent)."""
        now = self.clock()
        limit = self.limit_for(user)
        if limit is None:
            return Allowance(None, 0, _day(now)[1])
        day, reset_at = _day(now)
        key = _key(user, address)
        with self._db.atomic():
            row = self._db.execute(
                "SELECT used FROM chat_allowance WHERE caller = ? AND day = ?", [key, day]
            ).fetchone()
            used = int(row[0]) if row else 0
            if used >= limit:
                raise OverAllowance(Allowance(limit, used, reset_at), now)
            self._db.execute(
                "INSERT INTO chat_allowance (caller, day, used) VALUES (?, ?, 1)"
                " ON CONFLICT (caller, day) DO UPDATE SET used = used + 1",
                [key, day],
            )
            if not row:  # the first request of a day: yesterday's counts are of no more use
                self._db.execute("DELETE FROM chat_allowance WHERE day < ?", [_yesterday(day)])
        return Allowance(limit, used + 1, reset_at)


def _key(user: User | None, address: str) -> str:
    return f"user:{user.id}" if user is not None else f"addr:{address}"


def _day(now: float) -> tuple[str, float]:
    """Today's UTC date, and the next UTC midnight."""
    today = datetime.fromtimestamp(now, UTC).date()
    midnight = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    return today.isoformat(), midnight.timestamp()


def _yesterday(day: str) -> str:
    return (datetime.fromisoformat(day) - timedelta(days=1)).date().isoformat()


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
