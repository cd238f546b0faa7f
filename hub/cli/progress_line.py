"""``tiny-hub chat``'s word on a turn while a person waits: one line on standard error, written
over in place every second (``⟳ reading the prompt · 12 s``, ``⟳ calling learn · 15 s``), gone
when the answer's text begins and back when the model goes quiet again (a tool call). A tool
that finished leaves a line of its own.

Only on a terminal: piped or captured, standard error gets none of it, so scripts see what they
saw before. The phases come from the stream's events (``hub/client/progress.py``, shared with
the TUI).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, TextIO

from hub import contracts as c
from hub.cli.common import is_terminal
from hub.client.progress import TurnProgress

ERASE = "\r\x1b[2K"
DIM, PLAIN = "\x1b[2m", "\x1b[0m"
EVERY_S = 1.0


class ProgressLine:
    """Feed it every event of a turn (``seen``) and say when text is written (``text``)."""

    def __init__(self, err: TextIO, out: TextIO) -> None:
        self.err, self.out = err, out
        self.enabled = is_terminal(err)
        self.progress = TurnProgress()
        self.shown = False
        self.text_open = False
        """Answer text was written on the current line of ``out`` (no progress over it)."""

    def seen(self, event: Mapping[str, Any]) -> None:
        changed = self.progress.see(event)
        if not self.enabled:
            return
        if event.get("type") == c.EV_AFTER_TOOL and isinstance(event.get("toolResult"), dict):
            self.tool_done(event["toolResult"])
        if changed and not self.progress.writing:
            self.show()

    def text(self, fragment: str) -> None:
        """Answer text is about to be written to ``out``: the progress line makes way."""
        self.clear()
        self.text_open = bool(fragment) and not fragment.endswith("\n")

    def tool_done(self, result: Mapping[str, Any]) -> None:
        self.end_text_line()
        self.clear()
        outcome = "done" if result.get("status") == "success" else "failed"
        self.err.write(f"{DIM}⚙ {result.get('name')}: {outcome}{PLAIN}\n")
        self.err.flush()

    def show(self) -> None:
        if not self.enabled or self.progress.finished:
            return
        self.end_text_line()
        self.err.write(f"{ERASE}{DIM}⟳ {self.progress.line()}{PLAIN}")
        self.err.flush()
        self.shown = True

    def end_text_line(self) -> None:
        """Text stopped mid-line (the model went on to call a tool): the line ends here."""
        if self.text_open:
            self.out.write("\n")
            self.out.flush()
            self.text_open = False

    def clear(self) -> None:
        if self.shown:
            self.err.write(ERASE)
            self.err.flush()
            self.shown = False

    async def tick(self) -> None:
        """Every second while no text streams: the line again, with the seconds gone up."""
        while True:
            await asyncio.sleep(EVERY_S)
            if not self.progress.writing:
                self.show()


@contextlib.asynccontextmanager
async def progress_line(err: TextIO, out: TextIO) -> AsyncIterator[ProgressLine]:
    """A progress line shown from now (Enter) until the block ends, then erased."""
    line = ProgressLine(err, out)
    line.show()
    ticker = asyncio.ensure_future(line.tick()) if line.enabled else None
    try:
        yield line
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        line.clear()
