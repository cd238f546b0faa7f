"""Pending actions: what a chat turn asked to do that only the person may carry out.

A tool that would lose a person's data (forgetting many facts, deleting a job, a forged tool,
a bot) does not act: it *proposes* here and says so. The person sees the proposal in a client
(a card in the TUI, a yes/no in ``tiny-hub chat``, their phone) and answers it with their own
token (``POST /api/confirmations/confirm``), which no tool can call. The answer is taken with a
conditional update, so a repeated or parallel confirmation carries the action out once. A
proposal lasts ``PENDING_TTL_S``; one not answered by then is refused (410) and the model has
to ask again.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hub.core.errors import Refused
from hub.store.db import Database

PENDING_TTL_S = 15 * 60
# Answered or expired proposals are kept this long (a client that reconnects can still show
# what happened to one), then the housekeeping drops them.
KEPT_S = 24 * 3600
SHOWN_ITEMS = 50

State = Literal["waiting", "confirmed", "declined", "expired"]


class PendingNotFound(Refused):
    status = 404


class PendingGone(Refused):
    status = 410


@dataclass(frozen=True)
class Item:
    """One thing the action would touch, as the person is shown it."""

    id: str
    text: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "text": self.text}


@dataclass(frozen=True)
class Pending:
    id: str
    user_id: str
    action: str
    title: str
    items: tuple[Item, ...]
    total: int
    params: dict[str, Any]
    created_at: float
    expires_at: float
    answered_at: float | None
    answer: str | None
    outcome: str

    def state(self, at: float) -> State:
        if self.answer == "confirmed":
            return "confirmed"
        if self.answer == "declined":
            return "declined"
        return "expired" if self.expires_at <= at else "waiting"

    def as_json(self, at: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "title": self.title,
            "items": [item.as_json() for item in self.items],
            "total": self.total,
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
            "state": self.state(at),
            "outcome": self.outcome,
        }

    def listing(self) -> str:
        """The items as lines for the model and for a terminal, with how many more there are."""
        lines = [f"- {item.text}" for item in self.items]
        if self.total > len(self.items):
            lines.append(f"- … and {self.total - len(self.items)} more")
        return "\n".join(lines)


class PendingActions:
    """The table of proposals; each read and answer is the proposer's own (anyone else's
    proposal is not found, never shown)."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def now(self) -> float:
        return self._clock()

    def propose(
        self,
        user_id: str,
        action: str,
        title: str,
        items: Sequence[Item],
        params: dict[str, Any],
    ) -> Pending:
        now = self._clock()
        pending_id = "pa_" + uuid.uuid4().hex[:20]
        shown = [item.as_json() for item in items[:SHOWN_ITEMS]]
        self._db.execute(
            "INSERT INTO pending_actions (id, user_id, action, title, items_json, params_json,"
            " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                pending_id,
                user_id,
                action,
                title,
                json.dumps({"shown": shown, "total": len(items)}),
                json.dumps(params),
                now,
                now + PENDING_TTL_S,
            ],
        )
        return self.get(user_id, pending_id)

    def get(self, user_id: str, pending_id: Any) -> Pending:
        if not isinstance(pending_id, str) or not pending_id:
            raise Refused("id is required: the id of a pending action (GET /api/confirmations)")
        row = self._db.execute(
            "SELECT id, user_id, action, title, items_json, params_json, created_at, expires_at,"
            " answered_at, answer, outcome FROM pending_actions WHERE id = ? AND user_id = ?",
            [pending_id, user_id],
        ).fetchone()
        if row is None:
            raise PendingNotFound(f"no pending action {pending_id} of yours")
        return _pending(row)

    def waiting(self, user_id: str) -> list[Pending]:
        """The person's proposals still waiting for an answer, oldest first."""
        rows = self._db.execute(
            "SELECT id, user_id, action, title, items_json, params_json, created_at, expires_at,"
            " answered_at, answer, outcome FROM pending_actions WHERE user_id = ?"
            " AND answer IS NULL AND expires_at > ? ORDER BY created_at, rowid",
            [user_id, self._clock()],
        ).fetchall()
        return [_pending(row) for row in rows]

    def take(self, user_id: str, pending_id: Any, answer: str) -> tuple[Pending, bool]:
        """Answer a proposal once: (the proposal, whether this call answered it). Expired or
        answered the other way, it is refused (410)."""
        found = self.get(user_id, pending_id)
        now = self._clock()
        if found.answer is None and found.expires_at <= now:
            raise PendingGone(f"pending action {found.id} expired: ask again")
        taken = self._db.execute(
            "UPDATE pending_actions SET answer = ?, answered_at = ? WHERE id = ?"
            " AND answer IS NULL AND expires_at > ?",
            [answer, now, found.id, now],
        )
        again = self.get(user_id, found.id)
        if taken.rowcount != 1 and again.answer != answer:
            raise PendingGone(f"pending action {found.id} was already {again.answer}")
        return again, taken.rowcount == 1

    def settle(self, pending_id: str, outcome: str) -> None:
        """What carrying out a confirmed action came to, in words (kept for a repeat)."""
        self._db.execute(
            "UPDATE pending_actions SET outcome = ? WHERE id = ?", [outcome, pending_id]
        )

    def sweep(self) -> int:
        """Drop proposals answered or expired more than ``KEPT_S`` ago."""
        before = self._clock() - KEPT_S
        gone = self._db.execute(
            "DELETE FROM pending_actions WHERE expires_at < ? AND (answered_at IS NULL"
            " OR answered_at < ?)",
            [before, before],
        )
        return int(gone.rowcount)


def _pending(row: Sequence[Any]) -> Pending:
    items = json.loads(row[4])
    return Pending(
        id=row[0],
        user_id=row[1],
        action=row[2],
        title=row[3],
        items=tuple(Item(str(i["id"]), str(i["text"])) for i in items["shown"]),
        total=int(items["total"]),
        params=json.loads(row[5]),
        created_at=float(row[6]),
        expires_at=float(row[7]),
        answered_at=None if row[8] is None else float(row[8]),
        answer=row[9],
        outcome=row[10],
    )
