"""Fact vectors in Chroma: embedded Chroma in the data dir, or a Chroma server a household shares.

The hub embeds texts itself (one model, batched, padded to each batch's longest text) and hands
Chroma the vectors; the collection still carries our registered embedding function, so a
collection reopened anywhere rebuilds that one and never Chroma's downloading default. Every
vector carries ``{userId}``: recall filters on it here, and SQL re-checks the owner after.

HNSW settings: with Chroma's defaults one distinct fact among 4999 similar ones was missed by
half the queries that exact search ranked first; these larger settings found it (measured in
``scripts/bench`` as ``recall_at_5``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.config import Settings as ChromaSettings

from hub.memory.embedder import MiniLMEmbeddingFunction, shared_embedder

log = logging.getLogger(__name__)

COLLECTION = "tiny_hub_memory"
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}


@dataclass(frozen=True)
class VectorItem:
    vec_id: str
    text: str
    user_id: str


class VectorIndex:
    def __init__(self, path: Path | None = None, url: str = "") -> None:
        settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if url:
            parsed = urlparse(url)
            self._client: Any = chromadb.HttpClient(
                host=parsed.hostname or "127.0.0.1",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
            self.where = url
        else:
            assert path is not None
            self._client = chromadb.PersistentClient(path=str(path), settings=settings)
            self.where = str(path)
        self._collection = self._open()

    def _open(self) -> Any:
        return self._client.get_or_create_collection(
            COLLECTION,
            embedding_function=MiniLMEmbeddingFunction(),
            configuration={"hnsw": HNSW},
        )

    def add(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        vectors = shared_embedder().embed([item.text for item in items])
        self._collection.upsert(
            ids=[item.vec_id for item in items],
            embeddings=vectors,
            metadatas=[{"userId": item.user_id} for item in items],
        )

    def query(self, user_id: str, text: str, n: int) -> list[tuple[str, float]]:
        """Nearest vectors of one user: (vec_id, cosine distance), nearest first."""
        vector = shared_embedder().embed([text])
        found = self._collection.query(
            query_embeddings=vector, n_results=n, where={"userId": user_id}, include=["distances"]
        )
        return list(zip(found["ids"][0], found["distances"][0], strict=True))

    def delete(self, vec_ids: Sequence[str]) -> None:
        if vec_ids:
            self._collection.delete(ids=list(vec_ids))

    def delete_user(self, user_id: str) -> None:
        self._collection.delete(where={"userId": user_id})

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._collection.count())
        return len(self._collection.get(where={"userId": user_id}, include=[])["ids"])

    def rebuild(self) -> None:
        """Drop the collection and make it anew (SQLite then refills it)."""
        self._client.delete_collection(COLLECTION)
        self._collection = self._open()
