"""The fact graph: learn, recall, unlearn, history, neighbours and conflicts, per person.

It is one module on purpose: every write to the fact graph (learn, supersede, unlearn, merge)
runs in one transaction discipline on one connection, and splitting the writers would split that
discipline.

SQLite is the source of truth; Chroma only finds candidates. A fact is written to SQLite first
with vec_id NULL and gets its vec_id once its vector is stored, so a crash between the two
writes leaves a fact that the next start indexes. Every read re-checks the owner in SQL: the
vector filter narrows, the SQL predicate decides. Capacity is a hard limit with no eviction —
an eviction-on-write policy once destroyed old memories one per save during bulk writes.

Forgetting closes facts and the links touching them as one act the person can undo within the
grace period (``hub.memory.forgetting`` keeps its bookkeeping); an undo brings the facts back as
new facts that supersede the closed ones, because sync lets a close win over an open, so a fact
reopened in place would be closed again by the next sync. Past the grace period the forgotten
facts (and the older versions they replaced) are deleted for good.

The store writes through the hub's one database connection (``hub.store.db`` says why one),
in that connection's transactions; embedding and Chroma calls happen after the transaction
commits, never while it holds the database.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from hub.community.sync import merge_social, newest_social_rev, social_changes
from hub.contracts import MAX_ENTRIES
from hub.memory import forgetting
from hub.memory.forgetting import DEFAULT_GRACE_DAYS, Forgetting, Recorded
from hub.memory.model import (
    KINDS,
    LINK_RELS,
    SUPERSEDES,
    Edge,
    Fact,
    FactNotFound,
    Link,
    MemoryFull,
    MemoryRefused,
    SyncedEdge,
    check_text,
    new_fact_id,
    now,
    parse_ids,
    parse_links,
)
from hub.memory.sync import SYNC_PAGE, Changes, MergeReport, SyncedSocial
from hub.memory.vectors import VectorIndex, VectorItem
from hub.store.db import Database

log = logging.getLogger(__name__)

RECALL_OVERFETCH = 3
INDEX_BATCH = 256
DAY_S = 86400.0
# "The facts about X": each close enough to X by meaning on its own, and near the best match
# (a fact sharing only "The user ..." with X scores up to 0.36; a fact about X 0.4-0.9).
ABOUT_AT_LEAST = 0.3
ABOUT_MARGIN = 0.25
ABOUT_AT_MOST = 50

_FACT_COLUMNS = "id, owner, kind, label, attrs_json, vec_id, visibility, valid_from, valid_to"
_EDGE_SYNC_COLUMNS = "src, rel, dst, scope, valid_from, valid_to"

__all__ = [  # the nouns live in hub.memory.model; callers may keep importing them from here
    "KINDS",
    "LINK_RELS",
    "SUPERSEDES",
    "Edge",
    "Fact",
    "FactNotFound",
    "Link",
    "MemoryFull",
    "MemoryRefused",
    "MemoryStore",
    "now",
    "parse_ids",
    "parse_links",
]


class MemoryStore:
    """One person's facts never reach another: every method takes the owner and checks it."""

    def __init__(
        self,
        db: Database,
        vectors: VectorIndex,
        grace_s: float = DEFAULT_GRACE_DAYS * DAY_S,
        capacity: int = MAX_ENTRIES,
    ) -> None:
        self._db = db
        self.grace_s = grace_s  # how long a forgetting can be undone
        self.capacity = capacity  # current facts a person may hold (memory.max_facts)
        # Orders vector bookkeeping against a rebuild; taken before the connection's turn,
        # never while holding it.
        self._index_lock = threading.RLock()
        self.vectors = vectors

    @property
    def db(self) -> Database:
        """The connection this store reads and writes through: the hub's own."""
        return self._db

    def close(self) -> None:
        """Closes the vectors; the connection is the hub's, closed by the hub."""
        self.vectors.close()

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
        fact_text = check_text(text)
        if kind not in KINDS:
            raise MemoryRefused(f"kind must be one of {', '.join(KINDS)}")
        if visibility not in ("private", "public"):
            raise MemoryRefused("visibility must be private or public")
        fact_id = new_fact_id()
        stamp = now()
        with self._db.atomic():
            rev = self._next_rev()
            closing = [self._current(owner, old, "supersedes") for old in supersedes]
            for link in links:
                self._existing(owner, link.dst, "links dst")
            count = self.count(owner)
            if count - len(closing) >= self.capacity:
                raise MemoryFull(
                    f"memory full ({count}/{self.capacity}): unlearn stale facts or consolidate "
                    "several into one before adding more"
                )
            self._insert(Fact(fact_id, owner, kind, fact_text, visibility, stamp, None), rev)
            for old in closing:
                self._close(old, stamp, rev)
                self._add_edge(owner, fact_id, SUPERSEDES, old.id, "", stamp, rev)
            for link in links:
                self._add_edge(owner, fact_id, link.rel, link.dst, link.scope, stamp, rev)
        self._drop_vectors([old.vec_id for old in closing if old.vec_id])
        self._index([Fact(fact_id, owner, kind, fact_text, visibility, stamp, None)])
        return self.get(owner, fact_id)

    def unlearn(self, owner: str, fact_id: str) -> Fact:
        """Forget one fact: it leaves listings and recall, and can be brought back until the
        grace period ends."""
        self.forget(owner, [fact_id])
        return self.get(owner, fact_id)

    def forget(
        self,
        owner: str,
        fact_ids: Sequence[str],
        *,
        scope: forgetting.Scope = "fact",
        about: str = "",
    ) -> Forgetting:
        """Close these current facts and the links touching them, as one forgetting."""
        stamp = now()
        with self._db.atomic():
            facts = [self._current(owner, i, "id") for i in dict.fromkeys(fact_ids)]
            if not facts:
                raise MemoryRefused("there is nothing to forget")
            rev = self._next_rev()
            ids = [fact.id for fact in facts]
            edges = self._open_links(owner, ids)
            for fact in facts:
                self._close(fact, stamp, rev)
            self._db.conn.executemany(
                "UPDATE edge SET valid_to = ?, rev = ? WHERE id = ?",
                [(stamp, rev, edge_id) for edge_id in edges],
            )
            made = forgetting.record(self._db, owner, scope, about, stamp, self.grace_s, ids, edges)
        self._drop_vectors([fact.vec_id for fact in facts if fact.vec_id])
        return self._forgetting(made)

    def about(self, owner: str, text: str) -> list[Fact]:
        """The current facts about ``text``, by meaning, best first."""
        if not text.strip():
            return []
        self._index_missing_of(owner)
        found = self.vectors.query(owner, text, ABOUT_AT_MOST)
        if not found:
            return []
        bar = max(ABOUT_AT_LEAST, 1.0 - found[0][1] - ABOUT_MARGIN)
        return self._owned_current(owner, [vec_id for vec_id, far in found if 1.0 - far >= bar])

    def still_current(self, owner: str, fact_ids: Sequence[str]) -> list[Fact]:
        """Those of these facts that are this person's and current, in the order given."""
        return self._owned_current(owner, list(dict.fromkeys(fact_ids)))

    def forgotten(self, owner: str) -> list[Forgetting]:
        """What this person forgot that can still be brought back, newest first."""
        return [self._forgetting(made) for made in forgetting.recent(self._db, owner, now())]

    def restore(self, owner: str, forgetting_id: Any) -> list[Fact]:
        """Undo a forgetting: its facts come back (with their vectors, so recall finds them)
        as new facts superseding the closed ones, and so do the links it closed."""
        stamp = now()
        with self._db.atomic():
            made = forgetting.restorable(self._db, owner, forgetting_id, stamp)
            olds = [self._existing(owner, i, "id") for i in made.fact_ids]
            count = self.count(owner)
            if count + len(olds) > MAX_ENTRIES:
                raise MemoryFull(
                    f"memory full ({count}/{MAX_ENTRIES}): bringing back {len(olds)} fact(s) "
                    "needs room; forget or consolidate others first"
                )
            rev = self._next_rev()
            renamed: dict[str, str] = {}
            fresh = []
            for old in olds:
                new = Fact(new_fact_id(), owner, old.kind, old.text, old.visibility, stamp, None)
                self._insert(new, rev)
                self._add_edge(owner, new.id, SUPERSEDES, old.id, "", stamp, rev)
                renamed[old.id] = new.id
                fresh.append(new)
            for edge in self._edges_by_id(owner, made.edge_ids):
                src, dst = renamed.get(edge.src, edge.src), renamed.get(edge.dst, edge.dst)
                if self._is_current(owner, src) and self._is_current(owner, dst):
                    self._add_edge(owner, src, edge.rel, dst, edge.scope, stamp, rev)
            forgetting.mark_restored(self._db, made.id, stamp)
        self._index(fresh)
        return [self.get(owner, fact.id) for fact in fresh]

    def delete_forgotten(self, at: str | None = None) -> int:
        """Delete for good the facts of every forgetting past its grace period (and the older
        versions they had replaced, with every link touching them); returns how many facts."""
        deleted: list[str] = []
        with self._db.atomic():
            due = forgetting.due(self._db, at or now())
            for made in due:
                if made.restored_at is None:
                    deleted += self._delete_facts(made.owner, made.fact_ids)
            forgetting.drop(self._db, [made.id for made in due])
        self._drop_vectors(deleted)  # none should be left; a failed drop may have left some
        return len(deleted)

    def clear_all(self, owner: str) -> int:
        """The one path that deletes at once (the person's own ``DELETE /learnings?scope=all``):
        every fact and link of this person, what they forgot, and their vectors."""
        with self._db.atomic():
            count = int(
                self._db.execute("SELECT COUNT(*) FROM entity WHERE owner = ?", [owner]).fetchone()[
                    0
                ]
            )
            self._db.execute("DELETE FROM edge WHERE owner = ?", [owner])
            self._db.execute("DELETE FROM entity WHERE owner = ?", [owner])
            self._db.execute("DELETE FROM forgetting WHERE owner = ?", [owner])
        self.vectors.delete_user(owner)
        return count

    def resolve_conflict(self, owner: str, keep_edge: int) -> list[int]:
        """Keep one edge of a conflict group and close the rest; returns the closed ids."""
        with self._db.atomic():
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
            marks = ",".join("?" * len(closing))
            self._db.execute(
                f"UPDATE edge SET valid_to = ?, rev = ? WHERE id IN ({marks})",
                [now(), self._next_rev(), *closing],
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

    def stats(self) -> tuple[int, int, int]:
        """Across every person: (current facts, current facts without a vector, vectors)."""
        current, waiting = self._db.execute(
            "SELECT COUNT(*), SUM(vec_id IS NULL) FROM entity WHERE valid_to IS NULL"
        ).fetchone()
        return int(current), int(waiting or 0), self.vectors.count()

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
        self._index_missing_of(owner)
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
        newest, extra = self.preload_parts(owner, message, recent, matches)
        return newest + extra

    def preload_parts(
        self, owner: str, message: str, recent: int = 30, matches: int = 5
    ) -> tuple[list[Fact], list[Fact]]:
        """The pre-load in its two parts: the newest facts (the same from message to message
        until a fact is learned) and the best matches for ``message`` that are not among them."""
        facts = self.recent(owner, recent)
        seen = {f.id for f in facts}
        extra = [f for f in self.recall(owner, message, limit=matches) if f.id not in seen]
        return facts, extra

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

    # --- sync (hub.memory.sync has the why) ---------------------------------------------------

    def changes(self, owner: str, after: int, limit: int = SYNC_PAGE) -> Changes:
        """The facts and links changed after revision ``after``, about ``limit`` facts at a time;
        a revision is never split across pages, so a page holds whole writes."""
        with self._db.turn:  # one consistent read: no write lands between the queries
            top = self._newest_rev(owner, after)
            revs = self._db.execute(
                "SELECT rev FROM entity WHERE owner = ? AND rev > ? ORDER BY rev LIMIT 1 OFFSET ?",
                [owner, after, limit - 1],
            ).fetchone()
            upto = min(top, int(revs[0])) if revs else top
            facts = self._db.execute(
                f"SELECT {_FACT_COLUMNS} FROM entity WHERE owner = ? AND rev > ? AND rev <= ?"
                " ORDER BY rev, rowid",
                [owner, after, upto],
            ).fetchall()
            edges = self._db.execute(
                f"SELECT {_EDGE_SYNC_COLUMNS} FROM edge WHERE owner = ? AND rev > ? AND rev <= ?"
                " ORDER BY rev, id",
                [owner, after, upto],
            ).fetchall()
            social = social_changes(self._db, owner, after, upto)
        return Changes(
            [_fact(r) for r in facts], [SyncedEdge(*r) for r in edges], upto, top > upto, social
        )

    def merge(
        self,
        owner: str,
        facts: Sequence[Fact],
        edges: Sequence[SyncedEdge],
        social: Sequence[SyncedSocial] = (),
    ) -> MergeReport:
        """Fold the other side's changes in: unknown facts and links are added with their ids,
        a close wins over an open, the earlier close wins over a later one. Merging the same
        page again changes nothing (and takes no revision). ``social``: the person's part of
        the community (``hub.community.sync``), merged in the same transaction."""
        report, fresh, stale = MergeReport(), list[Fact](), list[str]()
        with self._db.atomic():
            room = self.capacity - self.count(owner)
            for fact in (replace(f, owner=owner) for f in facts):
                room -= self._merge_fact(owner, fact, room, report, fresh, stale)
            for edge in edges:
                self._merge_edge(owner, edge, report)
            merge_social(self._db, owner, list(social), lambda: self._merge_rev(report), report)
        self._drop_vectors(stale)
        self._index(fresh)
        return report

    def newest_rev(self, owner: str) -> int:
        return self._newest_rev(owner, 0)

    def _newest_rev(self, owner: str, after: int) -> int:
        row = self._db.execute(
            "SELECT MAX(rev) FROM (SELECT MAX(rev) AS rev FROM entity WHERE owner = ?"
            " UNION ALL SELECT MAX(rev) FROM edge WHERE owner = ?)",
            [owner, owner],
        ).fetchone()
        newest = int(row[0]) if row and row[0] is not None else 0
        return max(after, newest, newest_social_rev(self._db, owner))

    def _merge_fact(
        self,
        owner: str,
        fact: Fact,
        room: int,
        report: MergeReport,
        fresh: list[Fact],
        stale: list[str],
    ) -> int:
        """One incoming fact; returns how much room it took (1 opened, -1 closed, 0 neither)."""
        row = self._db.execute(
            "SELECT owner, valid_to, vec_id FROM entity WHERE id = ?", [fact.id]
        ).fetchone()
        if row is None:
            if fact.current and room <= 0:
                report.refused.append({"id": fact.id, "error": f"memory full ({self.capacity})"})
                return 0
            self._insert(fact, self._merge_rev(report))
            report.added += 1
            if fact.current:
                fresh.append(fact)
            return 1 if fact.current else 0
        if row[0] != owner:  # an id clash with someone else's fact: never touch theirs
            report.refused.append({"id": fact.id, "error": "the id is taken by another fact"})
            return 0
        local_end: str | None = row[1]
        if fact.valid_to is None or (local_end is not None and local_end <= fact.valid_to):
            return 0
        self._close(fact, fact.valid_to, self._merge_rev(report))
        report.closed += 1
        if row[2]:
            stale.append(row[2])
        return -1 if local_end is None else 0

    def _merge_edge(self, owner: str, edge: SyncedEdge, report: MergeReport) -> None:
        ends = self._db.execute(
            "SELECT COUNT(*) FROM entity WHERE owner = ? AND id IN (?, ?)",
            [owner, edge.src, edge.dst],
        ).fetchone()[0]
        if ends < (1 if edge.src == edge.dst else 2):
            report.refused.append(
                {"id": f"{edge.src} {edge.rel} {edge.dst}", "error": "a link to an unknown fact"}
            )
            return
        row = self._db.execute(
            "SELECT id, valid_to FROM edge WHERE owner = ? AND src = ? AND rel = ? AND dst = ?"
            " AND scope = ? AND valid_from = ?",
            [owner, edge.src, edge.rel, edge.dst, edge.scope, edge.valid_from],
        ).fetchone()
        if row is None:
            rev = self._merge_rev(report)
            self._add_edge(owner, edge.src, edge.rel, edge.dst, edge.scope, edge.valid_from, rev)
            if edge.valid_to is not None:
                self._db.execute(
                    "UPDATE edge SET valid_to = ? WHERE id = last_insert_rowid()", [edge.valid_to]
                )
        elif edge.valid_to is not None and (row[1] is None or edge.valid_to < row[1]):
            self._db.execute(
                "UPDATE edge SET valid_to = ?, rev = ? WHERE id = ?",
                [edge.valid_to, self._merge_rev(report), row[0]],
            )
        else:
            return
        report.edges += 1

    def _merge_rev(self, report: MergeReport) -> int:
        """The merge's one revision, taken at its first change."""
        if report.rev is None:
            report.rev = self._next_rev()
        return report.rev

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

    def _index_missing_of(self, owner: str) -> None:
        """Before a search: this person's current facts without a vector get theirs. A fact and
        its vector are written one after the other (the vector outside SQLite's transaction),
        so a crash between the two (a SIGKILL mid-undo) leaves facts /learnings lists but
        search cannot find; the search waits for them instead of the start-up repair. When
        nothing is missing, as after every clean write, it is one look at a partial index."""
        rows = self._db.execute(
            f"SELECT {_FACT_COLUMNS} FROM entity"
            " WHERE owner = ? AND vec_id IS NULL AND valid_to IS NULL",
            [owner],
        ).fetchall()
        for start in range(0, len(rows), INDEX_BATCH):
            self._index([_fact(row) for row in rows[start : start + INDEX_BATCH]])

    def reindex(self) -> int:
        """Rebuild the whole collection from SQLite (``tiny-hub memory reindex``)."""
        with self._index_lock:
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
        with self._index_lock:
            self._db.conn.executemany(
                "UPDATE entity SET vec_id = id WHERE id = ?", [(f.id,) for f in batch]
            )

    def _drop_vectors(self, vec_ids: Sequence[str]) -> None:
        try:
            self.vectors.delete(vec_ids)
        except Exception:
            log.warning("could not drop %d vector(s); SQL filters them anyway", len(vec_ids))

    # --- helpers ----------------------------------------------------------------------------

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

    def _next_rev(self) -> int:
        """The next revision of this store; call inside the writing transaction only, so
        revisions follow commit order (see migration 0011)."""
        row = self._db.execute("UPDATE memory_clock SET rev = rev + 1 RETURNING rev").fetchone()
        return int(row[0])

    def _insert(self, fact: Fact, rev: int) -> None:
        self._db.execute(
            f"INSERT INTO entity ({_FACT_COLUMNS}, rev) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)",
            [
                fact.id,
                fact.owner,
                fact.kind,
                fact.text,
                json.dumps({"source": fact.text}),
                fact.visibility,
                fact.valid_from,
                fact.valid_to,
                rev,
            ],
        )

    def _close(self, fact: Fact, stamp: str, rev: int) -> None:
        self._db.execute(
            "UPDATE entity SET valid_to = ?, vec_id = NULL, rev = ? WHERE id = ?",
            [stamp, rev, fact.id],
        )

    def _add_edge(
        self, owner: str, src: str, rel: str, dst: str, scope: str, stamp: str, rev: int
    ) -> None:
        self._db.execute(
            "INSERT INTO edge (owner, src, rel, dst, scope, valid_from, rev)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [owner, src, rel, dst, scope, stamp, rev],
        )

    def _forgetting(self, made: Recorded) -> Forgetting:
        return Forgetting.of(made, [self._existing(made.owner, i, "id") for i in made.fact_ids])

    def _open_links(self, owner: str, fact_ids: Sequence[str]) -> list[int]:
        """The current links (not the supersedes trail, which is history) touching these."""
        marks = ",".join("?" * len(fact_ids))
        rows = self._db.execute(
            f"SELECT id FROM edge WHERE owner = ? AND valid_to IS NULL AND rel != ?"
            f" AND (src IN ({marks}) OR dst IN ({marks})) ORDER BY id",
            [owner, SUPERSEDES, *fact_ids, *fact_ids],
        )
        return [int(row[0]) for row in rows]

    def _edges_by_id(self, owner: str, edge_ids: Sequence[int]) -> list[Edge]:
        if not edge_ids:
            return []
        rows = self._db.execute(
            f"SELECT src, rel, dst, scope, valid_from, valid_to, id FROM edge WHERE owner = ?"
            f" AND id IN ({','.join('?' * len(edge_ids))}) ORDER BY id",
            [owner, *edge_ids],
        )
        return [Edge(*row) for row in rows]

    def _is_current(self, owner: str, fact_id: str) -> bool:
        return bool(self.still_current(owner, [fact_id]))

    def _delete_facts(self, owner: str, fact_ids: Sequence[str]) -> list[str]:
        """Delete these closed facts, the older versions they alone superseded (a version
        another fact also superseded stays: it is that fact's history too), and every link
        touching them; returns the ids deleted."""
        gone = [i for i in fact_ids if not self._is_current(owner, i)]
        frontier = list(gone)
        while frontier:
            for older in self._trail_ends(owner, "src", frontier.pop()):
                later = self._trail_ends(owner, "dst", older)
                if (
                    older not in gone
                    and not self._is_current(owner, older)
                    and set(later) <= set(gone)
                ):
                    gone.append(older)
                    frontier.append(older)
        for start in range(0, len(gone), INDEX_BATCH):
            chunk = gone[start : start + INDEX_BATCH]
            marks = ",".join("?" * len(chunk))
            self._db.execute(
                f"DELETE FROM edge WHERE owner = ? AND (src IN ({marks}) OR dst IN ({marks}))",
                [owner, *chunk, *chunk],
            )
            self._db.execute(
                f"DELETE FROM entity WHERE owner = ? AND id IN ({marks})", [owner, *chunk]
            )
        return gone

    def _trail_ends(self, owner: str, side: str, fact_id: str) -> list[str]:
        """Along supersedes edges, oldest edge first: the facts ``fact_id`` replaced (``side``
        "src") or the facts that replaced it (``side`` "dst")."""
        other = "dst" if side == "src" else "src"
        rows = self._db.execute(
            f"SELECT {other} FROM edge WHERE owner = ? AND rel = ? AND {side} = ? ORDER BY id",
            [owner, SUPERSEDES, fact_id],
        )
        return [str(row[0]) for row in rows]

    def _owned_current(self, owner: str, ids: Sequence[str]) -> list[Fact]:
        """The SQL owner check: keeps the vector order, drops anything not this owner's."""
        if not ids:
            return []
        # By the primary key: the unary + keeps SQLite from walking the owner's whole index
        # instead (123 ms a recall at 100,000 facts).
        rows = self._db.execute(
            f"SELECT {_FACT_COLUMNS} FROM entity WHERE +owner = ? AND valid_to IS NULL"
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
        ends = self._trail_ends(owner, side, fact_id)
        return ends[0] if ends else None

    def _edges_touching(self, owner: str, nodes: set[str], rels: Sequence[str]) -> list[Edge]:
        marks = ",".join("?" * len(nodes))
        sql = (
            f"SELECT src, rel, dst, scope, valid_from, valid_to, id FROM edge WHERE owner = ?"
            f" AND valid_to IS NULL AND (src IN ({marks}) OR dst IN ({marks}))"
        )
        params: list[Any] = [owner, *nodes, *nodes]
        if rels:
            sql += f" AND rel IN ({','.join('?' * len(rels))})"
            params += list(rels)
        return [Edge(*row) for row in self._db.execute(sql, params)]


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
