"""A table that fits the screen by rule: which columns show, how wide each is and how tall each
row, so a cell's words wrap inside its column instead of being cut at the edge ("stora…").

A column is one of two kinds. A *word* column (a kind, a transport, a state) shows its longest
cell whole, on one line. A *text* column (a name, a list, a detail) takes what room is left: at
least ``minimum`` cells, and never less than its longest word, so no word is split; its cells
wrap between words, and a row is as tall as its tallest cell.

Columns are taken in order of importance while their least widths fit; what is left of the
width goes to the text columns, in the same order, up to what each needs on one line. A column
that does not fit is left out whole (the screen shows it another way, e.g. a row's detail).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

CELL_PADDING = 2
"""A DataTable cell's padding: one cell on each side."""
_MEASURE = Console(file=io.StringIO(), width=10_000, legacy_windows=False)


@dataclass(frozen=True)
class Column:
    key: str
    wraps: bool = False
    """A text column: its cells wrap between words."""
    minimum: int = 0
    """A text column's least width (its longest word may ask for more)."""


def as_text(cell: str | Text) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def longest_word(cell: str | Text) -> int:
    return max((Text(word).cell_len for word in as_text(cell).plain.split()), default=0)


def column_widths(
    columns: Sequence[Column], rows: Sequence[Sequence[str | Text]], width: int
) -> dict[str, int]:
    """Column key → width for the columns that show in ``width`` cells (columns given in
    order of importance; each row has a cell per column, in the same order)."""
    one_line = [
        max([len(column.key), *(as_text(row[i]).cell_len for row in rows)])
        for i, column in enumerate(columns)
    ]
    least = [
        max(len(column.key), min(one_line[i], column.minimum), *(longest_word(r[i]) for r in rows))
        if column.wraps
        else one_line[i]
        for i, column in enumerate(columns)
    ]
    shown: dict[str, int] = {}
    used = 0
    for i, column in enumerate(columns):
        if used + least[i] + CELL_PADDING <= width:
            shown[column.key] = least[i]
            used += least[i] + CELL_PADDING
    for i, column in enumerate(columns):
        if column.key in shown and column.wraps:
            grown = min(one_line[i], shown[column.key] + width - used)
            used += grown - shown[column.key]
            shown[column.key] = grown
    return shown


def row_height(cells: Mapping[str, str | Text], widths: Mapping[str, int]) -> int:
    """How many lines a row takes with each cell wrapped to its column's width."""
    return max(
        (len(as_text(cells[key]).wrap(_MEASURE, width)) for key, width in widths.items()),
        default=1,
    )
