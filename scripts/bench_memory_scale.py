"""Memory at a lifetime's size: 100,000 facts for one person and 100,000 for four others.

The fillers are near-identical facts (the hard case for search): the vectors of 5,000 filler
sentences are embedded once (and kept in ``~/.cache/tiny-hub/bench`` for the next run), and each
filler fact gets its own vector, a mixture of two of them, so no two are alike. They are written
straight into SQLite and the vector store in batches, as a restore would; the 20 paraphrase
facts and 200 notes then go through ``learn`` and the 40 questions through ``recall``, the real
paths. Figures: the hub's RSS after loading and after the searches, learn and recall times
(every learn and recall checked to have succeeded), recall@5 on the paraphrase set.

``python -m scripts.bench_memory_scale [facts]`` prints the rows; ``./scripts/bench
memory_scale`` puts them in the table.
"""

from __future__ import annotations

import gc
import hashlib
import re
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from scripts.bench_common import hub_env, percentile
from scripts.bench_memory import PARAPHRASES, filler_fact
from scripts.bench_rows import Row

FACTS = 100_000
UNIQUE_FILLERS = 5000
OTHERS = 4
BATCH = 5000
NOTES = 200
RECALL_ROUNDS = 3
CACHE = Path.home() / ".cache" / "tiny-hub" / "bench"


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    if found is None:
        raise RuntimeError("no VmRSS in /proc/self/status")
    return int(found.group(1)) / 1024


def filler_vectors() -> np.ndarray:
    """The 5,000 filler sentences' vectors, embedded once and kept."""
    from hub.memory.vectors import embed

    texts = [filler_fact(i) for i in range(UNIQUE_FILLERS)]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    kept = CACHE / f"filler-vectors-{key}.npy"
    if kept.exists():
        return np.load(kept)
    vectors = np.concatenate([embed(texts[i : i + 500]) for i in range(0, len(texts), 500)])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(kept, vectors)
    return vectors


def mixtures(unique: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(unique), count), rng.integers(0, len(unique), count)
    weight = rng.uniform(0.2, 0.8, (count, 1)).astype(np.float32)
    mixed = weight * unique[a] + (1 - weight) * unique[b]
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)


def write_fillers(hub: object, owner: str, prefix: str, count: int, unique: np.ndarray) -> None:
    from hub.memory.graph import now

    store = hub.memory.vectors.store  # type: ignore[attr-defined]
    db = hub.db  # type: ignore[attr-defined]
    stamp = now()
    for start in range(0, count, BATCH):
        ids = [f"{prefix}{i}" for i in range(start, min(count, start + BATCH))]
        rows = [(i, owner, filler_fact(n + start), i, stamp) for n, i in enumerate(ids)]
        with db.atomic():
            db.conn.executemany(
                "INSERT INTO entity (id, owner, kind, label, attrs_json, vec_id, visibility,"
                " valid_from) VALUES (?, ?, 'fact', ?, '{}', ?, 'private', ?)",
                rows,
            )
        seed = zlib.crc32(prefix.encode()) + start
        store.put(ids, [owner] * len(ids), mixtures(unique, len(ids), seed))


def bench(runs: int = 1, facts: int = FACTS) -> list[Row]:
    """One run (``runs`` is taken for the table's interface: the load is the figure)."""
    from hub.config import load_settings
    from hub.memory.vectors import embed_query
    from hub.runtime.hub import Hub

    unique = filler_vectors()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**hub_env(home), "TINY_HUB_MEMORY_MAX_FACTS": str(2 * facts)}
        hub = Hub.open(load_settings(home=home, environ=env))
        me = hub.owner.id
        embed_query("warm the embedder")
        started_mb = rss_mb()
        began = time.perf_counter()
        write_fillers(hub, me, "f", facts, unique)
        for n in range(OTHERS):
            other = hub.identity.add_user(f"person{n}").id
            write_fillers(hub, other, f"o{n}_", facts // OTHERS, unique)
        load_s = time.perf_counter() - began
        targets = [hub.memory.learn(me, fact).id for fact, _ in PARAPHRASES]
        learns = []
        for i in range(NOTES):
            began = time.perf_counter()
            kept = hub.memory.learn(me, f"Note {i}: the parcel for flat {i} arrived on a weekday.")
            learns.append((time.perf_counter() - began) * 1000)
            assert kept.id
        began = time.perf_counter()
        hub.memory.recall(me, "which day does the parcel come?", limit=5)
        first_recall_ms = (time.perf_counter() - began) * 1000
        gc.collect()
        loaded_mb = rss_mb()
        recalls, hits, asked = [], 0, 0
        for round_ in range(RECALL_ROUNDS):
            for target, (_, asks) in zip(targets, PARAPHRASES, strict=True):
                for question in asks:
                    began = time.perf_counter()
                    found = hub.memory.recall(me, question, limit=5)
                    recalls.append((time.perf_counter() - began) * 1000)
                    assert len(found) == 5, found
                    if round_ == 0:
                        hits += target in [f.id for f in found]
                        asked += 1
        searched_mb = rss_mb()
        held = hub.memory.vectors.count()
        hub.close()
    scale = f"{facts:,} facts for one person, {facts:,} for {OTHERS} others"
    return [
        ("memory_scale_vectors", held, "count", f"vectors in the store ({scale})"),
        ("memory_scale_load_s", load_s, "s", "write the fillers: SQLite rows + vectors"),
        ("memory_scale_rss_start_mb", started_mb, "MB", "hub process RSS, opened and warm"),
        (
            "memory_scale_rss_loaded_mb",
            loaded_mb,
            "MB",
            f"hub RSS after loading ({scale}), learning {NOTES}, one recall",
        ),
        ("memory_scale_rss_searched_mb", searched_mb, "MB", "the same after the recalls"),
        (
            "memory_scale_learn_p50",
            percentile(learns, 0.5),
            "ms",
            f"learn (embed + SQLite + vector store), {scale}",
        ),
        ("memory_scale_learn_p99", percentile(learns, 0.99), "ms", "the same"),
        (
            "memory_scale_first_recall_ms",
            first_recall_ms,
            "ms",
            "the person's first recall: their vectors read from the store",
        ),
        (
            "memory_scale_recall_p50",
            percentile(recalls, 0.5),
            "ms",
            f"recall top 5 (embedding, exact search, SQL owner check), {scale}",
        ),
        ("memory_scale_recall_p99", percentile(recalls, 0.99), "ms", "the same"),
        (
            "memory_scale_recall_at_5",
            hits / asked,
            "ratio",
            f"{asked} paraphrased questions for {len(PARAPHRASES)} facts among {scale}",
        ),
    ]


if __name__ == "__main__":
    for row in bench(1, int(sys.argv[1]) if len(sys.argv) > 1 else FACTS):
        print(*row, sep="\t")
