"""Trust: PageRank over the public consulted edges, per tiny.

A tiny consulted by well-consulted tinys ranks up. The contract fixes the computation at exactly
10 power iterations with damping 0.85, where library PageRanks iterate to a tolerance (networkx
raises when 10 iterations do not converge), so the ten steps are written here; the tests hold
them to networkx's own Google matrix to 1e-9. The semantics are networkx's: edges weigh by
their weight over the source's total, a tiny that consults nobody spreads its rank evenly, and
the ranks sum to 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hub.store.db import Database
from hub.tinys.social import CONSULTED, PLATFORM, TINY_PREFIX

ITERATIONS = 10
DAMPING = 0.85
MAX_RANKED = 200  # the longest ranking anyone asks for (GET /community?limit=)

WeightedEdge = tuple[str, str, float]


@dataclass(frozen=True)
class Ranked:
    tiny: str
    score: float
    owner_id: str

    def as_json(self, owner_login: str) -> dict[str, Any]:
        builder = f"@{owner_login}" if owner_login else ""
        return {"tiny": self.tiny, "trust": round(self.score, 6), "builder": builder}


def pagerank(
    edges: Iterable[WeightedEdge], iterations: int = ITERATIONS, damping: float = DAMPING
) -> dict[str, float]:
    """Rank of every node of ``edges`` (src, dst, weight) after ``iterations`` steps."""
    index: dict[str, int] = {}
    links: list[tuple[int, int, float]] = []
    for src, dst, weight in edges:
        links.append((index.setdefault(src, len(index)), index.setdefault(dst, len(index)), weight))
    count = len(index)
    if not count:
        return {}
    out_weight = [0.0] * count
    for src_at, _, weight in links:
        out_weight[src_at] += weight
    # each edge's share of its source's rank, damped: the inner loop is then one multiply-add
    shares = [(s, d, damping * w / out_weight[s]) for s, d, w in links]
    dangling = [i for i in range(count) if out_weight[i] == 0.0]
    rank = [1.0 / count] * count
    for _ in range(iterations):
        spread = (damping * sum(rank[i] for i in dangling) + 1.0 - damping) / count
        step = [spread] * count
        for src_at, dst_at, share in shares:
            step[dst_at] += rank[src_at] * share
        rank = step
    return {node: rank[at] for node, at in index.items()}


def consulted_edges(db: Database) -> list[WeightedEdge]:
    """The current consulted edges between public tinys, as (src, dst, weight)."""
    rows = db.execute(
        "SELECT e.src, e.dst, e.weight FROM edge e"
        " JOIN tinys a ON a.name = substr(e.src, 6) AND a.visibility = 'public'"
        " JOIN tinys b ON b.name = substr(e.dst, 6) AND b.visibility = 'public'"
        " WHERE e.owner = ? AND e.rel = ? AND e.valid_to IS NULL AND e.visibility = 'public'",
        [PLATFORM, CONSULTED],
    )
    return [(str(src), str(dst), float(weight)) for src, dst, weight in rows]


def ranking(db: Database, limit: int = 50) -> list[Ranked]:
    """The public tinys in the consulted graph, most trusted first."""
    ranks = pagerank(consulted_edges(db))
    ordered = sorted(ranks.items(), key=lambda item: (-item[1], item[0]))[:limit]
    names = [node.removeprefix(TINY_PREFIX) for node, _ in ordered]
    owners = dict(
        db.execute(
            f"SELECT name, owner_id FROM tinys WHERE name IN ({','.join('?' * len(names))})",
            names,
        ).fetchall()
    )
    return [
        Ranked(name, score, owners[name]) for name, (_, score) in zip(names, ordered, strict=True)
    ]
