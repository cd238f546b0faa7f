"""The fact graph: learn, recall, unlearn, history, neighbours and conflicts, per person.

SQLite is the source of truth; Chroma only finds candidates. A fact is written to SQLite first
with vec_id NULL and gets its vec_id once its vector is stored, so a crash between the two
writes leaves a fact that the next start indexes. Every read re-checks the owner in SQL: the
vector filter narrows, the SQL predicate decides. Capacity is a hard limit with no eviction —
an eviction-on-write policy once destroyed old memories one per save during bulk writes.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hub.contracts import MAX_ENTRIES, MAX_ENTRY_CHARS
from hub.errors import Refused
from hub.memory.vectors import VectorIndex, VectorItem
from hub.store.db import connect

log = logging.getLogger(__name__)

KINDS = ("fact", "person", "tiny", "project", "concept")
LINK_RELS = ("part_of", "authored", "relates_to", "about")
SUPERSEDES = "supersedes"
MAX_SCOPE_CHARS = 100
RECALL_OVERFETCH = 3
INDEX_BATCH = 256

_FACT_COLUMNS = "id, owner, kind, label, attrs_json, vec_id, visibility, valid_from, valid_to"


class MemoryRefused(Refused):
    """A memory request that cannot be met; ``status`` is its HTTP answer."""

    status = 400


class FactNotFound(MemoryRefused):
    status = 404


class MemoryFull(MemoryRefused):
    status = 409


@dataclass(frozen=True)
class Fact:
    id: str
    owner: str
    kind: str
    text: str
    visibility: str
    valid_from: str
    valid_to: str | None
    vec_id: str | None = None

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fact": self.text,
            "kind": self.kind,
            "visibility": self.visibility,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
        }


@dataclass(frozen=True)
class Link:
    rel: str
    dst: str
    scope: str = ""


@dataclass(frozen=True)
class Edge:
    id: int
    src: str
    rel: str
    dst: str
    scope: str
    valid_from: str
    valid_to: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "src": self.src,
            "rel": self.rel,
            "dst": self.dst,
            "scope": self.scope,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
        }


def now() -> str:
    """ISO-8601 UTC with microseconds: sortable as text, readable in a response."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_links(raw: Any) -> list[Link]:
    """``[{rel, dst, scope?}]`` from a tool or a request; MemoryRefused naming the bad item."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MemoryRefused("links must be an array of {rel, dst, scope}")
    links = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise MemoryRefused(f"links[{index}] must be an object {{rel, dst, scope}}")
        rel, dst, scope = item.get("rel"), item.get("dst"), item.get("scope", "")
        if rel not in LINK_RELS:
            raise MemoryRefused(f"links[{index}].rel must be one of {', '.join(LINK_RELS)}")
        if not isinstance(dst, str) or not dst:
            raise MemoryRefused(f"links[{index}].dst must be a fact id")
        if not isinstance(scope, str) or len(scope) > MAX_SCOPE_CHARS:
            raise MemoryRefused(f"links[{index}].scope must be a string of at most 100 characters")
        links.append(Link(rel, dst, scope))
    return links


def parse_ids(raw: Any, field: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(i, str) and i for i in raw):
        raise MemoryRefused(f"{field} must be an array of fact ids")
    return list(dict.fromkeys(raw))


class MemoryStore:
    """One person's facts never reach another: every method takes the owner and checks it."""

    def __init__(self, db_path: Path, vectors: VectorIndex) -> None:
        self._db = connect(db_path)
        self._lock = threading.RLock()
        self.vectors = vectors

    def close(self) -> None:
        self._db.conn.close()

    # --- writes -----------------------------------------------------------------------------

    def learn(
        self,
        owner: str,
        text: Any,
        *,
        kind: str = "fact",
        supersedes: Sequence[str] = (),
        links: Sequence[Link] = (),
        visibility: str = "private",
    ) -> Fact:
        fact_text = _check_text(text)
        if kind not in KINDS:
            raise MemoryRefused(f"kind must be one of {', '.join(KINDS)}")
        if visibility not in ("private", "public"):
            raise MemoryRefused("visibility must be private or public")
        fact_id = "m_" + uuid.uuid4().hex[:20]
        stamp = now()
        with self._lock, self._transaction():
            closing = [self._current(owner, old, "supersedes") for old in supersedes]
            for link in links:
                self._existing(owner, link.dst, "links dst")
            count = self.count(owner)
            if count - len(closing) >= MAX_ENTRIES:
                raise MemoryFull(
                    f"memory full ({count}/{MAX_ENTRIES}): unlearn stale facts or consolidate "
                    "several into one before adding more"
                )
            self._db.execute(
                f"INSERT INTO entity ({_FACT_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, NULL)",
                [
                    fact_id,
                    owner,
                    kind,
                    fact_text,
                    json.dumps({"source": fact_text}),
                    visibility,
                    stamp,
                ],
            )
            for old in closing:
                self._close(old, stamp)
                self._add_edge(owner, fact_id, SUPERSEDES, old.id, "", stamp)
            for link in links:
                self._add_edge(owner, fact_id, link.rel, link.dst, link.scope, stamp)
        self._drop_vectors([old.vec_id for old in closing if old.vec_id])
        self._index([Fact(fact_id, owner, kind, fact_text, visibility, stamp, None)])
        return self.get(owner, fact_id)

    def unlearn(self, owner: str, fact_id: str) -> Fact:
        """Close one fact: it leaves listings and recall, and stays as history."""
        with self._lock, self._transaction():
            fact = self._current(owner, fact_id, "id")
            self._close(fact, now())
        self._drop_vectors([fact.vec_id] if fact.vec_id else [])
        return self.get(owner, fact_id)

    def clear_all(self, owner: str) -> int:
        """The one destructive path: every fact and link of this person, and their vectors."""
        with self._lock, self._transaction():
            count = int(
                self._db.execute("SELECT COUNT(*) FROM entity WHERE owner = ?", [owner]).fetchone()[
                    0
                ]
            )
            self._db.execute("DELETE FROM edge WHERE owner = ?", [owner])
            self._db.execute("DELETE FROM entity WHERE owner = ?", [owner])
        self.vectors.delete_user(owner)
        return count

    def resolve_conflict(self, owner: str, keep_edge: int) -> list[int]:
        """Keep one edge of a conflict group and close the rest; returns the closed ids."""
        with self._lock, self._transaction():
            row = self._db.execute(
                "SELECT dst, rel, scope FROM edge WHERE id = ? AND owner = ? AND valid_to IS NULL",
                [keep_edge, owner],
            ).fetchone()
            if row is None:
                raise FactNotFound(f"no current link {keep_edge}")
            closing = [
                r[0]
                for r in self._db.execute(
                    "SELECT id FROM edge WHERE owner = ? AND dst = ? AND rel = ? AND scope = ?"
                    " AND valid_to IS NULL AND id != ?",
                    [owner, *row, keep_edge],
                )
            ]
            self._db.execute(
                f"UPDATE edge SET valid_to = ? WHERE id IN ({','.join('?' * len(closing))})",
                [now(), *closing],
            )
        return closing

    # --- reads ------------------------------------------------------------------------------

    def get(self, owner: str, fact_id: str) -> Fact:
        return self._existing(owner, fact_id, "id")

    def count(self, owner: str) -> int:
        return int(
            self._db.execute(
                "SELECT COUNT(*) FROM entity WHERE owner = ? AND valid_to IS NULL", [owner]
            ).fetchone()[0]
        )

    def recent(self, owner: str, limit: int = 30) -> list[Fact]:
        rows = self._db.execute(
            f"SELECT {_FACT_COLUMNS} FROM entity WHERE owner = ? AND valid_to IS NULL"
            " ORDER BY valid_from DESC, rowid DESC LIMIT ?",
            [owner, limit],
        )
        return [_fact(row) for row in rows]

    def recall(self, owner: str, query: str, *, limit: int = 5, hops: int = 0) -> list[Fact]:
        """Best matches first; ``hops=1`` appends the current facts linked to them."""
        if not query.strip():
            return []
        found = self.vectors.query(owner, query, limit * RECALL_OVERFETCH)
        facts = self._owned_current(owner, [vec_id for vec_id, _ in found])[:limit]
        if hops:
            seen = {f.id for f in facts}
            for fact in list(facts):
                for neighbour in self._linked(owner, fact.id):
                    if neighbour.id not in seen:
                        seen.add(neighbour.id)
                        facts.append(neighbour)
        return facts

    def preload(self, owner: str, message: str, recent: int = 30, matches: int = 5) -> list[Fact]:
        """What a chat turn puts in the prompt: the newest facts, then the best matches."""
        facts = self.recent(owner, recent)
        seen = {f.id for f in facts}
        extra = [f for f in self.recall(owner, message, limit=matches) if f.id not in seen]
        return facts + extra

    def history(self, owner: str, fact_id: str) -> list[Fact]:
        """The supersedes trail through this fact, oldest first: "when did I change that?"."""
        start = self._existing(owner, fact_id, "id")
        older, newer = [], []
        cursor = start.id
        while (prev := self._trail_step(owner, "src", cursor)) and prev not in older:
            older.append(prev)
            cursor = prev
        cursor = start.id
        while (nxt := self._trail_step(owner, "dst", cursor)) and nxt not in newer:
            newer.append(nxt)
            cursor = nxt
        ids = [*reversed(older), start.id, *newer]
        return [self._existing(owner, i, "id") for i in ids]

    def neighbors(
        self, owner: str, fact_id: str, depth: int = 1, rels: Sequence[str] = ()
    ) -> tuple[list[Fact], list[Edge]]:
        if depth not in (1, 2):
            raise MemoryRefused("depth must be 1 or 2")
        self._existing(owner, fact_id, "id")
        nodes, edges, frontier = {fact_id}, {}, {fact_id}
        for _ in range(depth):
            reached = set()
            for edge in self._edges_touching(owner, frontier, rels):
                edges[edge.id] = edge
                reached.update({edge.src, edge.dst} - nodes)
            nodes |= reached
            frontier = reached
        facts = [self._existing(owner, n, "id") for n in sorted(nodes)]
        return facts, sorted(edges.values(), key=lambda e: e.id)

    def conflicts(self, owner: str) -> list[dict[str, Any]]:
        """Same subject and relation pointing at different facts in one scope. Facts in
        different scopes are context-bound and never flagged."""
        groups = self._db.execute(
            "SELECT dst, rel, scope FROM edge WHERE owner = ? AND valid_to IS NULL AND rel != ?"
            " GROUP BY dst, rel, scope HAVING COUNT(DISTINCT src) > 1",
            [owner, SUPERSEDES],
        )
        result = []
        for dst, rel, scope in groups.fetchall():
            rows = self._db.execute(
                "SELECT id, src FROM edge WHERE owner = ? AND dst = ? AND rel = ? AND scope = ?"
                " AND valid_to IS NULL ORDER BY id",
                [owner, dst, rel, scope],
            ).fetchall()
            result.append(
                {
                    "subject": dst,
                    "rel": rel,
                    "scope": scope,
                    "edges": [
                        {"id": edge_id, "fact": self.get(owner, src).as_json()}
                        for edge_id, src in rows
                    ],
                }
            )
        return result

    def listing(self, owner: str, limit: int, query: str = "") -> list[Fact]:
        return self.recall(owner, query, limit=limit) if query else self.recent(owner, limit)

    # --- the index ----------------------------------------------------------------------------

    def index_missing(self) -> int:
        """Give every current fact without a vector its vector (after a crash, or a rebuild)."""
        done = 0
        while True:
            rows = self._db.execute(
                f"SELECT {_FACT_COLUMNS} FROM entity WHERE vec_id IS NULL AND valid_to IS NULL"
                " LIMIT ?",
                [INDEX_BATCH],
            ).fetchall()
            if not rows:
                return done
            self._index([_fact(row) for row in rows], strict=True)
            done += len(rows)

    def reindex(self) -> int:
        """Rebuild the whole collection from SQLite (``tiny-hub memory reindex``)."""
        with self._lock:
            self.vectors.rebuild()
            self._db.execute("UPDATE entity SET vec_id = NULL")
        return self.index_missing()

    def _index(self, facts: Iterable[Fact], strict: bool = False) -> None:
        batch = [f for f in facts]
        try:
            self.vectors.add([VectorItem(f.id, f.text, f.owner) for f in batch])
        except Exception:
            if strict:
                raise
            log.warning(
                "vector write failed; %d fact(s) will be indexed at the next start",
                len(batch),
                exc_info=True,
            )
            return
        with self._lock:
            self._db.conn.executemany(
                "UPDATE entity SET vec_id = id WHERE id = ?", [(f.id,) for f in batch]
            )

    def _drop_vectors(self, vec_ids: Sequence[str]) -> None:
        try:
            self.vectors.delete(vec_ids)
        except Exception:
            log.warning("could not drop %d vector(s); SQL filters them anyway", len(vec_ids))

    # --- helpers ----------------------------------------------------------------------------

    def _transaction(self) -> Any:
        return _Transaction(self._db.conn)

    def _existing(self, owner: str, fact_id: str, field: str) -> Fact:
        row = self._db.execute(
            f"SELECT {_FACT_COLUMNS} FROM entity WHERE id = ? AND owner = ?", [fact_id, owner]
        ).fetchone()
        if row is None:  # another person's id is "not found" too: existence is not revealed
            raise FactNotFound(f"{field}: no fact {fact_id}")
        return _fact(row)

    def _current(self, owner: str, fact_id: str, field: str) -> Fact:
        fact = self._existing(owner, fact_id, field)
        if not fact.current:
            raise MemoryRefused(f"{field}: fact {fact_id} was already closed at {fact.valid_to}")
        return fact

    def _close(self, fact: Fact, stamp: str) -> None:
        self._db.execute(
            "UPDATE entity SET valid_to = ?, vec_id = NULL WHERE id = ?", [stamp, fact.id]
        )

    def _add_edge(self, owner: str, src: str, rel: str, dst: str, scope: str, stamp: str) -> None:
        self._db.execute(
            "INSERT INTO edge (owner, src, rel, dst, scope, valid_from) VALUES (?, ?, ?, ?, ?, ?)",
            [owner, src, rel, dst, scope, stamp],
        )

    def _owned_current(self, owner: str, ids: Sequence[str]) -> list[Fact]:
        """The SQL owner check: keeps the vector order, drops anything not this owner's."""
        if not ids:
            return []
        rows = self._db.execute(
            f"SELECT {_FACT_COLUMNS} FROM entity WHERE owner = ? AND valid_to IS NULL"
            f" AND id IN ({','.join('?' * len(ids))})",
            [owner, *ids],
        )
        by_id = {row[0]: _fact(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def _linked(self, owner: str, fact_id: str) -> list[Fact]:
        ids = [
            r[0]
            for r in self._db.execute(
                "SELECT CASE WHEN src = ? THEN dst ELSE src END FROM edge WHERE owner = ?"
                " AND valid_to IS NULL AND rel != ? AND (src = ? OR dst = ?)",
                [fact_id, owner, SUPERSEDES, fact_id, fact_id],
            )
        ]
        return self._owned_current(owner, ids)

    def _trail_step(self, owner: str, side: str, fact_id: str) -> str | None:
        other = "dst" if side == "src" else "src"
        row = self._db.execute(
            f"SELECT {other} FROM edge WHERE owner = ? AND rel = ? AND {side} = ? ORDER BY id",
            [owner, SUPERSEDES, fact_id],
        ).fetchone()
        return str(row[0]) if row else None

    def _edges_touching(self, owner: str, nodes: set[str], rels: Sequence[str]) -> list[Edge]:
        marks = ",".join("?" * len(nodes))
        sql = (
            f"SELECT id, src, rel, dst, scope, valid_from, valid_to FROM edge WHERE owner = ?"
            f" AND valid_to IS NULL AND (src IN ({marks}) OR dst IN ({marks}))"
        )
        params: list[Any] = [owner, *nodes, *nodes]
        if rels:
            sql += f" AND rel IN ({','.join('?' * len(rels))})"
            params += list(rels)
        return [Edge(*row) for row in self._db.execute(sql, params)]


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error (the connection is autocommit)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, value: Any, trace: Any) -> None:
        self._conn.execute("ROLLBACK" if kind else "COMMIT")


def _check_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise MemoryRefused("fact must be a non-empty string")
    cleaned: str = text.strip()
    if len(cleaned) > MAX_ENTRY_CHARS:
        raise MemoryRefused(
            f"fact is {len(cleaned)} characters; the limit is {MAX_ENTRY_CHARS}: split it into "
            "self-contained facts"
        )
    return cleaned


def _fact(row: Sequence[Any]) -> Fact:
    return Fact(
        id=row[0],
        owner=row[1],
        kind=row[2],
        text=row[3],
        visibility=row[6],
        valid_from=row[7],
        valid_to=row[8],
        vec_id=row[5],
    )
