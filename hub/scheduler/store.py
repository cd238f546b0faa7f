"""Jobs and alerts in SQLite: made, listed, deleted, and claimed when they are due.

Claiming moves a due item's ``next_run`` to its next slot (or to NULL for a one-shot) *before*
it runs, in one statement that only succeeds if nobody moved it first. So a restart, a second
tick or a crash mid-run can never run one slot twice; the price is that a run a crash cut short
is not repeated until its next slot (at most once per slot, by design: a repeated "send the
weekly summary" is worse than one that waits).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from hub.core.errors import Refused
from hub.devices.registry import Clock
from hub.scheduler.when import MAX_ONE_SHOT_MINUTES, Every, parse_every, stamp_text
from hub.store.db import Database

Kind = Literal["job", "alert"]
MAX_JOBS = 10  # per person, pending or repeating (the contract's limit)
MAX_ALERTS = 50  # per person, pending
TEXT_MAX = 2000
TITLE_MAX = 120
ERROR_MAX = 500
KEEP_DONE_S = 7 * 86_400.0  # a finished one-shot stays listed (with its result) a week,
KEEP_DONE = 20  # the newest 20 of them
_COLUMNS = (
    "id, owner, kind, every, text, title, tiny, created_at, next_run, last_run, last_status,"
    " last_error, runs"
)


class ScheduleRefused(Refused):
    pass


class TooMany(ScheduleRefused):
    """The per-person limit: a request that is fine in itself, refused for what is kept."""

    status = 409


class NotScheduled(Refused):
    status = 404


@dataclass(frozen=True)
class Scheduled:
    id: str
    owner: str
    kind: Kind
    every: str
    text: str
    title: str
    tiny: str
    created_at: float
    next_run: float | None
    last_run: float | None
    last_status: str
    last_error: str
    runs: int

    @property
    def schedule(self) -> Every | None:
        return parse_every(self.every) if self.every else None

    @property
    def label(self) -> str:
        """What the person calls it: its title, else the start of what it asks."""
        shown = self.title or " ".join(self.text.split())
        return shown if len(shown) <= 60 else shown[:59] + "…"

    def when(self) -> str:
        schedule = self.schedule
        return schedule.describe() if schedule else "once"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "every": self.every or None,
            "schedule": self.when(),
            "prompt" if self.kind == "job" else "message": self.text,
            "title": self.title,
            "tiny": self.tiny or None,
            "createdAt": self.created_at,
            "nextRun": self.next_run,
            "nextRunText": stamp_text(self.next_run) if self.next_run else None,
            "lastRun": self.last_run,
            "lastRunText": stamp_text(self.last_run) if self.last_run else None,
            "lastStatus": self.last_status or None,
            "lastError": self.last_error or None,
            "runs": self.runs,
        }


class ScheduleStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self.clock = clock

    # --- made by a person ---------------------------------------------------------------------

    def add_job(
        self,
        owner: str,
        prompt: str,
        *,
        every: str = "",
        run_in_minutes: int | None = None,
        tiny: str = "",
        title: str = "",
    ) -> Scheduled:
        """A repeating job (``every``) or a one-shot (``run_in_minutes``), never both."""
        prompt = _text(prompt, "prompt")
        if len(title.strip()) > TITLE_MAX:
            # A title is a notification's title: refused when too long, never cut silently.
            raise ScheduleRefused(f"title is over {TITLE_MAX} characters: give a short one")
        now = self.clock()
        if bool(every) == (run_in_minutes is not None):
            raise ScheduleRefused(
                "give either every (*/Nm, */Nh, daily@HH:MM) or run_in_minutes, not both"
            )
        if every:
            schedule = parse_every(every)
            first, every = schedule.first_after(now, now), schedule.text
        else:
            assert run_in_minutes is not None
            if not 1 <= run_in_minutes <= MAX_ONE_SHOT_MINUTES:
                raise ScheduleRefused(f"run_in_minutes must be 1 to {MAX_ONE_SHOT_MINUTES}")
            first = now + run_in_minutes * 60.0
        self._trim_done(owner)
        if self.pending(owner, "job") >= MAX_JOBS:
            raise TooMany(
                f"you already have {MAX_JOBS} jobs, the most one person may have: delete one "
                "(schedule action delete) before adding another"
            )
        return self._insert(owner, "job", every, prompt, title, tiny, now, first)

    def add_alert(self, owner: str, title: str, message: str, at: float) -> Scheduled:
        title, now = _text(title, "title", TITLE_MAX), self.clock()
        message = message.strip()[:TEXT_MAX]
        if self.pending(owner, "alert") >= MAX_ALERTS:
            raise TooMany(f"you already have {MAX_ALERTS} pending alerts: cancel some first")
        return self._insert(owner, "alert", "", message, title, "", now, max(at, now))

    def _insert(
        self,
        owner: str,
        kind: Kind,
        every: str,
        text: str,
        title: str,
        tiny: str,
        now: float,
        first: float,
    ) -> Scheduled:
        item_id = uuid.uuid4().hex[:12]
        self._db.execute(
            "INSERT INTO scheduled (id, owner, kind, every, text, title, tiny, created_at,"
            " next_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [item_id, owner, kind, every, text, title[:TITLE_MAX], tiny, now, first],
        )
        return self.get(owner, item_id)

    # --- read ---------------------------------------------------------------------------------

    def get(self, owner: str, item_id: str) -> Scheduled:
        rows = self._select("owner = ? AND id = ?", [owner, item_id])
        if not rows:
            raise NotScheduled(f"no job or alert {item_id!r} of yours")
        return rows[0]

    def of_owner(self, owner: str, kind: Kind) -> list[Scheduled]:
        """Pending first, soonest first; then finished one-shots, newest first."""
        return self._select(
            "owner = ? AND kind = ? ORDER BY next_run IS NULL, next_run, last_run DESC",
            [owner, kind],
        )

    def pending(self, owner: str, kind: Kind) -> int:
        row = self._db.execute(
            "SELECT count(*) FROM scheduled WHERE owner = ? AND kind = ? AND next_run IS NOT NULL",
            [owner, kind],
        ).fetchone()
        return int(row[0])

    def due(self, now: float, limit: int = 100) -> list[Scheduled]:
        return self._select(
            "next_run IS NOT NULL AND next_run <= ? ORDER BY next_run LIMIT ?", [now, limit]
        )

    def _select(self, where: str, params: list[Any]) -> list[Scheduled]:
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM scheduled WHERE {where}", params)
        return [Scheduled(*row) for row in rows.fetchall()]

    # --- removed by a person ------------------------------------------------------------------

    def delete(self, owner: str, item_id: str, kind: Kind | None = None) -> Scheduled:
        found = self.get(owner, item_id)
        if kind is not None and found.kind != kind:
            raise NotScheduled(f"no {kind} {item_id!r} of yours")
        self._db.execute("DELETE FROM scheduled WHERE owner = ? AND id = ?", [owner, item_id])
        return found

    def cancel_alerts(self, owner: str) -> int:
        cursor = self._db.execute(
            "DELETE FROM scheduled WHERE owner = ? AND kind = 'alert' AND next_run IS NOT NULL",
            [owner],
        )
        return int(cursor.rowcount)

    # --- run by the scheduler -----------------------------------------------------------------

    def claim(self, item: Scheduled, now: float) -> bool:
        """Move ``item`` to its next slot (a one-shot to done); False if it was not due any
        more (deleted, or claimed by another tick)."""
        schedule = item.schedule
        following = schedule.first_after(item.created_at, now) if schedule else None
        cursor = self._db.execute(
            "UPDATE scheduled SET next_run = ?, last_run = ? WHERE id = ? AND next_run = ?",
            [following, now, item.id, item.next_run],
        )
        return cursor.rowcount == 1

    def record(self, item_id: str, error: str = "") -> None:
        """How a claimed run ended; an alert that fired is gone."""
        self._db.execute(
            "UPDATE scheduled SET last_status = ?, last_error = ?, runs = runs + 1 WHERE id = ?",
            ["error" if error else "ok", error[:ERROR_MAX], item_id],
        )
        self._db.execute(
            "DELETE FROM scheduled WHERE id = ? AND kind = 'alert' AND next_run IS NULL",
            [item_id],
        )

    def _trim_done(self, owner: str) -> None:
        """Keep a person's newest finished one-shots only, however many they make."""
        self._db.execute(
            "DELETE FROM scheduled WHERE owner = ? AND next_run IS NULL AND id NOT IN ("
            " SELECT id FROM scheduled WHERE owner = ? AND next_run IS NULL"
            " ORDER BY last_run DESC LIMIT ?)",
            [owner, owner, KEEP_DONE],
        )

    def forget_done(self, now: float) -> int:
        cursor = self._db.execute(
            "DELETE FROM scheduled WHERE next_run IS NULL AND last_run < ?", [now - KEEP_DONE_S]
        )
        return int(cursor.rowcount)


def _text(value: str, what: str, limit: int = TEXT_MAX) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise ScheduleRefused(f"{what} is empty: say what it is for")
    if len(text) > limit:
        raise ScheduleRefused(f"{what} is over {limit} characters")
    return text
