"""Trust: PageRank over the public consulted edges, per tiny.

A tiny consulted by well-consulted tinys ranks up. The contract fixes the computation at exactly
10 power iterations with damping 0.85, where library PageRanks iterate to a tolerance (networkx
raises when 10 iterations do not converge), so the ten steps are written here; the tests hold
them to networkx's own Google matrix to 1e-9. The semantics are networkx's: edges weigh by
their weight over the source's total, a tiny that consults nobody spreads its rank evenly, and
the ranks sum to 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from hub.tinys.social import CONSULTED, PLATFORM, TINY_PREFIX

ITERATIONS = 10
DAMPING = 0.85

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
    out_weight: dict[str, float] = defaultdict(float)
    incoming: dict[str, list[tuple[str, float]]] = defaultdict(list)
    nodes: dict[str, None] = {}
    for src, dst, weight in edges:
        nodes.setdefault(src)
        nodes.setdefault(dst)
        out_weight[src] += weight
        incoming[dst].append((src, weight))
    count = len(nodes)
    if not count:
        return {}
    rank = dict.fromkeys(nodes, 1.0 / count)
    dangling = [n for n in nodes if out_weight[n] == 0.0]
    for _ in range(iterations):
        spread = damping * sum(rank[n] for n in dangling) / count + (1.0 - damping) / count
        rank = {
            node: spread
            + damping * sum(rank[src] * w / out_weight[src] for src, w in incoming[node])
            for node in nodes
        }
    return rank


def consulted_edges(db: sqlite_utils.Database) -> list[WeightedEdge]:
    """The current consulted edges between public tinys, as (src, dst, weight)."""
    rows = db.execute(
        "SELECT e.src, e.dst, e.weight FROM edge e"
        " JOIN tinys a ON e.src = 'tiny:' || a.name AND a.visibility = 'public'"
        " JOIN tinys b ON e.dst = 'tiny:' || b.name AND b.visibility = 'public'"
        " WHERE e.owner = ? AND e.rel = ? AND e.valid_to IS NULL AND e.visibility = 'public'",
        [PLATFORM, CONSULTED],
    )
    return [(str(src), str(dst), float(weight)) for src, dst, weight in rows]


def ranking(db: sqlite_utils.Database, limit: int = 50) -> list[Ranked]:
    """The public tinys in the consulted graph, most trusted first."""
    ranks = pagerank(consulted_edges(db))
    owners = dict(db.execute("SELECT 'tiny:' || name, owner_id FROM tinys").fetchall())
    ordered = sorted(ranks.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [Ranked(node.removeprefix(TINY_PREFIX), score, owners[node]) for node, score in ordered]
