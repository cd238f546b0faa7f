"""Reputation: standing, not money. Points live in their own table (migration 0016).

Every point costs someone else a gesture: being followed earns ``follow_received``, completing
a mutual follow pays both sides ``mutual_follow``; following earns nothing, so nobody can follow
a crowd to buy themselves past the chat allowance. The award is idempotent in the database —
``UNIQUE (user_id, kind, ref)`` with ``ON CONFLICT DO NOTHING`` — so follow, unfollow and follow
again pays once even though the second follow rightly opens a fresh graph edge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hub.store.db import Database

FOLLOW_RECEIVED = "follow_received"
MUTUAL_FOLLOW = "mutual_follow"
POINTS = {FOLLOW_RECEIVED: 10, MUTUAL_FOLLOW: 5}


@dataclass(frozen=True)
class Standing:
    score: int
    breakdown: dict[str, int]  # kind → points

    def as_json(self) -> dict[str, Any]:
        return {"score": self.score, "breakdown": self.breakdown}


def award(db: Database, user_id: str, kind: str, ref: str) -> bool:
    """Give ``user_id`` the points of ``kind`` for the gesture ``ref``, once ever; True when
    this call gave them."""
    added = db.execute(
        "INSERT INTO reputation (user_id, kind, ref, points, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (user_id, kind, ref) DO NOTHING",
        [user_id, kind, ref, POINTS[kind], time.time()],
    ).rowcount
    return bool(added)


def standing(db: Database, user_id: str) -> Standing:
    rows = db.execute(
        "SELECT kind, SUM(points) FROM reputation WHERE user_id = ? GROUP BY kind ORDER BY kind",
        [user_id],
    ).fetchall()
    breakdown = {kind: 0 for kind in POINTS} | {str(k): int(p) for k, p in rows}
    return Standing(sum(breakdown.values()), breakdown)


def score(db: Database, user_id: str) -> int:
    row = db.execute(
        "SELECT COALESCE(SUM(points), 0) FROM reputation WHERE user_id = ?", [user_id]
    ).fetchone()
    return int(row[0])
