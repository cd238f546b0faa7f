"""Replay protection for dial-in calls: the receiving half of the outbox's "exactly once".

A sender that lost the answer to a call (a timeout, a crash after the receiver accepted it)
sends it again with the same ``idempotencyKey``. The first call with a (device, key) does the work
and stores its JSON answer in the same transaction as the work, so there is no moment where the
work is done but the key is not known; a repeat gets the stored answer and nothing is done twice.
Only successful answers are stored: a refused call may be sent again and is judged again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hub.devices.registry import Clock, Device, DeviceError
from hub.store.db import Database

MAX_KEY_LENGTH = 100
KEEP_KEYS_S = 24 * 3600


def idempotency_key(body: dict[str, Any]) -> str | None:
    """The optional ``idempotencyKey`` of a dial-in body; a bad one is a 400, not ignored
    (ignoring it would silently turn a replay into a second delivery)."""
    key = body.get("idempotencyKey")
    if key is None:
        return None
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise DeviceError(f"idempotencyKey must be a string of 1-{MAX_KEY_LENGTH} characters")
    return key


class IdempotencyKeys:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def once(
        self, device: Device, key: str | None, route: str, work: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """``work()``'s answer, done at most once per (device, key) within a day.

        ``work`` must be synchronous: it runs inside the transaction that records the key, and
        the connection's turn must not be held across an ``await``. A key reused on another
        route is refused, since its stored answer belongs to a different call.
        """
        if key is None:
            return work()
        with self._db.atomic():  # type: ignore[attr-defined]
            now = self._clock()
            row = self._db.execute(
                "SELECT route, answer_json FROM idempotency_keys"
                " WHERE device_id = ? AND idem_key = ? AND created_at >= ?",
                [device.id, key, now - KEEP_KEYS_S],
            ).fetchone()
            if row is not None:
                if row[0] != route:
                    raise DeviceError(f"idempotencyKey {key} was already used for {row[0]}")
                stored: dict[str, Any] = json.loads(row[1])
                return stored
            answer = work()
            self._db.execute(
                "DELETE FROM idempotency_keys WHERE created_at < ?", [now - KEEP_KEYS_S]
            )
            self._db.execute(
                "INSERT OR REPLACE INTO idempotency_keys"
                " (device_id, idem_key, route, answer_json, created_at) VALUES (?, ?, ?, ?, ?)",
                [device.id, key, route, json.dumps(answer), now],
            )
            return answer
