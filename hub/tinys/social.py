"""The social graph (docs/community.md): who follows, visits, messages and consults whom.

Four relations, ``SOCIAL_RELS``, between ``user:<id>`` and ``tiny:<name>`` nodes. The graph
reuses the memory graph's ``edge`` table under the one ``platform`` owner (migration 0012), so
it is kept apart from every person's facts.

Two ways to write an edge, one per kind of gesture:

- ``record_social(db, src, rel, dst)`` for a gesture that repeats (a consult, a visit, a
  message): the first opens the edge, each repeat adds 1 to its weight rather than piling up
  rows — the trust ranking reads a weight, and a busy pair should not grow the table without
  bound. Another part of the hub that records a gesture (e.g. a direct message:
  ``record_social(db, user_node(sender.id), MESSAGED, user_node(recipient.id))``) calls this.
- ``open_social`` / ``close_social`` for a state (a follow): opened once, closed by stamping
  ``valid_to``; opening again after a close starts a fresh edge, so the history stays.

Every write takes a revision from the memory clock (migration 0011), so memory sync carries a
person's gestures to the cloud with their facts (``hub.community.sync``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from hub.store.db import Database

PLATFORM = "platform"
VISITED = "visited"
CONSULTED = "consulted"
MESSAGED = "messaged"
FOLLOWS = "follows"
SOCIAL_RELS = (VISITED, CONSULTED, MESSAGED, FOLLOWS)
# Who visits what and who writes to whom is nobody else's business: these edges are private.
PRIVATE_RELS = (VISITED, MESSAGED)
USER_PREFIX = "user:"
TINY_PREFIX = "tiny:"
_COLUMNS = "id, src, rel, dst, weight, valid_from, valid_to"


@dataclass(frozen=True)
class SocialEdge:
    src: str
    rel: str
    dst: str
    weight: float
    id: int = 0
    valid_from: str = ""
    valid_to: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "rel": self.rel,
            "dst": self.dst,
            "weight": self.weight,
            "since": self.valid_from,
        }


def _now() -> str:
    """The memory graph's stamp format (ISO-8601 UTC, microseconds), so both sort as one."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def tiny_node(name: str) -> str:
    return f"{TINY_PREFIX}{name}"


def user_node(user_id: str) -> str:
    return f"{USER_PREFIX}{user_id}"


def next_rev(db: Database) -> int:
    """The memory clock's next revision; inside the writing transaction only."""
    row = db.execute("UPDATE memory_clock SET rev = rev + 1 RETURNING rev").fetchone()
    return int(row[0])


def _check_rel(rel: str) -> None:
    if rel not in SOCIAL_RELS:
        raise ValueError(f"rel must be one of {', '.join(SOCIAL_RELS)}, not {rel!r}")


def record_social(db: Database, src: str, rel: str, dst: str) -> None:
    """``src → rel → dst``: opened once, then weighed up by 1 at each repeat."""
    _check_rel(rel)
    with db.atomic():
        rev = next_rev(db)
        updated = db.execute(
            "UPDATE edge SET weight = weight + 1, rev = ? WHERE owner = ? AND rel = ? AND src = ?"
            " AND dst = ? AND valid_to IS NULL",
            [rev, PLATFORM, rel, src, dst],
        ).rowcount
        if not updated:
            _insert(db, src, rel, dst, rev)


def record_consulted(db: Database, asker: str, asked: str) -> None:
    """``tiny:<asker> → consulted → tiny:<asked>``: what the trust ranking is computed over."""
    record_social(db, tiny_node(asker), CONSULTED, tiny_node(asked))


def open_social(db: Database, src: str, rel: str, dst: str) -> bool:
    """Open ``src → rel → dst`` unless it is open; True when this call opened it."""
    _check_rel(rel)
    with db.atomic():
        if current(db, src, rel, dst) is not None:
            return False
        _insert(db, src, rel, dst, next_rev(db))
        return True


def close_social(db: Database, src: str, rel: str, dst: str) -> bool:
    """Close the open ``src → rel → dst`` (it stays as history); True when one was open."""
    with db.atomic():
        closed = db.execute(
            "UPDATE edge SET valid_to = ?, rev = ? WHERE owner = ? AND rel = ? AND src = ?"
            " AND dst = ? AND valid_to IS NULL",
            [_now(), next_rev(db), PLATFORM, rel, src, dst],
        ).rowcount
    return bool(closed)


def current(db: Database, src: str, rel: str, dst: str) -> SocialEdge | None:
    row = db.execute(
        f"SELECT {_COLUMNS} FROM edge WHERE owner = ? AND rel = ? AND src = ? AND dst = ?"
        " AND valid_to IS NULL",
        [PLATFORM, rel, src, dst],
    ).fetchone()
    return _edge(row) if row else None


def edges_from(db: Database, node: str, rel: str = "") -> list[SocialEdge]:
    """The current social edges leaving ``node`` (e.g. ``tiny:chef``), heaviest first."""
    return _current_at(db, "src", node, rel)


def edges_to(db: Database, node: str, rel: str = "") -> list[SocialEdge]:
    """The current social edges arriving at ``node``, heaviest first."""
    return _current_at(db, "dst", node, rel)


def _current_at(db: Database, end: Literal["src", "dst"], node: str, rel: str) -> list[SocialEdge]:
    """The current edges with ``node`` at ``end`` (of relation ``rel``; any when empty)."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM edge WHERE owner = ? AND {end} = ? AND valid_to IS NULL"
        " AND (? = '' OR rel = ?) ORDER BY weight DESC, id",
        [PLATFORM, node, rel, rel],
    )
    return [_edge(row) for row in rows]


def _insert(db: Database, src: str, rel: str, dst: str, rev: int) -> None:
    db.execute(
        "INSERT INTO edge (owner, src, rel, dst, visibility, valid_from, rev)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [PLATFORM, src, rel, dst, "private" if rel in PRIVATE_RELS else "public", _now(), rev],
    )


def _edge(row: Any) -> SocialEdge:
    edge_id, src, rel, dst, weight, valid_from, valid_to = row
    return SocialEdge(src, rel, dst, float(weight), int(edge_id), valid_from, valid_to)
