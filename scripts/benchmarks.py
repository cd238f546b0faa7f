"""Named benchmarks: each measures whole operations a person waits for, several times, and
reports the median with its spread. ``./scripts/bench [NAME ...]`` prints a table and writes
bench.json; ``--list`` names them. Figures are measured here, never asserted by tests.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from scripts.bench_cli import bench_cli
from scripts.bench_cold_start import bench_cold_start
from scripts.bench_common import (
    Figure,
)
from scripts.bench_devices import bench_devices
from scripts.bench_embedded import bench_embedded, bench_embedded_busy
from scripts.bench_flipper_offline import bench_flipper_offline
from scripts.bench_memory import bench_memory
from scripts.bench_openai import bench_openai
from scripts.bench_tui import bench_tui_stream
from scripts.bench_turn import (
    bench_cancel,
    bench_first_token_ratio,
    bench_sse_frames,
    bench_turn_overhead,
)

ROOT = Path(__file__).resolve().parent.parent


def rows_of(module: str) -> Callable[[int], list[Figure]]:
    """A benchmark kept in its own module (``bench(runs)`` → (name, value, unit, how) rows)."""

    def run(runs: int) -> list[Figure]:
        bench = importlib.import_module(module).bench
        return [Figure(name, value, unit, how, [value]) for name, value, unit, how in bench(runs)]

    return run


BENCHMARKS: dict[str, tuple[Callable[[int], list[Figure]], int]] = {
    "cold_start": (bench_cold_start, 5),
    "cli": (bench_cli, 10),
    "embedded": (bench_embedded, 7),
    "embedded_busy": (bench_embedded_busy, 5),
    "turn_overhead": (bench_turn_overhead, 200),
    "sse_frames": (bench_sse_frames, 5),
    "first_token_ratio": (bench_first_token_ratio, 10),
    "openai": (bench_openai, 10),
    "memory": (bench_memory, 1),
    "memory_scale": (rows_of("scripts.bench_memory_scale"), 1),
    "devices": (bench_devices, 30),
    "flipper": (rows_of("scripts.bench_flipper"), 10),
    "soak": (rows_of("scripts.bench_soak"), 10),
    "tui_stream": (bench_tui_stream, 3),
    "cancel": (bench_cancel, 5),
    "flipper_offline": (bench_flipper_offline, 5),
    "speech": (rows_of("scripts.bench_speech"), 5),
    "nicla_vision": (rows_of("scripts.bench_nicla_vision"), 20),
    "openmv_busy": (rows_of("scripts.bench_openmv_busy"), 500),
    "nicla_voice": (rows_of("scripts.bench_nicla_voice"), 10),
    "cloud": (rows_of("scripts.bench_cloud"), 3),
    "universe": (rows_of("scripts.bench_universe"), 3),
    "memory_sync": (rows_of("scripts.bench_memory_sync"), 3),
    "mcp": (rows_of("scripts.bench_mcp"), 30),
    "glasses": (rows_of("scripts.bench_glasses"), 10),
    "scheduler": (rows_of("scripts.bench_scheduler"), 50),
    "messages": (rows_of("scripts.bench_messages"), 200),
    "community": (rows_of("scripts.bench_community"), 3),
    "forge": (rows_of("scripts.bench_forge"), 40),
    "people": (rows_of("scripts.bench_people"), 10),
    "offline_agent": (rows_of("scripts.bench_agent_eval"), 1),
    "offline_agent_conversations": (rows_of("scripts.bench_agent_conversations"), 1),
    "page": (rows_of("scripts.bench_page"), 20),
    "test_suite": (rows_of("scripts.bench_test_suite"), 1),
    "openapi_fuzz": (rows_of("scripts.bench_openapi_fuzz"), 40),
}
# Run only when named: minutes long and not a figure of the hub (test_suite, openmv_busy), a
# quarter of an hour of the real model (offline_agent_conversations), or a fuzz that needs the
# dev extra's schemathesis (openapi_fuzz).
ONLY_WHEN_NAMED = frozenset(
    {"test_suite", "openmv_busy", "offline_agent_conversations", "openapi_fuzz"}
)


def print_table(figures: list[Figure]) -> None:
    rows = [("benchmark", "median", "unit", "range", "how measured")]
    rows += [(f.name, f"{f.value:.3g}", f.unit, f.spread, f.how) for f in figures]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="name the benchmarks and stop")
    parser.add_argument("--runs", type=int, help="runs per benchmark (default: each its own)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench.json")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(BENCHMARKS))
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; see --list")
    figures: list[Figure] = []
    for name in args.names or [n for n in BENCHMARKS if n not in ONLY_WHEN_NAMED]:
        run, default_runs = BENCHMARKS[name]
        print(f"running {name} ...", file=sys.stderr, flush=True)
        figures.extend(run(args.runs or default_runs))
    print_table(figures)
    args.out.write_text(
        json.dumps(
            {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "figures": [asdict(f) for f in figures],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
