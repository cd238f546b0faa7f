"""The relay mailbox: envelopes for dial-in devices, pulled by them, answered in place.

A waiter (``use_device``) blocks on an in-process event set when the reply arrives, so a reply
reaches it at once rather than at the next poll. The other way round is the same: a device may
hold its pull open (``wait``, at most 25 s) and an envelope sent meanwhile wakes it, so an
``invoke`` to a device already holding a poll takes one round trip instead of waiting out the
device's idle sleep. A pull without ``wait`` answers at once, as the device protocol says.

A sweep dead-letters envelopes nobody pulled within an hour and forgets replies after a day; its
clock is the registry's, so tests drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub.contracts import RELAY_MAX_DEFAULT, RELAY_MAX_LIMIT, RELAY_PAYLOAD_MAX_BYTES
from hub.core.json_text import JsonRefused, parse_json_text
from hub.devices.registry import Clock, Device, DeviceError, DeviceNotFound
from hub.store.db import Database

DEAD_LETTER_AFTER_S = 3600
KEEP_REPLIES_S = 24 * 3600
# Under the 30 s a client or proxy commonly allows a request, and well inside the 60 s presence
# window, so a device holding polls back to back is never seen as gone.
RELAY_WAIT_MAX_S = 25.0


@dataclass(frozen=True)
class Envelope:
    id: str
    payload: str
    created_at: float

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "payload": self.payload, "created_at": self.created_at}


def check_limit(limit: Any) -> int:
    """``max`` from a pull: 1-50, 10 when absent."""
    limit = RELAY_MAX_DEFAULT if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise DeviceError(f"max must be a whole number from 1 to {RELAY_MAX_LIMIT}")
    if not 1 <= limit <= RELAY_MAX_LIMIT:
        raise DeviceError(f"max must be from 1 to {RELAY_MAX_LIMIT}")
    return limit


def check_wait(wait: Any) -> float:
    """``wait`` from a pull: seconds to hold it open, 0 (or absent) for an answer at once."""
    if wait is None:
        return 0.0
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait != wait:
        raise DeviceError(f"wait must be a number of seconds from 0 to {RELAY_WAIT_MAX_S:g}")
    if not 0 <= wait <= RELAY_WAIT_MAX_S:
        raise DeviceError(f"wait must be from 0 to {RELAY_WAIT_MAX_S:g} seconds")
    return float(wait)


def check_payload(payload: Any) -> str:
    """A JSON string of at most 8 KB (a JSON value is accepted and encoded)."""
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    if len(text.encode("utf-8")) > RELAY_PAYLOAD_MAX_BYTES:
        raise DeviceError(f"payload is over {RELAY_PAYLOAD_MAX_BYTES} bytes")
    try:
        parse_json_text(text, "payload", RELAY_PAYLOAD_MAX_BYTES)
    except JsonRefused as exc:
        raise DeviceError(str(exc)) from None
    return text


class Mailbox:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._waiters: dict[str, asyncio.Event] = {}
        # Per device id, the event its held pulls wait on; a send sets it and drops it, so the
        # next pull waits on a fresh one (at most one per device, so the map stays small).
        self._arrivals: dict[str, asyncio.Event] = {}

    def send(self, device: Device, envelope: dict[str, Any]) -> str:
        message_id = "msg_" + uuid.uuid4().hex[:20]
        self._db.table("relay").insert(
            {
                "id": message_id,
                "device_id": device.id,
                "owner": device.owner,
                "payload": check_payload(envelope),
                "created_at": self._clock(),
            }
        )
        self._wake(device)
        return message_id

    async def pull_waiting(
        self,
        device: Device,
        limit: Any = None,
        wait: Any = None,
        gone: Callable[[], bool] = lambda: False,
    ) -> list[Envelope]:
        """``pull``, held open up to ``wait`` seconds until an envelope arrives; the limits are
        checked before anything is held. Woken (an envelope came, or the hub is stopping), it
        pulls once more and answers with whatever that gives, unless ``gone`` says the caller
        hung up meanwhile: then it takes nothing, and the envelope waits for the next pull."""
        wait_s = check_wait(wait)
        arrival = self._arrivals.setdefault(device.id, asyncio.Event())
        pulled = self.pull(device, limit)
        if pulled or not wait_s:
            return pulled
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(arrival.wait(), wait_s)
        return [] if gone() else self.pull(device, limit)

    def holding(self, device_id: str) -> bool:
        """Whether a pull of the device is held open now (its presence was counted when the
        pull began)."""
        return device_id in self._arrivals

    def put_back(self, device: Device, envelopes: list[Envelope]) -> None:
        """Envelopes pulled for a caller that hung up before it got them: undelivered again,
        and any pull held for the device woken to take them."""
        if not envelopes:
            return
        marks = ",".join("?" * len(envelopes))
        self._db.execute(
            f"UPDATE relay SET delivered_at = NULL WHERE device_id = ? AND replied_at IS NULL"
            f" AND id IN ({marks})",
            [device.id, *(e.id for e in envelopes)],
        )
        self._wake(device)

    def _wake(self, device: Device) -> None:
        arrival = self._arrivals.pop(device.id, None)
        if arrival is not None:
            arrival.set()

    def end_polls(self) -> None:
        """Answer every held pull now: the hub is stopping."""
        arrivals, self._arrivals = self._arrivals, {}
        for arrival in arrivals.values():
            arrival.set()

    def pull(self, device: Device, limit: Any = None) -> list[Envelope]:
        limit = check_limit(limit)
        rows = self._db.execute(
            "SELECT id, payload, created_at FROM relay WHERE device_id = ?"
            " AND delivered_at IS NULL AND dead_at IS NULL ORDER BY created_at, rowid LIMIT ?",
            [device.id, limit],
        ).fetchall()
        if rows:
            marks = ",".join("?" * len(rows))
            self._db.execute(
                f"UPDATE relay SET delivered_at = ? WHERE id IN ({marks})",
                [self._clock(), *(r[0] for r in rows)],
            )
        return [Envelope(*row) for row in rows]

    def unread(self, device: Device) -> int:
        return int(
            self._db.execute(
                "SELECT COUNT(*) FROM relay WHERE device_id = ? AND delivered_at IS NULL"
                " AND dead_at IS NULL",
                [device.id],
            ).fetchone()[0]
        )

    def reply(self, device: Device, in_reply_to: Any, payload: Any) -> None:
        if not isinstance(in_reply_to, str):
            raise DeviceError("inReplyTo must be the id of a message you pulled")
        text = check_payload(payload)
        row = self._db.execute(
            "SELECT replied_at FROM relay WHERE id = ? AND device_id = ?", [in_reply_to, device.id]
        ).fetchone()
        if row is None:  # unknown, or another device's: the same answer
            raise DeviceNotFound(f"no message {in_reply_to} for this device")
        if row[0] is not None:
            raise DeviceError(f"message {in_reply_to} was already answered")
        self._db.execute(
            "UPDATE relay SET reply = ?, replied_at = ?, delivered_at = COALESCE(delivered_at, ?)"
            " WHERE id = ?",
            [text, self._clock(), self._clock(), in_reply_to],
        )
        waiter = self._waiters.get(in_reply_to)
        if waiter is not None:
            waiter.set()

    def reply_to(self, owner: str, message_id: str) -> tuple[str, str | None]:
        """(state, reply JSON) of a message the owner sent: waiting, answered, dead."""
        row = self._db.execute(
            "SELECT reply, dead_at FROM relay WHERE id = ? AND owner = ?", [message_id, owner]
        ).fetchone()
        if row is None:
            raise DeviceNotFound(f"no request {message_id} (replies are kept 24 hours)")
        if row[0] is not None:
            return "answered", str(row[0])
        return ("dead", None) if row[1] is not None else ("waiting", None)

    async def wait_reply(self, owner: str, message_id: str, wait_s: float) -> str | None:
        event = self._waiters.setdefault(message_id, asyncio.Event())
        try:
            if self.reply_to(owner, message_id)[0] != "answered":
                await asyncio.wait_for(event.wait(), wait_s)
        except TimeoutError:
            return None
        finally:
            self._waiters.pop(message_id, None)
        return self.reply_to(owner, message_id)[1]

    def sweep(self) -> tuple[int, int]:
        """Dead-letter old undelivered envelopes; forget old replies. Returns the two counts."""
        now = self._clock()
        dead = self._db.execute(
            "UPDATE relay SET dead_at = ? WHERE delivered_at IS NULL AND dead_at IS NULL"
            " AND created_at < ?",
            [now, now - DEAD_LETTER_AFTER_S],
        ).rowcount
        forgotten = self._db.execute(
            "DELETE FROM relay WHERE replied_at IS NOT NULL AND replied_at < ?",
            [now - KEEP_REPLIES_S],
        ).rowcount
        return int(dead), int(forgotten)
