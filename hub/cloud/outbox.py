"""The durable outbox: every call the hub owes the cloud, kept in SQLite until the cloud took it.

Replies, events, task results and media are ``put`` here first (issue 10 §3: an envelope is
acknowledged only after its reply is stored), then ``drain`` delivers them in order, one at a
time, through ``CloudClient.call``. An item is marked delivered only after a 2xx, so a crash at
any point leaves it pending and it is sent again after restart; the ``idempotencyKey`` it carries
lets the cloud recognise that resend and answer it without doing it twice. That is how "at least
once" from here becomes "exactly once" at the cloud.

What stops a drain follows the client's three failures: ``CloudUnavailable`` (try later: the item
and everything behind it stay queued, in order), ``CloudAuthError`` (stop and tell the owner;
nothing is marked), ``CloudRefused`` (this item is wrong and will stay wrong: it is marked failed
with the reason and the queue moves on, so one bad item cannot block every later one forever).
A 429 arrives as ``CloudRefused`` but means "later", so it stops the drain like a 5xx.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from hub.cloud.client import CloudAuthError, CloudClient, CloudRefused, CloudUnavailable
from hub.devices.registry import Clock

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 100  # the receiver's bound (hub.devices.idempotency)
KEEP_DELIVERED_S = 24 * 3600
METHODS = ("POST", "PUT", "PATCH", "DELETE")
# The client adds the credentials and the outbox the key; a body must not carry its own.
RESERVED_FIELDS = frozenset({"deviceId", "token", "idempotencyKey"})


@dataclass(frozen=True)
class DrainResult:
    """What one ``drain`` did. ``stopped`` is the error that ended it early, or None when the
    queue was emptied; ``pending`` is what is still queued afterwards."""

    delivered: int
    failed: int
    pending: int
    stopped: CloudUnavailable | CloudAuthError | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None

    @property
    def unavailable(self) -> bool:
        return isinstance(self.stopped, CloudUnavailable)

    @property
    def auth_failed(self) -> bool:
        return isinstance(self.stopped, CloudAuthError)


@dataclass(frozen=True)
class OutboxItem:
    """One stored call. ``state`` is pending, delivered or failed; ``answer`` is the cloud's JSON
    answer once delivered (a media upload's ``url`` is there); ``failure`` why it was refused."""

    seq: int
    method: str
    path: str
    body: dict[str, Any]
    key: str
    created_at: float
    attempts: int
    state: str
    answer: dict[str, Any] | None
    failure: str | None


class Outbox:
    def __init__(self, db: sqlite_utils.Database, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock
        # One drain at a time in this process: two would race to send the same item.
        self._draining = asyncio.Lock()

    def put(self, method: str, path: str, body: dict[str, Any], *, key: str | None = None) -> int:
        """Store one call owed to the cloud, after every earlier one; return its sequence number.

        Putting a key that is already stored returns that item's number and stores nothing: a
        caller that crashed after ``put`` but before acting on it can safely put again.
        """
        method = method.upper()
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}")
        if not path.startswith("/"):
            raise ValueError("path must start with /")
        if key is None:
            key = uuid.uuid4().hex
        if not 1 <= len(key) <= MAX_KEY_LENGTH:
            raise ValueError(f"key must be 1-{MAX_KEY_LENGTH} characters")
        reserved = RESERVED_FIELDS.intersection(body)
        if reserved:
            raise ValueError(f"the outbox adds {', '.join(sorted(reserved))} itself")
        body_json = json.dumps(body)  # refuses what cannot be sent, now rather than at drain
        with self._db.atomic():  # type: ignore[attr-defined]
            row = self._db.execute(
                "SELECT seq FROM cloud_outbox WHERE idem_key = ?", [key]
            ).fetchone()
            if row is not None:
                return int(row[0])
            cursor = self._db.execute(
                "INSERT INTO cloud_outbox (method, path, body_json, idem_key, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [method, path, body_json, key, self._clock()],
            )
            return int(cursor.lastrowid or 0)

    async def drain(self, client: CloudClient) -> DrainResult:
        """Deliver pending items in order, one at a time, until the queue is empty or the cloud
        is unavailable or refuses the token. Never raises a CloudError: the result says why it
        stopped."""
        async with self._draining:
            delivered = failed = 0
            stopped: CloudUnavailable | CloudAuthError | None = None
            self._forget_delivered()
            while (item := self._next_pending()) is not None:
                seq, method, path, body_json, key = item
                self._db.execute(
                    "UPDATE cloud_outbox SET attempts = attempts + 1 WHERE seq = ?", [seq]
                )
                body = {**json.loads(body_json), "idempotencyKey": key}
                try:
                    answer = await client.call(method, path, body)
                except (CloudUnavailable, CloudAuthError) as exc:
                    stopped = exc
                    break
                except CloudRefused as exc:
                    log.warning(
                        "the cloud refused outbox item %d (%s %s): %s", seq, method, path, exc
                    )
                    self._db.execute(
                        "UPDATE cloud_outbox SET failed_at = ?, failure = ? WHERE seq = ?",
                        [self._clock(), str(exc), seq],
                    )
                    failed += 1
                    continue
                self._db.execute(
                    "UPDATE cloud_outbox SET delivered_at = ?, answer_json = ? WHERE seq = ?",
                    [self._clock(), json.dumps(answer), seq],
                )
                delivered += 1
            return DrainResult(delivered, failed, self.pending_count(), stopped)

    def pending_count(self) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM cloud_outbox WHERE delivered_at IS NULL AND failed_at IS NULL"
        ).fetchone()
        return int(row[0])

    def oldest_pending_age(self) -> float | None:
        """Seconds the oldest undelivered item has waited (None when nothing is pending): how
        long the hub has owed the cloud something, for health and the TUI."""
        row = self._db.execute(
            "SELECT MIN(created_at) FROM cloud_outbox"
            " WHERE delivered_at IS NULL AND failed_at IS NULL"
        ).fetchone()
        return None if row[0] is None else max(0.0, self._clock() - float(row[0]))

    def item(self, seq: int) -> OutboxItem | None:
        row = self._db.execute(f"{_ITEM_SQL} WHERE seq = ?", [seq]).fetchone()
        return None if row is None else _item(row)

    def failed(self, limit: int = 50) -> list[OutboxItem]:
        """The items the cloud refused, newest first, kept so the owner can see why."""
        rows = self._db.execute(
            f"{_ITEM_SQL} WHERE failed_at IS NOT NULL ORDER BY seq DESC LIMIT ?", [limit]
        ).fetchall()
        return [_item(row) for row in rows]

    def _next_pending(self) -> tuple[int, str, str, str, str] | None:
        row = self._db.execute(
            "SELECT seq, method, path, body_json, idem_key FROM cloud_outbox"
            " WHERE delivered_at IS NULL AND failed_at IS NULL ORDER BY seq LIMIT 1"
        ).fetchone()
        return None if row is None else (int(row[0]), row[1], row[2], row[3], row[4])

    def _forget_delivered(self) -> None:
        """Delivered items are kept a day (to look at), then dropped so the table stays small;
        failed ones are kept until someone looks."""
        self._db.execute(
            "DELETE FROM cloud_outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?",
            [self._clock() - KEEP_DELIVERED_S],
        )


_ITEM_SQL = (
    "SELECT seq, method, path, body_json, idem_key, created_at, attempts, delivered_at,"
    " answer_json, failed_at, failure FROM cloud_outbox"
)


def _item(row: Any) -> OutboxItem:
    state = "delivered" if row[7] is not None else "failed" if row[9] is not None else "pending"
    return OutboxItem(
        seq=int(row[0]),
        method=row[1],
        path=row[2],
        body=json.loads(row[3]),
        key=row[4],
        created_at=float(row[5]),
        attempts=int(row[6]),
        state=state,
        answer=None if row[8] is None else json.loads(row[8]),
        failure=row[10],
    )
