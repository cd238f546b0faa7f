"""What every screen with a table shares: a row's cells, a cell's text on one line, and the
row under the cursor."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

Cells = tuple[str | Text, ...]


def one_line(text: str, limit: int) -> str:
    """Collapse whitespace and shorten to ``limit`` characters: a cell is one line. A text
    that is too long ends with "…" after its last whole word that fits ("The user's…", not
    "The user's bicycl…"); only a word longer than half the limit is cut inside."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if flat[limit - 1] != " ":  # the cut falls inside a word: end before that word
        space = cut.rfind(" ")
        cut = cut[:space] if space >= limit // 2 else cut
    return cut.rstrip(" ,;:·") + "…"


def cursor_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor; None when the table has no rows."""
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
