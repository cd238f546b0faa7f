"""The feed: what the people you follow have published, newest first.

Following a person, or one of their tinys, brings their fresh public facts (``learn`` with
``visibility: "public"``) and their new public tinys into your feed. Private facts never do:
the query keeps ``visibility = 'public'`` and open facts only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from hub.community.follows import followed_people
from hub.store.db import Database

DEFAULT_FEED = 20
MAX_FEED = 100


@dataclass(frozen=True)
class FeedItem:
    kind: str  # fact | tiny
    by: str  # the author's @login
    ref: str  # the fact's id, or the tiny's name
    text: str
    at: str  # ISO-8601 UTC: when it was published

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def feed(db: Database, user_id: str, limit: int = DEFAULT_FEED) -> list[FeedItem]:
    people = followed_people(db, user_id)
    if not people:
        return []
    marks = ",".join("?" * len(people))
    facts = db.execute(
        "SELECT e.id, u.login, e.label, e.valid_from FROM entity e JOIN users u ON u.id = e.owner"
        f" WHERE e.owner IN ({marks}) AND e.visibility = 'public' AND e.valid_to IS NULL"
        " ORDER BY e.valid_from DESC LIMIT ?",
        [*people, limit],
    ).fetchall()
    tinys = db.execute(
        "SELECT t.name, u.login, t.tagline, t.created_at FROM tinys t"
        f" JOIN users u ON u.id = t.owner_id WHERE t.owner_id IN ({marks})"
        " AND t.visibility = 'public' ORDER BY t.created_at DESC LIMIT ?",
        [*people, limit],
    ).fetchall()
    items = [FeedItem("fact", f"@{login}", i, text, at) for i, login, text, at in facts]
    items += [
        FeedItem("tiny", f"@{login}", name, tagline or name, _iso(created))
        for name, login, tagline, created in tinys
    ]
    return sorted(items, key=lambda item: item.at, reverse=True)[:limit]


def _iso(stamp: float) -> str:
    """A tiny's created_at (epoch seconds) in the facts' format, so both sort as one text."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
