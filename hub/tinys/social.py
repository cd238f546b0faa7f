"""The social graph (docs/protocol.md, universe): who consulted whom, between tiny:<name> nodes.

It reuses the memory graph's ``edge`` table under the one ``platform`` owner (migration 0012),
so it is kept apart from every person's facts. A repeated consult adds to the weight of the
current edge rather than piling up rows: the trust ranking the contract computes over these edges
reads a weight, and a busy pair of tinys should not grow the table without bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlite_utils

PLATFORM = "platform"
CONSULTED = "consulted"


@dataclass(frozen=True)
class SocialEdge:
    src: str
    rel: str
    dst: str
    weight: float


def _now() -> str:
    """The memory graph's stamp format (ISO-8601 UTC, microseconds), so both sort as one."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def tiny_node(name: str) -> str:
    return f"tiny:{name}"


def record_consulted(db: sqlite_utils.Database, asker: str, asked: str) -> None:
    """``tiny:<asker> → consulted → tiny:<asked>``: opened once, then weighed up."""
    src, dst = tiny_node(asker), tiny_node(asked)
    with db.atomic():
        updated = db.execute(
            "UPDATE edge SET weight = weight + 1 WHERE owner = ? AND rel = ? AND src = ?"
            " AND dst = ? AND valid_to IS NULL",
            [PLATFORM, CONSULTED, src, dst],
        ).rowcount
        if not updated:
            db.execute(
                "INSERT INTO edge (owner, src, rel, dst, visibility, valid_from)"
                " VALUES (?, ?, ?, ?, 'public', ?)",
                [PLATFORM, src, CONSULTED, dst, _now()],
            )


def edges_from(db: sqlite_utils.Database, node: str) -> list[SocialEdge]:
    """The current social edges leaving ``node`` (e.g. ``tiny:chef``), heaviest first."""
    rows = db.execute(
        "SELECT src, rel, dst, weight FROM edge WHERE owner = ? AND src = ? AND valid_to IS NULL"
        " ORDER BY weight DESC, id",
        [PLATFORM, node],
    )
    return [SocialEdge(*row) for row in rows]
