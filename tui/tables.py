"""What every screen with a table shares: a row's cells, a cell's text on one line, and the
row under the cursor; and how any text is shortened (``clip``: the CLI's export uses it too,
so this module does not import Textual)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from textual.widgets import DataTable

Cells = tuple[str | Text, ...]


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: when too long, it ends with "…" after its
    last whole word that fits ("The user's…", not "The user's bicycl…"); only a word longer
    than half the limit is cut inside."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace():  # the cut falls inside a word: end before that word
        space = max(cut.rfind(" "), cut.rfind("\n"))
        cut = cut[:space] if space >= limit // 2 else cut
    return cut.rstrip(" ,;:·\n") + "…"


def one_line(text: str, limit: int) -> str:
    """Collapse whitespace and shorten to ``limit`` characters: a cell is one line."""
    return clip(" ".join(text.split()), limit)


def cursor_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor; None when the table has no rows."""
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
