"""The TUI's Map screen drawing, in this process.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``map_draw_ms_80x20`` / ``_200x50``: ``tui.world.draw`` of the whole world in braille at that
  many columns × rows with 10 markers (what the Map screen does on every change of the board,
  a tour step included). Each drawing is checked: the right size, and all 10 markers placed.
- ``map_draw_ms_zoom8``: the same at 120 × 36, zoomed to 8 on Paris; checked to place the one
  marker in view.

``python -m scripts.bench_page [runs]`` prints them.
"""

from __future__ import annotations

import sys
import time

from scripts.bench_common import BenchmarkFailed, percentile
from scripts.bench_rows import run_alone
from tui.world import Frame, Pin, draw, label_for, land_mask

CITIES = [
    (48.86, 2.35),
    (35.68, 139.65),
    (-33.87, 151.21),
    (40.71, -74.01),
    (-23.55, -46.63),
    (30.04, 31.24),
    (55.76, 37.62),
    (19.08, 72.88),
    (-1.29, 36.82),
    (64.15, -21.94),
]
PINS = [Pin(lat, lon, label_for(i)) for i, (lat, lon) in enumerate(CITIES)]


def _timed(frame: Frame, columns: int, rows: int, pins: list[Pin], placed: int) -> float:
    started = time.perf_counter()
    drawing = draw(frame, columns, rows, pins)
    took = time.perf_counter() - started
    if len(drawing.rows) != rows or {len(r) for r in drawing.rows} != {columns}:
        raise BenchmarkFailed(f"a {columns}x{rows} drawing came out the wrong size")
    if len(drawing.pins) != placed:
        raise BenchmarkFailed(f"{len(drawing.pins)} markers placed, not {placed}")
    return took * 1000


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    land_mask()  # loaded once per process, as the TUI does
    world = Frame(0.0, 0.0, 1.0)
    paris = Frame(48.86, 2.35, 8.0)
    rows = []
    for columns, height in ((80, 20), (200, 50)):
        times = [_timed(world, columns, height, PINS, len(PINS)) for _ in range(runs)]
        how = f"whole world, braille, {len(PINS)} markers, each drawing checked; {runs} runs"
        rows.append((f"map_draw_ms_{columns}x{height}", percentile(times, 0.5), "ms", how))
    times = [_timed(paris, 120, 36, PINS, 1) for _ in range(runs)]
    how = f"120x36 at zoom 8 on Paris, one marker in view; {runs} runs"
    rows.append(("map_draw_ms_zoom8", percentile(times, 0.5), "ms", how))
    return rows


if __name__ == "__main__":
    sys.exit(run_alone(bench, sys.argv[1:], 20))
