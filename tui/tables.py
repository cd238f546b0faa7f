"""What every screen with a table shares: a row's cells, a cell's text on one line, and the
row under the cursor."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

Cells = tuple[str | Text, ...]


def one_line(text: str, limit: int) -> str:
    """Collapse whitespace and cut to ``limit`` characters: a cell is one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cursor_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor; None when the table has no rows."""
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
