"""The universe (docs/protocol.md, universe): every public tiny embedded into Chroma, so tinys can
find each other.

SQLite stays the source of truth and Chroma only nominates: every search re-checks in SQL that
each hit is still public (and still exists), so a tiny made private a moment ago, or one whose
vector could not be dropped, never slips out. ``universe_index`` (migration 0012) records which
tinys have a vector and which version of them, so a start puts right what a crash left out of
step — without opening Chroma when nothing is.

Writes go through one worker thread. Creating or changing a tiny returns at once (embedding a
tiny costs milliseconds, but the first one loads the model and Chroma, about a second, which the
event loop must not wait for), and one thread keeps the changes of a tiny in order. The worker
embeds what SQL holds when it runs, not what the change carried, so public → private → public
in quick succession always ends right.

It uses the memory's Chroma client (embedded, or the household's server) and its embedder; on a
shared server each hub keeps its own collection, because another hub's tinys are not this one's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from hub.memory.vectors import HNSW, VectorIndex, embed, embed_query
from hub.store.db import Database
from hub.tinys.records import Tiny, TinyStore

log = logging.getLogger(__name__)

COLLECTION = "tiny_hub_universe"
TOP_K = 9
INDEX_BATCH = 256
# MiniLM reads the first 256 tokens (about 1000 characters): what says most comes first.
PROMPT_CHARS = 1000
DATA_CHARS = 300


@dataclass(frozen=True)
class Found:
    """A tiny the universe nominated and SQL confirmed public; distance is cosine (0 = same)."""

    tiny: Tiny
    distance: float


def universe_text(tiny: Tiny) -> str:
    """What a tiny is embedded as: name, tagline, skills, prompt, then a taste of its data."""
    skills = "; ".join(
        f"{s.name}: {s.description}" if s.description else s.name for s in tiny.skills
    )
    parts = [
        tiny.name,
        tiny.tagline,
        tiny.hook,
        skills,
        tiny.system_prompt[:PROMPT_CHARS],
        tiny.data[:DATA_CHARS],
    ]
    return "\n".join(p.strip() for p in parts if p.strip())


def tiny_url(name: str, base: str | None = "") -> str:
    """Where a tiny is read on this hub's API; absolute when the hub knows its LAN URL."""
    return (base or "").rstrip("/") + f"/api/tinys/{name}"


class Universe:
    def __init__(
        self,
        tinys: TinyStore,
        db: Database,
        vectors: VectorIndex,
        collection: str = COLLECTION,
    ) -> None:
        self._tinys, self._db, self._vectors, self._name = tinys, db, vectors, collection
        self._collection: Any = None
        self._open_lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="universe")
        self._caught_up = False  # index_missing has run since the hub opened

    @property
    def collection(self) -> Any:
        """Opened on first use, with the memory's Chroma client and registered embedder."""
        with self._open_lock:
            if self._collection is None:
                from hub.memory.embedder import MiniLMEmbeddingFunction

                self._collection = self._vectors.client.get_or_create_collection(
                    self._name,
                    embedding_function=MiniLMEmbeddingFunction(),
                    configuration={"hnsw": HNSW},
                )
            return self._collection

    # --- writes: through the worker, in order ------------------------------------------------

    def changed(self, name: str) -> None:
        """A tiny was created, changed or deleted: bring its vector in step, soon. Never raises
        (a failure is logged, and the next start's :meth:`index_missing` retries)."""
        self._submit(self._reconcile_quietly, [name])

    def index_missing(self) -> int:
        """Every tiny whose vector is missing, stale, or should not be there, put right; how
        many. Queued behind pending changes, so it never undoes a newer one."""
        return int(self._submit(self._index_missing).result())

    def settle(self) -> None:
        """Wait until every change queued so far is in Chroma (tests, benchmarks, shutdown)."""
        self._submit(lambda: None).result()

    def close(self) -> None:
        self._worker.shutdown(wait=True)

    def _submit(self, function: Any, *args: Any) -> Future[Any]:
        try:
            return self._worker.submit(function, *args)
        except RuntimeError:  # closed: the next start's index_missing catches up
            done: Future[Any] = Future()
            done.set_result(0)
            return done

    def _reconcile_quietly(self, names: Sequence[str]) -> None:
        try:
            self._reconcile(names)
        except Exception:
            log.warning(
                "universe index update failed for %s; retried at the next start",
                ", ".join(names),
                exc_info=True,
            )

    def _index_missing(self) -> int:
        # One pass over what is out of step now; a change meanwhile has its own job queued.
        names = self._out_of_step()
        for start in range(0, len(names), INDEX_BATCH):
            self._reconcile(names[start : start + INDEX_BATCH])
        self._caught_up = True
        return len(names)

    def _out_of_step(self) -> list[str]:
        rows = self._db.execute(
            "SELECT t.name FROM tinys t LEFT JOIN universe_index u ON u.name = t.name"
            " WHERE t.visibility = 'public' AND (u.name IS NULL OR u.indexed_at != t.updated_at)"
            " UNION SELECT u.name FROM universe_index u LEFT JOIN tinys t ON t.name = u.name"
            " WHERE t.name IS NULL OR t.visibility != 'public'"
        ).fetchall()
        return [str(row[0]) for row in rows]

    def _reconcile(self, names: Sequence[str]) -> None:
        """Embed the public ones as SQL holds them now; drop the rest. Chroma first, the
        marker after: a crash in between re-does the work, never skips it."""
        public = self._tinys.public_named(names)
        gone = [n for n in names if n not in public]
        if public:
            items = list(public.values())
            vectors = embed([universe_text(t) for t in items])
            self.collection.upsert(
                ids=[t.name for t in items],
                embeddings=vectors,
                metadatas=[{"name": t.name} for t in items],
            )
            self._db.conn.executemany(
                "INSERT INTO universe_index (name, indexed_at) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET indexed_at = excluded.indexed_at",
                [(t.name, t.updated_at) for t in items],
            )
        if gone:
            self.collection.delete(ids=gone)
            self._db.conn.executemany(
                "DELETE FROM universe_index WHERE name = ?", [(n,) for n in gone]
            )

    # --- reads ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        n: int = TOP_K,
        *,
        exclude: Collection[str] = (),
        max_distance: float | None = None,
    ) -> list[Found]:
        """The ``n`` public tinys nearest ``query``, nearest first, none of ``exclude``; only
        those within ``max_distance`` when given. Chroma is not touched while nothing but the
        excluded is indexed, so a hub with one tiny pays nothing per turn. A search before the
        start-up repairs ran brings the index in step first, unless only the excluded are out
        of step."""
        if not query.strip() or n <= 0:
            return []
        if not self._caught_up and set(self._out_of_step()) - set(exclude):
            self.index_missing()
        if self.indexed_count(exclude) == 0:
            return []
        want = n + len(exclude) + n  # room for the excluded and for vectors not yet dropped
        result = self.collection.query(
            query_embeddings=[embed_query(query)],
            n_results=want,
            include=["distances"],
        )
        hits = [
            (str(name), float(distance))
            for name, distance in zip(result["ids"][0], result["distances"][0], strict=True)
            if name not in exclude and (max_distance is None or distance <= max_distance)
        ]
        public = self._tinys.public_named([name for name, _ in hits])
        return [Found(public[name], d) for name, d in hits if name in public][:n]

    def indexed_count(self, exclude: Collection[str] = ()) -> int:
        marks = ",".join("?" * len(exclude))
        row = self._db.execute(
            f"SELECT COUNT(*) FROM universe_index WHERE name NOT IN ({marks})", list(exclude)
        ).fetchone()
        return int(row[0])

    def vector_names(self) -> list[str]:
        """Every name with a vector in the collection (what Chroma holds, not what SQL says)."""
        return sorted(str(i) for i in self.collection.get(include=[])["ids"])
