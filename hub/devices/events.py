"""The owner's event ring: what devices noticed (a wake word, a finished job), kept and pushed.

Events are stored (the last 1000 per owner) and handed to every live subscriber — the
``GET /api/events`` streams of the TUI and the phones — in the order they were published.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from hub.devices.registry import Clock
from hub.store.db import Database

RING_SIZE = 1000


@dataclass(frozen=True)
class RingEvent:
    id: int
    kind: str
    device_id: str | None
    detail: Any
    created_at: float

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "deviceId": self.device_id,
            "detail": self.detail,
            "created_at": self.created_at,
        }


class EventRing:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._subscribers: dict[str, set[asyncio.Queue[RingEvent | None]]] = defaultdict(set)

    def publish(self, owner: str, kind: str, device_id: str | None, detail: Any) -> RingEvent:
        stamp = self._clock()
        cursor = self._db.execute(
            "INSERT INTO events (owner, kind, device_id, detail_json, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [owner, kind, device_id, json.dumps(detail), stamp],
        )
        event = RingEvent(int(cursor.lastrowid or 0), kind, device_id, detail, stamp)
        self._db.execute(
            "DELETE FROM events WHERE owner = ? AND id <= ?", [owner, event.id - RING_SIZE]
        )
        for queue in self._subscribers.get(owner, ()):
            queue.put_nowait(event)
        return event

    def recent(self, owner: str, limit: int = 50, after: int = 0) -> list[RingEvent]:
        rows = self._db.execute(
            "SELECT id, kind, device_id, detail_json, created_at FROM events"
            " WHERE owner = ? AND id > ? ORDER BY id DESC LIMIT ?",
            [owner, after, limit],
        ).fetchall()
        return [RingEvent(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in reversed(rows)]

    def end_streams(self, owner: str | None = None) -> None:
        """End every live follower (the hub is stopping): an open ``/api/events`` stream would
        otherwise hold the server's shutdown for its whole grace period. With ``owner``: only
        that person's (they were removed, and an open stream is no request to refuse)."""
        for who, queues in self._subscribers.items():
            if owner is None or who == owner:
                for queue in queues:
                    queue.put_nowait(None)

    async def follow(self, owner: str, after: int = 0) -> AsyncIterator[RingEvent]:
        """Events after ``after`` from the ring, then live ones as they are published."""
        queue: asyncio.Queue[RingEvent | None] = asyncio.Queue()
        self._subscribers[owner].add(queue)
        try:
            last = after
            for stored in self.recent(owner, RING_SIZE, after):
                last = stored.id
                yield stored
            while True:
                live = await queue.get()
                if live is None:  # the hub is stopping
                    return
                if live.id > last:
                    last = live.id
                    yield live
        finally:
            self._subscribers[owner].discard(queue)
