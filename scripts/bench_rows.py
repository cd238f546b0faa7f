"""What the per-device benchmark modules share: printing their rows when run on their own
(``python -m scripts.bench_flipper [runs]``); ``scripts/bench`` runs them all into one table."""

from __future__ import annotations

from collections.abc import Callable

Row = tuple[str, float, str, str]


def run_alone(bench: Callable[[int], list[Row]], argv: list[str], default_runs: int) -> int:
    runs = int(argv[0]) if argv else default_runs
    rows = bench(runs)
    width = max(len(name) for name, *_ in rows)
    for name, value, unit, how in rows:
        print(f"{name:{width}} {value:10.3f} {unit:6} {how}")
    return 0
