"""The durable outbox: every call the hub owes the cloud, kept in SQLite until the cloud took it.

Replies, events, task results and media are ``put`` here first (docs/cloud.md: an envelope is
acknowledged only after its reply is stored), then ``drain`` delivers them in order, one at a
time, through ``CloudClient.call``. An item is marked delivered only after a 2xx, so a crash at
any point leaves it pending and it is sent again after restart; the ``idempotencyKey`` it carries
lets the cloud recognise that resend and answer it without doing it twice. That is how "at least
once" from here becomes "exactly once" at the cloud.

What stops a drain follows the client's three failures: ``CloudUnavailable`` (try later: the item
and everything behind it stay queued, in order), ``CloudAuthError`` (stop and tell the owner;
nothing is marked), ``CloudRefused`` (this item is wrong and will stay wrong: it is marked failed
with the reason and the queue moves on, so one bad item cannot block every later one forever).
A 429 arrives as ``CloudUnavailable`` (it means "later"), so it stops the drain like a 5xx.

A reply that shows pictures is several calls: each picture is a ``POST /api/media`` item queued
ahead of the reply, and the reply names those items under ``IMAGES_FROM`` instead of URLs, which
only the cloud's answers to the uploads will give. The drain fills the reply's ``images`` from
those stored answers just before sending it. Order makes this safe: the uploads come first, so by
the time the reply is sent each is delivered (its answer kept) or refused (the reply goes without
that picture rather than never). ``put_all`` stores the uploads and the reply in one transaction,
so a crash can never leave uploads without the reply that uses them, or the other way round.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hub.cloud.client import CloudAuthError, CloudClient, CloudRefused, CloudUnavailable
from hub.contracts import RELAY_PAYLOAD_MAX_BYTES
from hub.devices.registry import Clock
from hub.store.db import Database

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 100  # the receiver's bound (hub.devices.idempotency)
KEEP_DELIVERED_S = 24 * 3600
METHODS = ("POST", "PUT", "PATCH", "DELETE")
MEDIA_PATH = "/api/media"
# A reply's pictures, as the keys of the upload items queued before it: [{"media", "format"}].
# The outbox's own field: the drain turns it into the payload's images and never sends it.
IMAGES_FROM = "outboxImagesFrom"
# The client adds the credentials and the outbox the key; a body must not carry its own.
RESERVED_FIELDS = frozenset({"deviceId", "token", "idempotencyKey"})


@dataclass(frozen=True)
class Call:
    """One call to store: what ``put`` takes, for ``put_all``."""

    method: str
    path: str
    body: dict[str, Any]
    key: str | None = None


def upload_call(data: bytes, content_type: str, key: str) -> Call:
    """``POST /api/media {data, contentType}`` for ``data``; a reply names it by ``key``."""
    body = {"data": base64.b64encode(data).decode("ascii"), "contentType": content_type}
    return Call("POST", MEDIA_PATH, body, key)


def images_from(uploads: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The body field of a relay reply (``PATCH``) that shows the pictures uploaded by the items
    keyed ``uploads`` (``(key, format)`` each, in the order to show them)."""
    return {IMAGES_FROM: [{"media": key, "format": fmt} for key, fmt in uploads]}


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
    def __init__(self, db: Database, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock
        # One drain at a time in this process: two would race to send the same item.
        self._draining = asyncio.Lock()

    def put(self, method: str, path: str, body: dict[str, Any], *, key: str | None = None) -> int:
        """Store one call owed to the cloud, after every earlier one; return its sequence number.

        Putting a key that is already stored returns that item's number and stores nothing: a
        caller that crashed after ``put`` but before acting on it can safely put again.
        """
        return self.put_all([Call(method, path, body, key)])[0]

    def put_all(self, calls: Sequence[Call]) -> list[int]:
        """Store several calls, in this order, in one transaction: all of them or none (a reply
        and the uploads it shows). Each key already stored is skipped as in ``put``."""
        checked = [_checked(call) for call in calls]  # every one, before anything is stored
        with self._db.atomic():  # type: ignore[attr-defined]
            return [self._insert(*row) for row in checked]

    def _insert(self, method: str, path: str, body_json: str, key: str) -> int:
        row = self._db.execute("SELECT seq FROM cloud_outbox WHERE idem_key = ?", [key]).fetchone()
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
                body = {**self._resolved(json.loads(body_json)), "idempotencyKey": key}
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

    def _resolved(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as sent: a reply's ``IMAGES_FROM`` becomes its payload's ``images``, each
        ``{url, format}`` from its upload's answer. A refused or missing upload is left out, and
        so are trailing pictures whose URLs would push the payload past the relay's 8 KB."""
        wanted = body.pop(IMAGES_FROM, None)
        if not isinstance(wanted, list) or not isinstance(body.get("payload"), str):
            return body
        payload = json.loads(body["payload"])
        if not isinstance(payload, dict):
            return body
        images = []
        for ref in wanted:
            url = self._uploaded_url(str(ref.get("media")))
            if url is None:  # refused by the cloud, or delivered so long ago it was forgotten
                log.warning("a reply goes without picture %s: its upload has no url", ref)
            else:
                images.append({"url": url, "format": ref.get("format")})
        while images:
            payload["images"] = images
            text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            if len(text.encode("utf-8")) <= RELAY_PAYLOAD_MAX_BYTES:
                return {**body, "payload": text}
            log.warning("a reply goes without a picture: its URL does not fit the 8 KB payload")
            images.pop()
        return body

    def _uploaded_url(self, key: str) -> str | None:
        row = self._db.execute(
            "SELECT answer_json FROM cloud_outbox WHERE idem_key = ? AND delivered_at IS NOT NULL",
            [key],
        ).fetchone()
        answer = json.loads(row[0]) if row is not None and row[0] else None
        url = answer.get("url") if isinstance(answer, dict) else None
        return url if isinstance(url, str) and url else None

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


def _checked(call: Call) -> tuple[str, str, str, str]:
    """``(method, path, body_json, key)`` ready to insert, or ValueError for what could never be
    sent."""
    method = call.method.upper()
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if not call.path.startswith("/"):
        raise ValueError("path must start with /")
    key = uuid.uuid4().hex if call.key is None else call.key
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise ValueError(f"key must be 1-{MAX_KEY_LENGTH} characters")
    reserved = RESERVED_FIELDS.intersection(call.body)
    if reserved:
        raise ValueError(f"the outbox adds {', '.join(sorted(reserved))} itself")
    return method, call.path, json.dumps(call.body), key  # refuses what cannot be sent, now


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
