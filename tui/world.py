"""A small world map drawn with text: land from a coarse mask, markers on top.

The mask (``tui/data/land_mask.bin``) is NOAA's GLOBE land/sea mask as the ``global-land-mask``
package ships it, reduced to a quarter-degree grid by ``scripts/make_land_mask.py`` (its
docstring gives the file format). No map library draws into a Textual widget at this size
without tiles from the network, so the drawing is written here: an equirectangular projection,
in Unicode braille (2 × 4 dots a cell) or, where the terminal cannot show braille, one ``#``
a cell.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MASK_PATH = Path(__file__).resolve().parent / "data" / "land_mask.bin"
CELLS_PER_DEGREE = 4
MASK_COLUMNS, MASK_ROWS = 360 * CELLS_PER_DEGREE, 180 * CELLS_PER_DEGREE
BRAILLE_BASE = 0x2800
# The braille bit for the dot at (column, row) of a 2 × 4 cell.
BRAILLE_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
MARKER_LABELS = "123456789abcdefghijklmnopqrstuvwxyz"


class LandMask:
    """Whether a point is land, to a quarter of a degree."""

    def __init__(self, bits: bytes) -> None:
        if len(bits) * 8 < MASK_COLUMNS * MASK_ROWS:
            raise ValueError(f"a land mask has {MASK_COLUMNS * MASK_ROWS} bits")
        self.bits = bits

    @classmethod
    def load(cls, path: Path = MASK_PATH) -> LandMask:
        return cls(zlib.decompress(path.read_bytes()))

    def is_land(self, lat: float, lon: float) -> bool:
        row = min(MASK_ROWS - 1, max(0, int((90.0 - lat) * CELLS_PER_DEGREE)))
        column = int((lon + 180.0) * CELLS_PER_DEGREE) % MASK_COLUMNS
        index = row * MASK_COLUMNS + column
        return bool(self.bits[index >> 3] >> (7 - (index & 7)) & 1)


@functools.cache
def land_mask() -> LandMask:
    return LandMask.load()


@dataclass(frozen=True)
class Frame:
    """What part of the world a drawing shows: its centre and zoom (1 is the whole world)."""

    lat: float
    lon: float
    zoom: float

    def degrees_per_dot(self, dots_wide: int) -> float:
        return 360.0 / (max(dots_wide, 1) * 2 ** (max(self.zoom, 1.0) - 1))


@dataclass(frozen=True)
class Pin:
    """A marker as the drawing sees it: where, and the one character it is shown with."""

    lat: float
    lon: float
    label: str


@dataclass(frozen=True)
class Drawing:
    rows: list[str]
    pins: dict[tuple[int, int], str]
    """(column, row) → the label drawn there, for the pins that fell inside the frame."""


def draw(
    frame: Frame,
    columns: int,
    rows: int,
    pins: Sequence[Pin] = (),
    *,
    braille: bool = True,
    mask: LandMask | None = None,
) -> Drawing:
    """The world as ``rows`` strings of ``columns`` characters, pins written over the land."""
    mask = mask or land_mask()
    across, down = (2, 4) if braille else (1, 2)  # a terminal cell is about twice as tall
    dots_wide, dots_high = columns * across, rows * down
    step = frame.degrees_per_dot(dots_wide)
    land = _land_dots(mask, frame, step, dots_wide, dots_high)
    if braille:
        lines = [_braille_row(land[row * 4 : row * 4 + 4], columns) for row in range(rows)]
    else:  # one character a cell: the lower of its two dots
        lines = ["".join("#" if d else " " for d in land[row * 2 + 1]) for row in range(rows)]
    placed = _place(frame, step, pins, columns, rows, across, down)
    for (column, row), label in placed.items():
        lines[row] = lines[row][:column] + label + lines[row][column + 1 :]
    return Drawing(lines, placed)


def _land_dots(mask: LandMask, frame: Frame, step: float, wide: int, high: int) -> list[list[bool]]:
    """Land or not at the middle of every dot. The mask's column of each dot's longitude and
    row of each dot's latitude are found once, so a drawing is one bit test a dot."""
    mask_columns = [
        int(((frame.lon + (x + 0.5 - wide / 2) * step + 180.0) % 360.0) * CELLS_PER_DEGREE)
        % MASK_COLUMNS
        for x in range(wide)
    ]
    bits = mask.bits
    dots = []
    for y in range(high):
        lat = frame.lat - (y + 0.5 - high / 2) * step
        if not -90.0 <= lat <= 90.0:
            dots.append([False] * wide)
            continue
        base = min(MASK_ROWS - 1, int((90.0 - lat) * CELLS_PER_DEGREE)) * MASK_COLUMNS
        dots.append(
            [bool(bits[(base + c) >> 3] >> (7 - ((base + c) & 7)) & 1) for c in mask_columns]
        )
    return dots


def _braille_row(four: list[list[bool]], columns: int) -> str:
    chars = []
    for column in range(columns):
        code = 0
        for dx in range(2):
            x = column * 2 + dx
            for dy in range(4):
                if four[dy][x]:
                    code |= BRAILLE_DOTS[dx][dy]
        chars.append(chr(BRAILLE_BASE + code) if code else " ")
    return "".join(chars)


def _place(
    frame: Frame, step: float, pins: Sequence[Pin], columns: int, rows: int, across: int, down: int
) -> dict[tuple[int, int], str]:
    """Where each pin lands, in characters; a later pin on the same cell wins."""
    placed: dict[tuple[int, int], str] = {}
    for pin in pins:
        east = (pin.lon - frame.lon + 180.0) % 360.0 - 180.0  # the short way round
        x = columns * across / 2 + east / step
        y = rows * down / 2 + (frame.lat - pin.lat) / step
        column, row = math.floor(x / across), math.floor(y / down)
        if 0 <= column < columns and 0 <= row < rows:
            placed[(column, row)] = pin.label
    return placed


def label_for(index: int) -> str:
    """The character marker ``index`` (0-based) is drawn with; ``*`` past the 35th."""
    return MARKER_LABELS[index] if index < len(MARKER_LABELS) else "*"
