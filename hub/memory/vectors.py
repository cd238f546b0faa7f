"""Fact vectors and the search over them: exact cosine search over one person's vectors.

The hub embeds texts itself (one model, batched, padded to each batch's longest text) and keeps
the vectors in a store (``hub.memory.vector_store``): ``vectors.db`` in the data dir, or the
memory collection of a Chroma server a household shares. Every vector belongs to one person.

Search is exact: a person's vectors are read from the store once, kept in memory as one float32
matrix, and scored with one matrix product (100,000 facts: 154 MB and ~7 ms). Measured in
``scripts/bench`` on 40 paraphrased questions among 5000 near-identical facts (and 20000 of other
people): recall@5 was 0.975 exact, 0.55 with HNSW at ef 200 / M 32, and 0.40 with Chroma's
default HNSW under the user filter; without a filter, on its own collection, HNSW found 0.35 of
them among 20,000. The matrices kept are bounded in bytes (:data:`CACHED_BYTES`), the least
recently searched person's dropped first; a new vector is appended in place (the matrix grows
geometrically, so a learn does not copy a person's whole matrix). SQL re-checks the owner of
every hit afterwards.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hub.memory.vector_store import (
    COLLECTION,
    DIMENSIONS,
    HNSW,
    VECTORS_FILE,
    ChromaVectors,
    Matrix,
    SqliteVectors,
    VectorStore,
    chroma_client,
)

__all__ = ["COLLECTION", "HNSW", "Matrix", "VectorIndex", "VectorItem", "embed", "embed_query"]

log = logging.getLogger(__name__)

# The people's matrices kept between searches: 256 MB holds one person's 100,000 facts and
# more (a person's 5,000 current facts are 7.7 MB).
CACHED_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class VectorItem:
    vec_id: str
    text: str
    user_id: str


@dataclass
class _Person:
    """One person's vectors as rows of ``buffer[:size]``, ``ids[i]`` naming row ``i``."""

    ids: list[str]
    buffer: Matrix
    rows: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, ids: list[str], matrix: Matrix) -> _Person:
        return cls(list(ids), matrix, {vec_id: i for i, vec_id in enumerate(ids)})

    @property
    def matrix(self) -> Matrix:
        return self.buffer[: len(self.ids)]

    @property
    def nbytes(self) -> int:
        return int(self.buffer.nbytes)

    def put(self, vec_id: str, vector: Matrix) -> None:
        row = self.rows.get(vec_id)
        if row is None:
            row = len(self.ids)
            if row == len(self.buffer):  # full: grow by an eighth, so an append costs O(1) on
                # average and the room kept is small beside a large matrix. One buffer, not
                # blocks: one BLAS call per search (thirteen small ones took four times as long
                # on two busy cores, OpenBLAS waking its threads for each)
                grown = np.empty((row + max(64, row // 8), DIMENSIONS), dtype=np.float32)
                grown[:row] = self.buffer[:row]
                self.buffer = grown
            self.ids.append(vec_id)
            self.rows[vec_id] = row
        self.buffer[row] = vector

    def drop(self, gone: set[str]) -> None:
        keep = [i for i, vec_id in enumerate(self.ids) if vec_id not in gone]
        if len(keep) == len(self.ids):
            return
        self.ids = [self.ids[i] for i in keep]
        self.buffer = np.ascontiguousarray(self.buffer[keep])
        self.rows = {vec_id: i for i, vec_id in enumerate(self.ids)}


class VectorIndex:
    """Opened on first use: the store (and Chroma, for a server or the universe) costs time
    the hub's start, and every command that never touches memory, should not pay."""

    def __init__(self, path: Path | None = None, url: str = "") -> None:
        if not url and path is None:
            raise ValueError("give a Chroma path or a Chroma server URL")
        self._path, self._url = path, url
        self.where = url or str(Path(str(path)).parent / VECTORS_FILE)
        self._client: Any = None
        self._store: VectorStore | None = None
        # Re-entrant: the store, made under it, may need the client (a move from Chroma). One
        # lock for both makes Chroma open once, whichever comes first (the housekeeping's
        # universe, a first request's memory): two clients of one path opened at once race
        # inside Chroma ("'RustBindingsAPI' object has no attribute 'bindings'").
        self._open_lock = threading.RLock()
        # userId -> their vectors; least recently searched dropped first, within CACHED_BYTES.
        self._people: OrderedDict[str, _Person] = OrderedDict()
        self._people_lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The Chroma client: the server's, or the embedded one in the data dir (the tinys'
        universe lives there)."""
        with self._open_lock:
            if self._client is None:
                self._client = chroma_client(self._path, self._url)
            return self._client

    @property
    def store(self) -> VectorStore:
        with self._open_lock:
            if self._store is None:
                if self._url:
                    self._store = ChromaVectors(self.client)
                else:
                    assert self._path is not None
                    self._store = SqliteVectors(
                        self._path.parent / VECTORS_FILE, self._path, lambda: self.client
                    )
            return self._store

    def close(self) -> None:
        """Release the store and Chroma's files and threads. Chroma shares one system per path
        within a process and keeps it until its last client closes, so a process that opens
        hubs one after another (the tests, a restart in place) would otherwise keep every one
        open."""
        with self._open_lock:
            store, self._store = self._store, None
            client, self._client = self._client, None
        if store is not None:
            store.close()
        if client is not None:
            client.close()
        with self._people_lock:
            self._people.clear()

    def add(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        vectors = embed([item.text for item in items])
        self.store.put([item.vec_id for item in items], [item.user_id for item in items], vectors)
        with self._people_lock:
            for row, item in enumerate(items):
                if (person := self._people.get(item.user_id)) is not None:
                    person.put(item.vec_id, vectors[row])

    def query(self, user_id: str, text: str, n: int) -> list[tuple[str, float]]:
        """Nearest vectors of one user: (vec_id, cosine distance), nearest first."""
        query = embed_query(text)
        with self._people_lock:  # a learn alongside appends; it must not move rows under us
            person = self._person(user_id)
            if not person.ids:
                return []
            scores = person.matrix @ query
            ids = person.ids
        n = min(n, len(ids))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [(ids[i], float(1.0 - scores[i])) for i in top]

    def delete(self, vec_ids: Sequence[str]) -> None:
        if not vec_ids:
            return
        self.store.remove(vec_ids)
        with self._people_lock:
            for person in self._people.values():
                person.drop(set(vec_ids))

    def delete_user(self, user_id: str) -> None:
        self.store.remove_user(user_id)
        with self._people_lock:
            self._people.pop(user_id, None)

    def count(self, user_id: str | None = None) -> int:
        return self.store.count(user_id)

    def rebuild(self) -> None:
        """Forget every vector (SQLite then refills them)."""
        self.store.reset()
        with self._people_lock:
            self._people.clear()

    def _person(self, user_id: str) -> _Person:
        """The person's vectors, read from the store on their first search; under the lock, so
        a vector added meanwhile cannot be missed."""
        if user_id not in self._people:
            self._people[user_id] = _Person.of(*self.store.person(user_id))
            while len(self._people) > 1 and self._cached_bytes() > CACHED_BYTES:
                self._people.popitem(last=False)
        self._people.move_to_end(user_id)
        return self._people[user_id]

    def _cached_bytes(self) -> int:
        return sum(person.nbytes for person in self._people.values())


def embed(texts: Sequence[str]) -> Matrix:
    """The shared embedder's vectors; imported on first use (it brings chromadb along)."""
    from hub.memory.embedder import shared_embedder

    return shared_embedder().embed(texts)


def embed_query(text: str) -> Matrix:
    """One search text's vector, shared with a search for the same text running alongside."""
    from hub.memory.embedder import shared_embedder

    return shared_embedder().embed_query(text)
