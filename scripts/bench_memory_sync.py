"""Memory sync figures against a second hub on loopback playing the cloud (docs/cloud.md).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``memory_sync_pull_facts_per_s``: a cloud hub holds ``FACTS`` facts of its owner; a fresh hub
  with an empty memory runs one ``MemorySync.sync_once`` round against it. The round pulls every
  page over HTTP, checks it, merges it into SQLite and embeds each fact into Chroma (the
  embedding is most of the cost); facts per second of the whole round, median of ``runs``
  fresh hubs.
- ``memory_sync_idle_round_ms``: a round when both sides agree (one empty push check and one
  empty pull): what the hub spends per ``cloud.memory_interval_s`` when nothing changed.

``python -m scripts.bench_memory_sync [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.machine import MACHINE_OFF
from hub.api.limits import GUARD, Limits
from hub.api.server import start_server
from hub.cloud.memory_sync import MemoryCloud, MemorySync
from hub.config import load_settings
from hub.runtime.hub import Hub
from scripts.bench_rows import run_alone

FACTS = 1000
IDLE_ROUNDS = 20


def _hub(home: Path) -> Hub:
    base = {"host": "127.0.0.1", "port": 0, "drivers": MACHINE_OFF}
    return Hub.open(load_settings(home=home, environ={}, overrides=base))


async def _measure(root: Path, runs: int) -> tuple[list[float], list[float]]:
    cloud_hub = _hub(root / "cloud")
    cloud = await start_server(cloud_hub, "127.0.0.1", 0)
    cloud.runner.app[GUARD].limits = Limits(address_rate_per_s=1e9, address_burst=10**9)
    owner = cloud_hub.owner.id
    for number in range(FACTS):
        cloud_hub.memory.learn(owner, f"fact {number}: the person likes thing number {number}")
    token = cloud_hub.settings.owner_token_path.read_text().strip()
    rates, idle = [], []
    try:
        for run in range(runs):
            local = _hub(root / f"local-{run}")
            try:
                sync = MemorySync(local, MemoryCloud(cloud.url, token))
                started = time.perf_counter()
                done = await sync.sync_once()
                rates.append(done.pulled / (time.perf_counter() - started))
                started = time.perf_counter()
                for _ in range(IDLE_ROUNDS):
                    await sync.sync_once()
                idle.append((time.perf_counter() - started) / IDLE_ROUNDS * 1e3)
            finally:
                local.close()
    finally:
        await cloud.stop()
        cloud_hub.close()
    return rates, idle


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    with tempfile.TemporaryDirectory(prefix="bench-memory-sync-") as folder:
        rates, idle = asyncio.run(_measure(Path(folder), runs))
    return [
        (
            "memory_sync_pull_facts_per_s",
            statistics.median(rates),
            "facts/s",
            f"one MemorySync round pulling {FACTS} facts from a loopback cloud hub into an empty "
            f"hub: pages over HTTP, checked, merged into SQLite, embedded into Chroma; median of "
            f"{runs} fresh hubs",
        ),
        (
            "memory_sync_idle_round_ms",
            statistics.median(idle),
            "ms",
            f"a round when both sides agree (an empty push check and an empty pull over "
            f"loopback HTTP), mean of {IDLE_ROUNDS}; median of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 3))
