"""Fact vectors in Chroma: embedded Chroma in the data dir, or a Chroma server a household shares.

The hub embeds texts itself (one model, batched, padded to each batch's longest text) and hands
Chroma the vectors; the collection still carries our registered embedding function, so a
collection reopened anywhere rebuilds that one and never Chroma's downloading default. Every
vector carries ``{userId}``.

Search is exact: a person's vectors (at most 5000 × 384 floats, 7.7 MB) are fetched from Chroma
with a ``userId`` filter once, kept in memory, and scored with one matrix product. Measured in
``scripts/bench`` on 40 paraphrased questions among 5000 near-identical facts (and 20000 of other
people): recall@5 was 0.975 exact, 0.55 with HNSW at ef 200 / M 32, and 0.40 with Chroma's
default HNSW under the user filter — and the exact search is also faster at this size. SQL
re-checks the owner of every hit afterwards.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

COLLECTION = "tiny_hub_memory"
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}
CACHED_PEOPLE = 16

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class VectorItem:
    vec_id: str
    text: str
    user_id: str


class VectorIndex:
    """Opened on first use: importing chromadb and opening its store costs about half a second,
    which the hub's start (and every command that never touches memory) should not pay."""

    def __init__(self, path: Path | None = None, url: str = "") -> None:
        if not url and path is None:
            raise ValueError("give a Chroma path or a Chroma server URL")
        self._path, self._url = path, url
        self.where = url or str(path)
        self._chroma: tuple[Any, Any] | None = None  # (client, collection)
        self._open_lock = threading.Lock()
        # userId -> (vec ids, their unit vectors as rows); least recently used dropped first.
        self._people: OrderedDict[str, tuple[list[str], Matrix]] = OrderedDict()
        self._people_lock = threading.Lock()

    @property
    def client(self) -> Any:
        return self._opened()[0]

    def close(self) -> None:
        """Release Chroma's files and threads. Chroma shares one system per path within a
        process and keeps it until its last client closes, so a process that opens hubs one
        after another (the tests, a restart in place) would otherwise keep every one open."""
        with self._open_lock:
            opened, self._chroma = self._chroma, None
        if opened is not None:
            opened[0].close()

    @property
    def collection(self) -> Any:
        return self._opened()[1]

    def _opened(self) -> tuple[Any, Any]:
        with self._open_lock:
            if self._chroma is None:
                client = self._connect()
                self._chroma = (client, self._open(client))
            return self._chroma

    def _connect(self) -> Any:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if self._url:
            parsed = urlparse(self._url)
            return chromadb.HttpClient(
                host=parsed.hostname or "127.0.0.1",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        return chromadb.PersistentClient(path=str(self._path), settings=settings)

    @staticmethod
    def _open(client: Any) -> Any:
        from hub.memory.embedder import MiniLMEmbeddingFunction

        return client.get_or_create_collection(
            COLLECTION,
            embedding_function=MiniLMEmbeddingFunction(),
            configuration={"hnsw": HNSW},
        )

    def add(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        vectors = embed([item.text for item in items])
        self.collection.upsert(
            ids=[item.vec_id for item in items],
            embeddings=vectors,
            metadatas=[{"userId": item.user_id} for item in items],
        )
        with self._people_lock:
            for row, item in enumerate(items):
                if item.user_id in self._people:
                    ids, matrix = self._without(self._people[item.user_id], {item.vec_id})
                    self._people[item.user_id] = (
                        [*ids, item.vec_id],
                        np.vstack([matrix, vectors[row : row + 1]]),
                    )

    def query(self, user_id: str, text: str, n: int) -> list[tuple[str, float]]:
        """Nearest vectors of one user: (vec_id, cosine distance), nearest first."""
        ids, matrix = self._person(user_id)
        if not ids:
            return []
        scores = matrix @ embed_query(text)
        n = min(n, len(ids))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [(ids[i], float(1.0 - scores[i])) for i in top]

    def delete(self, vec_ids: Sequence[str]) -> None:
        if not vec_ids:
            return
        self.collection.delete(ids=list(vec_ids))
        with self._people_lock:
            for user_id, person in self._people.items():
                self._people[user_id] = self._without(person, set(vec_ids))

    def delete_user(self, user_id: str) -> None:
        self.collection.delete(where={"userId": user_id})
        with self._people_lock:
            self._people.pop(user_id, None)

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self.collection.count())
        return len(self.collection.get(where={"userId": user_id}, include=[])["ids"])

    def rebuild(self) -> None:
        """Drop the collection and make it anew (SQLite then refills it)."""
        client = self.client
        client.delete_collection(COLLECTION)
        with self._open_lock:
            self._chroma = (client, self._open(client))
        with self._people_lock:
            self._people.clear()

    def _person(self, user_id: str) -> tuple[list[str], Matrix]:
        # Fetched under the lock, so a vector added meanwhile cannot be missed by the cache.
        with self._people_lock:
            if user_id not in self._people:
                found = self.collection.get(where={"userId": user_id}, include=["embeddings"])
                matrix = np.asarray(found["embeddings"], dtype=np.float32).reshape(-1, 384)
                self._people[user_id] = (list(found["ids"]), matrix)
                while len(self._people) > CACHED_PEOPLE:
                    self._people.popitem(last=False)
            self._people.move_to_end(user_id)
            return self._people[user_id]

    @staticmethod
    def _without(person: tuple[list[str], Matrix], drop: set[str]) -> tuple[list[str], Matrix]:
        ids, matrix = person
        keep = [i for i, vec_id in enumerate(ids) if vec_id not in drop]
        if len(keep) == len(ids):
            return person
        return [ids[i] for i in keep], matrix[keep]


def embed(texts: Sequence[str]) -> Matrix:
    """The shared embedder's vectors; imported on first use (it brings chromadb along)."""
    from hub.memory.embedder import shared_embedder

    return shared_embedder().embed(texts)


def embed_query(text: str) -> Matrix:
    """One search text's vector, shared with a search for the same text running alongside."""
    from hub.memory.embedder import shared_embedder

    return shared_embedder().embed_query(text)
