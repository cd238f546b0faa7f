"""The whole test suite, as a developer runs it.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``test_suite_wall_s``: ``./scripts/test`` (ruff, mypy, then pytest with its default workers)
  from start to exit, after install; each run is checked to exit 0 with no test failed.
- ``test_suite_pytest_s``: the same runs' pytest session time, as pytest reports it.
- ``test_suite_tests``: how many tests passed (skips are named by the suite, not counted).

It takes minutes; it runs only when named (``./scripts/bench test_suite``).
``python -m scripts.bench_test_suite [runs]`` prints them.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scripts.bench_common import BenchmarkFailed
from scripts.bench_rows import run_alone

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"(\d+) passed\b.* in ([\d.]+)s")


def one_run() -> tuple[float, float, int]:
    """Wall seconds, pytest's seconds and tests passed of one ``./scripts/test``."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(ROOT / "scripts" / "test"), "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    last = done.stdout.strip().rpartition("\n")[2]
    summary = SUMMARY.search(last)
    if done.returncode != 0 or summary is None or "failed" in last:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise BenchmarkFailed(f"./scripts/test exited {done.returncode}:\n{tail}")
    return wall, float(summary.group(2)), int(summary.group(1))


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    results = [one_run() for _ in range(runs)]

    def how(index: int) -> str:
        each = ", ".join(f"{r[index]:.1f}" for r in results)
        return f"./scripts/test after install, median of {runs} run(s) ({each} s), each exiting 0"

    return [
        ("test_suite_wall_s", statistics.median(r[0] for r in results), "s", how(0)),
        ("test_suite_pytest_s", statistics.median(r[1] for r in results), "s", how(1)),
        ("test_suite_tests", statistics.median(r[2] for r in results), "tests", "passed"),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 1))
