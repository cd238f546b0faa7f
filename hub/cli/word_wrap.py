"""``tiny-hub chat``'s answer on a terminal: broken between words at the terminal's width as it
streams, so no word is split at the right edge. A word is written once the blank or the line
end after it has arrived (or when the model pauses, for a tool: ``flush``); the lines of a list
item after its first start under its text, as a Markdown viewer shows them.

Written here rather than with ``textwrap``, which wraps a whole paragraph at once: the answer
arrives a few characters at a time, and each word has to be shown as soon as it is whole.
Piped or captured output is not wrapped: a script gets the model's text as it was written.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import TextIO

from rich.cells import cell_len

LIST_MARKER = re.compile(r"[-*+•]|\d{1,3}[.)]")
"""The first word of a list item ("-", "1."): its next lines start under the text after it."""
TAB = "    "
DEFAULT_WIDTH = 80


class WordWrap:
    """Feed it the answer's text as it arrives; write what it gives back."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.column = 0
        """Cells written on the current line."""
        self.indent = 0
        """Where the next line of this paragraph starts when a word does not fit."""
        self.blanks = ""
        """Blanks after the last word written: written before the next word on the same line,
        dropped where the line breaks."""
        self.word = ""
        """The word being received, not yet written."""
        self.line_start = True
        self.glued = False
        """The last word was written before it ended (``flush``): its rest follows on."""

    def feed(self, fragment: str) -> str:
        """What to write for this piece of the answer (perhaps less: a word not yet whole)."""
        shown: list[str] = []
        for char in fragment.replace("\t", TAB):
            if char == "\n":
                shown += [self._word(), "\n"]
                self.column, self.indent, self.blanks = 0, 0, ""
                self.line_start, self.glued = True, False
            elif char.isspace():
                shown.append(self._word())
                self.blanks += " "
                self.glued = False
            elif self.glued:
                shown.append(char)
                self.column += cell_len(char)
            else:
                self.word += char
        return "".join(shown)

    def flush(self) -> str:
        """The word received so far, written now (the model paused); its rest follows on."""
        shown = self._word()
        self.glued = self.glued or bool(shown.strip())
        return shown

    def end(self) -> str:
        """The last word, at the end of the answer."""
        return self._word()

    def _word(self) -> str:
        word, self.word = self.word, ""
        if not word:
            return ""
        size = cell_len(word)
        if not self.line_start and self.column + len(self.blanks) + size > self.width:
            shown = "\n" + " " * self.indent + word
            self.column = self.indent + size
        else:
            shown = self.blanks + word
            if self.line_start:
                lead = len(self.blanks)
                hang = lead + size + 1 if LIST_MARKER.fullmatch(word) else lead
                self.indent = hang if hang <= self.width // 2 else 0
            self.column += len(self.blanks) + size
        self.blanks, self.line_start = "", False
        return shown


def terminal_width(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to (80 when it does not say)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = shutil.get_terminal_size().columns
    return columns if columns > 0 else DEFAULT_WIDTH
