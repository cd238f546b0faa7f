"""Memory at size: writes, recall by paraphrase, and search against the naive scan."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.bench_common import (
    Figure,
    hub_env,
    percentile,
)

# A fact in other words: the question a person would ask, and the fact that answers it.
PARAPHRASES: list[tuple[str, list[str]]] = [
    (
        "My cat is called Miso and is allergic to chicken.",
        ["what is my pet allergic to?", "which food is bad for my cat?"],
    ),
    (
        "I keep the spare house key under the blue flower pot.",
        ["where is the spare key?", "how do I get in if I lose my keys?"],
    ),
    (
        "My passport expires in August 2027.",
        ["when do I need to renew my passport?", "until when is my passport valid?"],
    ),
    (
        "I am allergic to penicillin.",
        ["which antibiotic must I avoid?", "do I have any drug allergies?"],
    ),
    (
        "My sister Mia lives in Lyon and teaches piano.",
        ["where does my sister live?", "what does Mia do for a living?"],
    ),
    (
        "The wifi password hint is the name of our first boat.",
        ["how do I remember the wifi password?", "what is the clue for the wireless password?"],
    ),
    (
        "I take my blood pressure pill every morning at 8.",
        ["when do I take my medication?", "what time is my daily pill?"],
    ),
    (
        "Our landlord is called Mr. Okafor and prefers text messages.",
        ["how should I contact the landlord?", "who owns our flat?"],
    ),
    (
        "My bike lock code is the year my grandmother was born.",
        ["what is the combination for my bicycle lock?", "how do I unlock my bike?"],
    ),
    (
        "I am learning Portuguese for a move to Porto next year.",
        ["which language am I studying?", "where am I moving to?"],
    ),
    (
        "The boiler needs its annual service every March.",
        ["when is the heating system due for maintenance?", "what happens every March?"],
    ),
    (
        "My daughter's school pickup is at 3:15 on weekdays.",
        ["when do I collect my child from school?", "what time does school finish?"],
    ),
    (
        "I prefer window seats on long flights.",
        ["what seat do I like on planes?", "aisle or window?"],
    ),
    (
        "My dentist appointment is on the 14th at 10am.",
        ["when am I seeing the dentist?", "do I have any medical appointments soon?"],
    ),
    (
        "The car insurance renews on October 1st with Aviva.",
        ["when is my car insurance due?", "which company insures my car?"],
    ),
    (
        "I don't eat pork for religious reasons.",
        ["are there foods I avoid?", "what meat do I not eat?"],
    ),
    (
        "My best friend Tom's birthday is on June 9.",
        ["when is Tom's birthday?", "whose birthday is in June?"],
    ),
    (
        "We water the tomatoes every second evening in summer.",
        ["how often do the tomato plants get water?", "garden watering schedule?"],
    ),
    (
        "I wear contact lenses with a -2.5 prescription.",
        ["what is my eye prescription?", "do I need glasses?"],
    ),
    (
        "The recycling bins go out on Tuesday nights.",
        ["which night is bin day?", "when do I put the recycling out?"],
    ),
]
NAMES = ["Alice", "Bruno", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ines", "Jon"]
RELATIONS = ["sister", "colleague", "neighbour", "cousin", "friend", "coach", "uncle"]
ACTIVITIES = ["hiking", "chess", "baking", "cycling", "painting", "swimming", "gardening"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def filler_fact(i: int) -> str:
    """Near-identical facts: the hard case for approximate search (one outlier among many)."""
    return (
        f"{NAMES[i % 10]}, the user's {RELATIONS[i % 7]}, likes {ACTIVITIES[i % 7]} "
        f"on {DAYS[(i // 7) % 7]}s (fact {i})."
    )


def bench_memory(runs: int) -> list[Figure]:
    from hub.config import load_settings
    from hub.memory.graph import now
    from hub.runtime.hub import Hub

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        hub = Hub.open(load_settings(home=home, environ=hub_env(home)))
        me = hub.owner.id
        others = [hub.identity.add_user(f"person{i}").id for i in range(4)]
        learn_later = 200
        rows: list[tuple[str, str, str]] = []
        for i in range(5000 - len(PARAPHRASES) - learn_later):
            rows.append((f"f{i}", me, filler_fact(i)))
        for n, other in enumerate(others):
            rows += [(f"o{n}_{i}", other, filler_fact(i + 7 * n)) for i in range(5000)]
        stamp = now()
        hub.db.conn.executemany(
            "INSERT INTO entity (id, owner, kind, label, attrs_json, visibility, valid_from)"
            " VALUES (?, ?, 'fact', ?, '{}', 'private', ?)",
            [(*r, stamp) for r in rows],
        )
        started = time.perf_counter()
        hub.memory.index_missing()
        index_s = time.perf_counter() - started
        targets = [hub.memory.learn(me, fact).id for fact, _ in PARAPHRASES]
        learns = []
        for i in range(learn_later):
            started = time.perf_counter()
            hub.memory.learn(me, f"Note {i}: the parcel for flat {i} arrived on a weekday.")
            learns.append((time.perf_counter() - started) * 1000)
        recalls, hits, questions = [], 0, 0
        for target, (_, asks) in zip(targets, PARAPHRASES, strict=True):
            for question in asks:
                started = time.perf_counter()
                found = hub.memory.recall(me, question, limit=5)
                recalls.append((time.perf_counter() - started) * 1000)
                hits += target in [f.id for f in found]
                questions += 1
        preloads = []
        for _, asks in PARAPHRASES:
            started = time.perf_counter()
            hub.memory.preload(me, asks[0])
            preloads.append((time.perf_counter() - started) * 1000)
        exact_hits, default_hits = _compare_search(hub, me, targets)
        hub.close()
    scale = "5000 facts for one person, 20000 for four others"
    return [
        Figure(
            "memory_index_25000",
            index_s,
            "s",
            f"embed + index {len(rows)} facts from SQLite (batches of 256)",
            [index_s],
        ),
        Figure(
            "memory_learn_p50",
            percentile(learns, 0.5),
            "ms",
            f"learn (embed + SQLite + Chroma), {scale}",
            learns,
        ),
        Figure("memory_learn_p99", percentile(learns, 0.99), "ms", "the same", learns),
        Figure(
            "memory_recall_p50",
            percentile(recalls, 0.5),
            "ms",
            f"recall top 5, embedding included, SQL owner check, {scale}",
            recalls,
        ),
        Figure(
            "memory_recall_p99",
            percentile(recalls, 0.99),
            "ms",
            "the same; the first recall of a person loads their vectors from Chroma once",
            recalls,
        ),
        Figure(
            "memory_preload_p50", percentile(preloads, 0.5), "ms", "30 newest + 5 matches", preloads
        ),
        Figure(
            "memory_recall_at_5",
            hits / questions,
            "ratio",
            f"{questions} paraphrased "
            f"questions for {len(PARAPHRASES)} facts among 5000; the hub's recall (exact search "
            "over the person's cached vectors, then the SQL owner check)",
            [hits / questions],
        ),
        Figure(
            "memory_recall_at_5_exact",
            exact_hits / questions,
            "ratio",
            "the same questions, reference: exact cosine search in numpy on the vectors read "
            "back from Chroma",
            [exact_hits / questions],
        ),
        Figure(
            "memory_recall_at_5_hnsw_default",
            default_hits / questions,
            "ratio",
            "the same questions, Chroma's default HNSW (ef 100, M 16), same vectors",
            [default_hits / questions],
        ),
    ]


def _compare_search(hub: Any, me: str, targets: list[str]) -> tuple[int, int]:
    """Recall@5 of exact search and of Chroma's default HNSW on the same vectors."""
    import numpy as np

    from hub.memory.embedder import shared_embedder

    collection = hub.memory.vectors.collection
    everything = collection.get(include=["embeddings", "metadatas"])
    mine = [i for i, m in enumerate(everything["metadatas"]) if m["userId"] == me]
    ids = [everything["ids"][i] for i in mine]
    matrix = np.asarray([everything["embeddings"][i] for i in mine], dtype=np.float32)
    default = hub.memory.vectors.client.create_collection(
        "bench_default_hnsw", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    for start in range(0, len(everything["ids"]), 4000):
        default.add(
            ids=everything["ids"][start : start + 4000],
            embeddings=everything["embeddings"][start : start + 4000],
            metadatas=everything["metadatas"][start : start + 4000],
        )
    exact = approx = 0
    for target, (_, asks) in zip(targets, PARAPHRASES, strict=True):
        for question in asks:
            vector = shared_embedder().embed([question])
            top = np.argsort(-(matrix @ vector[0]))[:5]
            exact += target in {ids[i] for i in top}
            found = default.query(query_embeddings=vector, n_results=5, where={"userId": me})
            approx += target in found["ids"][0]
    return exact, approx
