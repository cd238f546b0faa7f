"""Community figures: the trust ranking over a large consulted graph, and the feed.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``community_pagerank_10k_ms``: PageRank (10 iterations, damping 0.85) over 10,000 tinys and
  50,000 weighted consulted edges, in memory; each result is checked to rank every node and to
  sum to 1.
- ``community_ranking_10k_ms``: what ``GET /community``'s ranking does: read those edges between
  public tinys from SQLite, PageRank, the top 50 with their builders; checked for 50 rows in
  descending order.
- ``community_ranking_unchanged_p50``: the same read again when no consult and no tiny changed:
  the hub keeps the ranking and checks a version (the consults' newest revision, the tinys'
  newest change and count).
- ``community_feed_p50`` / ``_p99``: ``memory_graph`` mode ``feed`` for a person who follows 100
  people (each with 20 public and 20 private facts and a public tiny) among 1,000 people; each
  answer is checked to hold 20 items, all public and all by people followed.

``python -m scripts.bench_community [runs]`` prints them.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.machine import MACHINE_OFF
from hub.community.feed import feed
from hub.community.trust import pagerank, ranking
from hub.config import load_settings
from hub.runtime.hub import Hub
from hub.tinys.social import CONSULTED, FOLLOWS, PLATFORM, user_node
from scripts.bench_common import BenchmarkFailed, percentile
from scripts.bench_rows import Row, run_alone

NODES = 10_000
EDGES = 50_000
PEOPLE = 1_000
FOLLOWED = 100
FACTS_EACH = 20
FEED = 20
FEED_READS = 50
STAMP = "2026-12-01T00:00:00.000000Z"


def _settings(home: Path) -> Any:
    return load_settings(
        home=home,
        environ={},
        overrides={"host": "127.0.0.1", "port": 0, "drivers": MACHINE_OFF},
    )


def _consults(seed: int = 7) -> list[tuple[str, str, float]]:
    """50,000 distinct edges; popular tinys are consulted more (a few hubs, a long tail)."""
    rng = random.Random(seed)
    edges: dict[tuple[str, str], float] = {}
    while len(edges) < EDGES:
        src = len(edges) if len(edges) < NODES else rng.randrange(NODES)  # every tiny consults
        dst = min(int(rng.paretovariate(1.2)) - 1, NODES - 1)
        dst = (dst * 7919 + rng.randrange(3)) % NODES
        if src != dst:
            edges[(f"tiny:t{src}", f"tiny:t{dst}")] = float(rng.randint(1, 5))
    return [(src, dst, weight) for (src, dst), weight in edges.items()]


def _fill_graph(hub: Hub, edges: list[tuple[str, str, float]]) -> None:
    now = time.time()
    hub.db["tinys"].insert_all(
        (
            {"name": f"t{i}", "owner_id": hub.owner.id, "created_at": now, "updated_at": now}
            for i in range(NODES)
        ),
        batch_size=1000,
    )
    hub.db.conn.executemany(
        "INSERT INTO edge (owner, src, rel, dst, weight, visibility, valid_from, rev)"
        " VALUES (?, ?, ?, ?, ?, 'public', ?, 1)",
        [(PLATFORM, src, CONSULTED, dst, weight, STAMP) for src, dst, weight in edges],
    )


def _fill_people(hub: Hub) -> tuple[str, set[str]]:
    """1,000 people with facts and a tiny each; a reader who follows 100 of them."""
    people = [hub.identity.add_user(f"person {n}", login=f"p{n}") for n in range(PEOPLE)]
    reader = hub.identity.add_user("reader", login="reader")
    now = time.time()
    facts = []
    for n, person in enumerate(people):
        for k in range(FACTS_EACH * 2):
            visibility = "public" if k % 2 else "private"
            start = f"2026-11-{1 + k % 28:02d}T{n % 24:02d}:{k % 60:02d}:00.000000Z"
            facts.append((f"m_{n}_{k}", person.id, f"fact {k} of p{n}", "{}", visibility, start))
    hub.db.conn.executemany(
        "INSERT INTO entity (id, owner, kind, label, attrs_json, visibility, valid_from, rev)"
        " VALUES (?, ?, 'fact', ?, ?, ?, ?, 1)",
        facts,
    )
    hub.db["tinys"].insert_all(
        {"name": f"p{n}-tiny", "owner_id": p.id, "created_at": now, "updated_at": now}
        for n, p in enumerate(people)
    )
    followed = people[:: PEOPLE // FOLLOWED][:FOLLOWED]
    hub.db.conn.executemany(
        "INSERT INTO edge (owner, src, rel, dst, visibility, valid_from, rev)"
        " VALUES (?, ?, ?, ?, 'public', ?, 1)",
        [(PLATFORM, user_node(reader.id), FOLLOWS, user_node(p.id), STAMP) for p in followed],
    )
    return reader.id, {f"@{p.login}" for p in followed}


def _time_pagerank(edges: list[tuple[str, str, float]], runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        ranks = pagerank(edges)
        timings.append((time.perf_counter() - started) * 1000)
        if len(ranks) != NODES or abs(sum(ranks.values()) - 1.0) > 1e-9:
            raise BenchmarkFailed(f"PageRank ranked {len(ranks)} nodes, sum {sum(ranks.values())}")
    return timings


def _time_ranking(hub: Hub, runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        top = ranking(hub.db, 50)
        timings.append((time.perf_counter() - started) * 1000)
        scores = [r.score for r in top]
        if len(top) != 50 or scores != sorted(scores, reverse=True):
            raise BenchmarkFailed(f"the ranking has {len(top)} rows, or is out of order")
    return timings


def _time_cached_ranking(hub: Hub, runs: int) -> list[float]:
    """``GET /community``'s ranking when nothing changed since the last read: the version
    check, then the kept ranking."""
    hub.community.ranking(50)  # computes and keeps it
    timings = []
    for _ in range(runs * FEED_READS):
        started = time.perf_counter()
        top = hub.community.ranking(50)
        timings.append((time.perf_counter() - started) * 1000)
        if len(top) != 50:
            raise BenchmarkFailed(f"the kept ranking has {len(top)} rows")
    return timings


def _time_feed(hub: Hub, reader: str, followed: set[str], runs: int) -> list[float]:
    timings = []
    for _ in range(runs * FEED_READS):
        started = time.perf_counter()
        items = feed(hub.db, reader, FEED)
        timings.append((time.perf_counter() - started) * 1000)
        wrong = [i for i in items if i.by not in followed or "private" in i.text]
        if len(items) != FEED or wrong:
            raise BenchmarkFailed(f"the feed held {len(items)} items, {len(wrong)} not followed")
    return timings


def bench(runs: int) -> list[Row]:
    edges = _consults()
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub.open(_settings(Path(tmp) / "home"))
        try:
            _fill_graph(hub, edges)
            reader, followed = _fill_people(hub)
            _time_feed(hub, reader, followed, 1)  # warm SQLite's page cache
            pagerank_ms = _time_pagerank(edges, runs)
            ranking_ms = _time_ranking(hub, runs)
            cached_ms = _time_cached_ranking(hub, runs)
            feed_ms = _time_feed(hub, reader, followed, runs)
        finally:
            hub.close()
    graph = f"{NODES:,} tinys, {EDGES:,} weighted consulted edges"
    people = f"{FOLLOWED} followed among {PEOPLE:,} people, {FACTS_EACH * 2} facts each"
    return [
        (
            "community_pagerank_10k_ms",
            statistics.median(pagerank_ms),
            "ms",
            f"PageRank, 10 iterations, damping 0.85, in memory: {graph}; {runs} runs",
        ),
        (
            "community_ranking_10k_ms",
            statistics.median(ranking_ms),
            "ms",
            f"/community's ranking: SQL read of the public consults + PageRank + top 50: {graph}",
        ),
        (
            "community_ranking_unchanged_p50",
            statistics.median(cached_ms),
            "ms",
            "/community's ranking again with no consult or tiny changed: the version check"
            " (the consults' newest revision, the tinys' newest change) and the kept ranking;"
            f" {len(cached_ms)} reads",
        ),
        (
            "community_feed_p50",
            statistics.median(feed_ms),
            "ms",
            f"memory_graph feed, {FEED} items: {people}; {len(feed_ms)} reads",
        ),
        ("community_feed_p99", percentile(feed_ms, 0.99), "ms", "the same, 99th percentile"),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 3))
