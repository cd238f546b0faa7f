"""Where fact vectors are kept: a SQLite file in the data dir, or a Chroma server a household
shares.

Search is the hub's own exact search over one person's vectors (``hub.memory.vectors``), so a
store only has to keep vectors and hand back one person's. Embedded Chroma did that by holding
every person's vectors in an in-memory HNSW index it never searched for memory: ~2.3 KB of RAM
per fact for the index alone, loaded for everyone as soon as anyone wrote, plus ~8 KB per write
of caches warming up, so a hub with 100,000 facts needed well over a gigabyte. Here a vector is
one row of ``vectors.db`` (1.5 KB of float32 on disk) and reaches memory only when its person's
search needs it; SQLite's page cache is bounded. A learn is one small insert, where Chroma's
upsert took 26-45 ms on a busy machine.

A data dir from before keeps its vectors: the first open copies the memory collection of its
embedded Chroma into ``vectors.db`` and drops it. The tinys' universe stays in Chroma.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import numpy as np
import numpy.typing as npt

from hub.store.db import Database, connect

log = logging.getLogger(__name__)

COLLECTION = "tiny_hub_memory"
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}
DIMENSIONS = 384
VECTORS_FILE = "vectors.db"
_COPY_PAGE = 2000

Matrix = npt.NDArray[np.float32]


class VectorStore(Protocol):
    def put(self, ids: Sequence[str], users: Sequence[str], vectors: Matrix) -> None: ...
    def person(self, user_id: str) -> tuple[list[str], Matrix]: ...
    def remove(self, ids: Sequence[str]) -> None: ...
    def remove_user(self, user_id: str) -> None: ...
    def count(self, user_id: str | None) -> int: ...
    def reset(self) -> None: ...
    def close(self) -> None: ...


class SqliteVectors:
    """``vectors.db``: one row per vector, ``(id, user_id, vec)``, the vector as float32 bytes."""

    def __init__(
        self,
        path: Path,
        chroma_path: Path | None = None,
        chroma: Callable[[], Any] | None = None,
    ) -> None:
        """``chroma``: the index's one Chroma client (opened on demand), to move the vectors an
        embedded Chroma at ``chroma_path`` kept before; never a client of its own, since two
        clients of one path opened at once race inside Chroma."""
        fresh = not path.exists()
        self._db: Database = connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vector (id TEXT PRIMARY KEY, user_id TEXT NOT NULL,"
            " vec BLOB NOT NULL) WITHOUT ROWID"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS vector_user ON vector (user_id)")
        if fresh and chroma_path is not None and chroma is not None:
            copy_from_chroma(chroma_path, chroma, self)

    def put(self, ids: Sequence[str], users: Sequence[str], vectors: Matrix) -> None:
        rows = [
            (vec_id, user, np.ascontiguousarray(vectors[i], dtype=np.float32).tobytes())
            for i, (vec_id, user) in enumerate(zip(ids, users, strict=True))
        ]
        with self._db.atomic():
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO vector (id, user_id, vec) VALUES (?, ?, ?)", rows
            )

    def person(self, user_id: str) -> tuple[list[str], Matrix]:
        """Row by row into one matrix: the blobs are never all held at once beside it."""
        with self._db.turn:  # one moment: no write of this hub lands between the two reads
            (size,) = self._db.execute(
                "SELECT COUNT(*) FROM vector WHERE user_id = ?", [user_id]
            ).fetchone()
            matrix = np.empty((size, DIMENSIONS), dtype=np.float32)
            ids: list[str] = []
            rows = self._db.execute("SELECT id, vec FROM vector WHERE user_id = ?", [user_id])
            for row, (vec_id, vec) in enumerate(rows):
                matrix[row] = np.frombuffer(vec, dtype=np.float32)
                ids.append(vec_id)
        return ids, matrix

    def remove(self, ids: Sequence[str]) -> None:
        with self._db.atomic():
            self._db.conn.executemany("DELETE FROM vector WHERE id = ?", [(i,) for i in ids])

    def remove_user(self, user_id: str) -> None:
        self._db.execute("DELETE FROM vector WHERE user_id = ?", [user_id])

    def count(self, user_id: str | None) -> int:
        if user_id is None:
            return int(self._db.execute("SELECT COUNT(*) FROM vector").fetchone()[0])
        row = self._db.execute("SELECT COUNT(*) FROM vector WHERE user_id = ?", [user_id])
        return int(row.fetchone()[0])

    def reset(self) -> None:
        self._db.execute("DELETE FROM vector")

    def close(self) -> None:
        self._db.conn.close()


class ChromaVectors:
    """The memory collection of a Chroma server; every vector carries ``{userId}``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.collection = _memory_collection(client)

    def put(self, ids: Sequence[str], users: Sequence[str], vectors: Matrix) -> None:
        self.collection.upsert(
            ids=list(ids), embeddings=vectors, metadatas=[{"userId": u} for u in users]
        )

    def person(self, user_id: str) -> tuple[list[str], Matrix]:
        found = self.collection.get(where={"userId": user_id}, include=["embeddings"])
        matrix = np.asarray(found["embeddings"], dtype=np.float32).reshape(-1, DIMENSIONS)
        return list(found["ids"]), matrix

    def remove(self, ids: Sequence[str]) -> None:
        self.collection.delete(ids=list(ids))

    def remove_user(self, user_id: str) -> None:
        self.collection.delete(where={"userId": user_id})

    def count(self, user_id: str | None) -> int:
        if user_id is None:
            return int(self.collection.count())
        return len(self.collection.get(where={"userId": user_id}, include=[])["ids"])

    def reset(self) -> None:
        self._client.delete_collection(COLLECTION)
        self.collection = _memory_collection(self._client)

    def close(self) -> None:
        return None  # the client is the index's, closed by it


def chroma_client(path: Path | None, url: str) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if url:
        parsed = urlparse(url)
        return chromadb.HttpClient(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or (443 if parsed.scheme == "https" else 8000),
            ssl=parsed.scheme == "https",
            settings=settings,
        )
    return chromadb.PersistentClient(path=str(path), settings=settings)


def _memory_collection(client: Any) -> Any:
    from hub.memory.embedder import MiniLMEmbeddingFunction

    return client.get_or_create_collection(
        COLLECTION, embedding_function=MiniLMEmbeddingFunction(), configuration={"hnsw": HNSW}
    )


_copy_lock = threading.Lock()


def copy_from_chroma(chroma_path: Path, chroma: Callable[[], Any], into: SqliteVectors) -> int:
    """Move the memory vectors an embedded Chroma kept (a data dir from before) into ``into``,
    then drop that collection; how many were moved. ``chroma`` gives the index's client."""
    if not (chroma_path / "chroma.sqlite3").exists():
        return 0
    with _copy_lock:
        client = chroma()
        if COLLECTION not in {c.name for c in client.list_collections()}:
            return 0
        collection = client.get_collection(COLLECTION)
        moved = 0
        while True:
            found = collection.get(
                include=["embeddings", "metadatas"], limit=_COPY_PAGE, offset=moved
            )
            if not found["ids"]:
                break
            users = [str((m or {}).get("userId", "")) for m in found["metadatas"]]
            vectors = np.asarray(found["embeddings"], dtype=np.float32)
            into.put(found["ids"], users, vectors.reshape(-1, DIMENSIONS))
            moved += len(found["ids"])
        client.delete_collection(COLLECTION)
        log.info("moved %d memory vectors from Chroma into %s", moved, VECTORS_FILE)
        return moved
