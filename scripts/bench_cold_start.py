"""How long a hub takes to answer after its process starts: on an empty data dir (migrations and
the owner's creation) and on an existing one."""

from __future__ import annotations

import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts.bench_common import (
    SCRIPT,
    Figure,
    hub_env,
)


def time_cold_start(home: Path) -> float:
    """Process start → first 200 from /api/health, on a port the process picks."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=hub_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        match = re.search(r":(\d+) \(model", process.stdout.readline())
        if not match:
            raise RuntimeError("the hub did not print its port")
        url = f"http://127.0.0.1:{match.group(1)}/api/health"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return time.perf_counter() - started
            except OSError:
                time.sleep(0.01)
    finally:
        process.terminate()
        process.wait(timeout=30)


def bench_cold_start(runs: int) -> list[Figure]:
    first, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            first.append(time_cold_start(Path(tmp) / "home"))
            warm.append(time_cold_start(Path(tmp) / "home"))
    how = "tiny-hub serve --port 0 spawned until GET /api/health answers 200 (no Ollama)"
    return [
        Figure(
            "cold_start_first_run",
            statistics.median(first),
            "s",
            how + "; empty data dir: migrations + owner creation",
            first,
        ),
        Figure("cold_start", statistics.median(warm), "s", how + "; existing data dir", warm),
    ]
