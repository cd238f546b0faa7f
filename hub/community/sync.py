"""A person's part of the community in memory sync: what they did, out and in.

What travels is the person's own gestures — the edges that leave ``user:<them>`` (follows,
visits, messages) — and the consults of the tinys they own. Nobody can send gestures in
someone else's name: an incoming edge must leave ``self`` or one of the person's own tinys.

The merge follows the facts' rules: an edge is known by its ends, relation and start, so ids
are kept; a close wins over an open and the earlier close wins; a weight only grows (the larger
count of two is kept). One more rule keeps a pair at one open edge when both sides opened one
while apart: the earlier start wins, and the later edge is closed at its own start — the rule
reads only the two edges, so both sides close the same one. A merged follow pays reputation as
a local one does, and as idempotently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub.community.follows import pay_for_follow
from hub.memory.sync import SELF, MergeReport, SyncedSocial
from hub.store.db import Database
from hub.tinys.social import (
    CONSULTED,
    FOLLOWS,
    PLATFORM,
    TINY_PREFIX,
    USER_PREFIX,
    tiny_node,
    user_node,
)

# The person's edges: they leave the person, or (consults) one of the person's tinys.
_THEIRS = (
    "owner = 'platform' AND (src = :me OR (rel = 'consulted' AND src IN"
    " (SELECT 'tiny:' || name FROM tinys WHERE owner_id = :owner)))"
)


def newest_social_rev(db: Database, owner: str) -> int:
    row = db.execute(
        f"SELECT MAX(rev) FROM edge WHERE {_THEIRS}", {"me": user_node(owner), "owner": owner}
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def social_changes(db: Database, owner: str, after: int, upto: int) -> list[SyncedSocial]:
    """The person's social edges changed in revisions (after, upto], in their wire form."""
    me = user_node(owner)
    rows = db.execute(
        f"SELECT src, rel, dst, weight, valid_from, valid_to FROM edge WHERE {_THEIRS}"
        " AND rev > :after AND rev <= :upto ORDER BY rev, id",
        {"me": me, "owner": owner, "after": after, "upto": upto},
    ).fetchall()
    logins = dict(db.execute("SELECT id, login FROM users WHERE login IS NOT NULL").fetchall())
    found = []
    for src, rel, dst, weight, start, end in rows:
        wire_dst = _wire(dst, logins)
        if wire_dst is not None:  # a person without a login cannot be named on the other side
            wire_src = SELF if src == me else src
            found.append(SyncedSocial(wire_src, rel, wire_dst, float(weight), start, end))
    return found


def merge_social(
    db: Database,
    owner: str,
    edges: list[SyncedSocial],
    rev: Callable[[], int],
    report: MergeReport,
) -> None:
    """Fold the other side's social edges in (inside the caller's transaction); ``rev`` is
    the merge's one revision."""
    for edge in edges:
        local = _local(db, owner, edge)
        if isinstance(local, str):
            report.refused.append({"id": f"{edge.src} {edge.rel} {edge.dst}", "error": local})
            continue
        src, dst = local
        if _merge_one(db, src, dst, edge, rev):
            report.social += 1
            if edge.rel == FOLLOWS and edge.valid_to is None:
                pay_for_follow(db, owner, dst, _builder(db, dst))


def _merge_one(
    db: Database, src: str, dst: str, edge: SyncedSocial, rev: Callable[[], int]
) -> bool:
    row = db.execute(
        "SELECT id, weight, valid_to FROM edge WHERE owner = ? AND src = ? AND rel = ?"
        " AND dst = ? AND valid_from = ?",
        [PLATFORM, src, edge.rel, dst, edge.valid_from],
    ).fetchone()
    if row is None:
        db.execute(
            "INSERT INTO edge (owner, src, rel, dst, weight, visibility, valid_from, valid_to,"
            " rev) VALUES (?, ?, ?, ?, ?, 'public', ?, ?, ?)",
            [PLATFORM, src, edge.rel, dst, edge.weight, edge.valid_from, edge.valid_to, rev()],
        )
        _one_open(db, src, edge.rel, dst, rev)
        return True
    edge_id, weight, local_end = row
    end = local_end
    if edge.valid_to is not None and (local_end is None or edge.valid_to < local_end):
        end = edge.valid_to
    if end == local_end and edge.weight <= weight:
        return False
    db.execute(
        "UPDATE edge SET valid_to = ?, weight = ?, rev = ? WHERE id = ?",
        [end, max(weight, edge.weight), rev(), edge_id],
    )
    return True


def _one_open(db: Database, src: str, rel: str, dst: str, rev: Callable[[], int]) -> None:
    """Of two open edges of one pair, close the later at its own start."""
    rows = db.execute(
        "SELECT id, valid_from FROM edge WHERE owner = ? AND src = ? AND rel = ? AND dst = ?"
        " AND valid_to IS NULL ORDER BY valid_from, id",
        [PLATFORM, src, rel, dst],
    ).fetchall()
    for edge_id, start in rows[1:]:
        db.execute("UPDATE edge SET valid_to = ?, rev = ? WHERE id = ?", [start, rev(), edge_id])


def _local(db: Database, owner: str, edge: SyncedSocial) -> tuple[str, str] | str:
    """The edge's local (src, dst), or why it is refused."""
    if edge.rel == CONSULTED:
        name = edge.src.removeprefix(TINY_PREFIX)
        theirs = db.execute(
            "SELECT 1 FROM tinys WHERE name = ? AND owner_id = ?", [name, owner]
        ).fetchone()
        if not edge.src.startswith(TINY_PREFIX) or theirs is None:
            return "a consult must come from one of your own tinys"
        src = edge.src
    elif edge.src == SELF:
        src = user_node(owner)
    else:
        return f"a {edge.rel} edge must leave self"
    if edge.dst.startswith("@"):
        row = db.execute("SELECT id FROM users WHERE login = ?", [edge.dst[1:]]).fetchone()
        if row is None:
            return f"nobody here is {edge.dst}"
        if row[0] == owner:
            return "an edge from self to self"
        return src, user_node(str(row[0]))
    name = edge.dst.removeprefix(TINY_PREFIX)
    if db.execute("SELECT 1 FROM tinys WHERE name = ?", [name]).fetchone() is None:
        return f"no tiny here is named {name}"
    return src, tiny_node(name)


def _builder(db: Database, node: str) -> str:
    if node.startswith(USER_PREFIX):
        return node.removeprefix(USER_PREFIX)
    row = db.execute(
        "SELECT owner_id FROM tinys WHERE name = ?", [node.removeprefix(TINY_PREFIX)]
    ).fetchone()
    return str(row[0])


def _wire(node: str, logins: dict[Any, Any]) -> str | None:
    if node.startswith(USER_PREFIX):
        login = logins.get(node.removeprefix(USER_PREFIX))
        return f"@{login}" if login else None
    return node
