"""Universe figures with 10,000 public tinys in embedded Chroma (docs/memory.md).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``universe_index_tinys_per_s``: 10,000 tinys written to SQLite as a crashed hub would leave
  them, then indexed by the start's reconcile (embedded in batches of 256, upserted to Chroma,
  marked in ``universe_index``).
- ``universe_retrieve_p50`` / ``_p99``: ``Universe.search`` for the top 9, as ``/retrieve`` and
  the ``retrieve`` tool run it: embed the query, Chroma's HNSW query, the SQL re-check.
- ``universe_turn_cost_p50`` / ``_p99``: what every chat turn adds: the search for the message
  (3 nearest within the relatedness distance), the related tinys' skills as tools, and the
  mount list with them (the mount list alone is ``universe_mount_list_p50``, for comparison).
- ``universe_retrieve_mount_p50``: the ``retrieve`` tool's whole work: the search, the 9 tinys'
  skills, registered on a running strands agent.

Each pass asks ``QUERIES`` questions; ``runs`` passes after one warm-up pass.
``python -m scripts.bench_universe [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from strands import Agent
from strands.models.ollama import OllamaModel

from harness.machine import MACHINE_OFF
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.agent.tools.universe import lent_tools, mount_on, related_for_turn
from hub.config import load_settings
from hub.memory.embedder import shared_embedder
from hub.runtime.hub import Hub
from hub.tinys.universe import TOP_K
from scripts.bench_rows import Row, run_alone

TINYS = 10_000
ROLES = [
    "chef", "gardener", "tutor", "coach", "nurse", "lawyer", "mechanic", "librarian",
    "astronomer", "plumber", "accountant", "translator", "poet", "historian", "guide",
    "carpenter", "therapist", "pharmacist", "baker", "sommelier", "birdwatcher", "tailor",
    "electrician", "florist", "geologist", "veterinarian", "barista", "cartographer",
    "climber", "sailor", "beekeeper", "potter", "drummer", "chess player", "knitter",
    "photographer", "cyclist", "archivist", "brewer", "locksmith",
]  # fmt: skip
TOPICS = [
    "weeknight dinners", "tomato plants", "algebra homework", "marathon training",
    "sleep habits", "tenancy disputes", "bicycle brakes", "old maps", "the night sky",
    "leaking taps", "tax returns", "Japanese phrases", "sonnets", "the Roman empire",
    "city walks", "oak furniture", "stress at work", "drug interactions", "sourdough",
    "red wine", "garden birds", "wedding suits", "home wiring", "spring bouquets",
    "volcanic rocks", "sick cats", "espresso", "hiking routes", "bouldering", "knots",
    "honey harvests", "glazes", "jazz rhythms", "chess openings", "winter scarves",
    "portrait lighting", "commuting by bike", "family letters", "home brewing", "door locks",
    "mushroom foraging", "budget travel", "job interviews", "houseplants", "watercolours",
    "board games", "first aid", "vintage radios", "beach safety", "kite flying",
]  # fmt: skip
STYLES = ["patiently", "briefly", "with jokes", "step by step", "like a grandparent"]
QUERIES = [
    "what can I cook tonight with lentils?", "my tomato leaves are turning yellow",
    "help me solve a quadratic equation", "how do I train for my first marathon",
    "I keep waking up at 3am", "my landlord will not return my deposit",
    "my bike squeaks when I brake", "which planet is bright in the west tonight",
    "the kitchen tap is dripping", "can I deduct my home office",
    "how do I say thank you in Japanese",
    "write me a short sonnet about rain", "why did Rome fall", "a walk through the old town",
    "how to fix a wobbly oak table", "I am overwhelmed at work", "can I take ibuprofen with this",
    "my sourdough does not rise", "a red wine for lasagne", "which bird sings at dawn",
    "what suit for a summer wedding", "is it safe to change a light switch myself",
    "flowers for a spring bouquet", "how are volcanic rocks formed", "my cat stopped eating",
    "how do I pull a better espresso", "a day hike near the lakes", "tips for my first boulder",
    "how to tie a bowline", "when to harvest honey", "why did my glaze crawl",
    "teach me a swing rhythm", "a good chess opening for beginners", "knit a simple scarf",
    "lighting for a portrait at home", "cycling to work in the rain", "sorting family letters",
    "my first home brew", "a stuck door lock", "which mushrooms are safe to pick",
]  # fmt: skip


def _tiny(index: int) -> dict[str, Any]:
    role = ROLES[index % len(ROLES)]
    topic = TOPICS[(index // len(ROLES)) % len(TOPICS)]
    style = STYLES[(index // (len(ROLES) * len(TOPICS))) % len(STYLES)]
    slug = f"{role.replace(' ', '-')}-{index}"
    skills = [
        {"name": f"{slug}-basics", "description": f"The basics of {topic}", "instructions": "."},
        {"name": f"{slug}-faq", "description": f"Questions about {topic}", "instructions": "."},
    ]
    return {
        "name": slug,
        "tagline": f"a {role} for {topic}",
        "system_prompt": f"You are a {role} who helps with {topic}. You answer {style}, "
        f"with concrete advice and examples about {topic}.",
        "data": f"Notes on {topic}: common mistakes, good first steps, where to learn more.",
        "skills_json": json.dumps(skills),
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _settings(home: Path) -> Any:
    return load_settings(
        home=home,
        environ={},
        overrides={"host": "127.0.0.1", "port": 0, "drivers": MACHINE_OFF},
    )


def _fill(hub: Hub) -> float:
    """10,000 public tinys in SQLite, then the start's reconcile; its seconds."""
    now = time.time()
    rows = [
        {**_tiny(i), "owner_id": hub.owner.id, "created_at": now, "updated_at": now}
        for i in range(TINYS)
    ]
    hub.db["tinys"].insert_all(rows, batch_size=1000)
    started = time.perf_counter()
    indexed = hub.universe.index_missing()
    elapsed = time.perf_counter() - started
    assert indexed >= TINYS, indexed
    return elapsed


async def _measure(hub: Hub, runs: int) -> dict[str, list[float]]:
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    agent_tools = mount_tools(ToolContext(hub, hub.owner, tiny)).tools
    model = OllamaModel(host="http://127.0.0.1:9", model_id="never-called")  # no model call
    timings: dict[str, list[float]] = {"search": [], "turn": [], "mount": [], "retrieve": []}
    related_seen = 0
    for run in range(runs + 1):  # the first pass warms Chroma's and the model's caches
        for query in QUERIES:
            started = time.perf_counter()
            found = await asyncio.to_thread(hub.universe.search, query, TOP_K, exclude={"tiny"})
            search_ms = (time.perf_counter() - started) * 1000

            started = time.perf_counter()
            related = await related_for_turn(hub, tiny, query, with_tools=True)
            context = ToolContext(hub, hub.owner, tiny, related=related.tools)
            mounted = mount_tools(context)
            turn_ms = (time.perf_counter() - started) * 1000

            started = time.perf_counter()
            mount_tools(ToolContext(hub, hub.owner, tiny))
            mount_ms = (time.perf_counter() - started) * 1000

            agent = Agent(model=model, tools=list(agent_tools), callback_handler=None)
            started = time.perf_counter()
            hits = await asyncio.to_thread(hub.universe.search, query, TOP_K, exclude={"tiny"})
            mount_on(agent, await lent_tools(hub, [hit.tiny for hit in hits]), frozenset())
            retrieve_ms = (time.perf_counter() - started) * 1000

            if run:
                timings["search"].append(search_ms)
                timings["turn"].append(turn_ms)
                timings["mount"].append(mount_ms)
                timings["retrieve"].append(retrieve_ms)
                related_seen += len(related.tinys)
            assert len(found) == TOP_K and len(mounted.tools) >= len(agent_tools)
    timings["related_per_turn"] = [related_seen / (runs * len(QUERIES))]
    timings["recall"] = [_hnsw_recall(hub)]
    return timings


def _hnsw_recall(hub: Hub) -> float:
    """How many of the exact 9 nearest (every vector scored) Chroma's HNSW query returns."""
    stored = hub.universe.collection.get(include=["embeddings"])
    ids, matrix = stored["ids"], np.asarray(stored["embeddings"], dtype=np.float32)
    questions = shared_embedder().embed(QUERIES)
    found = hub.universe.collection.query(query_embeddings=questions, n_results=TOP_K)["ids"]
    hits = 0
    for row, question in enumerate(questions):
        exact = {ids[i] for i in np.argsort(-(matrix @ question))[:TOP_K]}
        hits += len(exact & set(found[row]))
    return hits / (TOP_K * len(QUERIES))


def bench(runs: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub.open(_settings(Path(tmp) / "home"))
        try:
            index_s = _fill(hub)
            timings = asyncio.run(_measure(hub, runs))
        finally:
            hub.close()
    scale = f"{TINYS} public tinys, embedded Chroma (HNSW, cosine), {len(QUERIES)} questions"
    per_turn = timings["related_per_turn"][0]
    return [
        (
            "universe_index_tinys_per_s",
            TINYS / index_s,
            "tinys/s",
            f"{TINYS} tinys from SQLite into the universe: embed (batches of 256) + Chroma upsert"
            f" + SQL marker ({index_s:.1f} s in all)",
        ),
        (
            "universe_retrieve_p50",
            statistics.median(timings["search"]),
            "ms",
            f"top {TOP_K}: embed the query, Chroma query, SQL re-check; {scale} × {runs}",
        ),
        (
            "universe_retrieve_p99",
            _percentile(timings["search"], 0.99),
            "ms",
            "the same, 99th percentile",
        ),
        (
            "universe_hnsw_recall_at_9",
            timings["recall"][0],
            "",
            "share of the exact 9 nearest (all vectors scored) that Chroma's HNSW query returns"
            " (ef_search 200, M 32), so no exact search as memory's is needed here",
        ),
        (
            "universe_turn_cost_p50",
            statistics.median(timings["turn"]),
            "ms",
            f"per chat turn: search (3 within the relatedness distance; {per_turn:.1f} found on"
            " average), their skills as tools, the mount list with them",
        ),
        (
            "universe_turn_cost_p99",
            _percentile(timings["turn"], 0.99),
            "ms",
            "the same, 99th percentile",
        ),
        (
            "universe_mount_list_p50",
            statistics.median(timings["mount"]),
            "ms",
            "the mount list alone (built-ins, no related tinys), for comparison",
        ),
        (
            "universe_retrieve_mount_p50",
            statistics.median(timings["retrieve"]),
            "ms",
            f"the retrieve tool's work: search top {TOP_K}, their skills registered on a running"
            " strands agent",
        ),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 3))
