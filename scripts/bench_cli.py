"""How fast the command line answers before it does any work.

- ``cli_version_s``: ``tiny-hub version`` as a process, start to exit (median of the runs);
- ``cli_help_s``: ``tiny-hub --help`` the same way.

Both must exit 0 with their text, or the benchmark fails: the parser and the dispatch table
import nothing heavy, so these measure Python's start plus the hub's own light modules.
"""

from __future__ import annotations

import statistics
import subprocess
import time

from scripts.bench_common import SCRIPT, BenchmarkFailed, Figure


def timed(args: list[str], expected: str) -> float:
    started = time.perf_counter()
    result = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or expected not in result.stdout:
        raise BenchmarkFailed(f"tiny-hub {' '.join(args)}: {result.returncode} {result.stderr}")
    return elapsed


def bench_cli(runs: int) -> list[Figure]:
    figures = []
    for name, args, expected in (
        ("cli_version_s", ["version"], "tiny-hub "),
        ("cli_help_s", ["--help"], "usage: tiny-hub"),
    ):
        timed(args, expected)  # the first run warms the page cache; not counted
        values = [timed(args, expected) for _ in range(runs)]
        how = f"`tiny-hub {' '.join(args)}` as a process, start to exit, {runs} runs"
        figures.append(Figure(name, statistics.median(values), "s", how, values))
    return figures
