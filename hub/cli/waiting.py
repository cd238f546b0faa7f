"""A spinner on standard error while a synchronous command works (``⠹ checking bluetooth · 2 s``):
drawn by a thread ten times a second, written over in place, erased before the command prints
its next line to standard output.

Only on a terminal: piped or captured, standard error gets none of it, so scripts and tests
read exactly the lines the command prints. The asynchronous chat has its own line
(``hub.cli.progress_line``); this one serves commands that block, such as ``tiny-hub doctor``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from hub.cli.common import is_terminal
from hub.cli.progress_line import DIM, ERASE, PLAIN

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
EVERY_S = 0.1


class WaitingLine:
    """Say what is being waited for (``waiting_for``); ``clear`` before printing anything."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.enabled = is_terminal(err)
        self._what = ""
        self._since = time.monotonic()
        self._frame = 0
        self._shown = False
        self._lock = threading.Lock()

    def waiting_for(self, what: str) -> None:
        with self._lock:
            self._what, self._since = what, time.monotonic()
        self.draw()

    def draw(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if not self._what:
                return
            seconds = time.monotonic() - self._since
            after = f" · {seconds:.0f} s" if seconds >= 1 else ""
            frame = FRAMES[self._frame % len(FRAMES)]
            self._frame += 1
            self.err.write(f"{ERASE}{DIM}{frame} {self._what}{after}{PLAIN}")
            self.err.flush()
            self._shown = True

    def clear(self) -> None:
        with self._lock:
            self._what = ""
            if self._shown:
                self.err.write(ERASE)
                self.err.flush()
                self._shown = False


@contextlib.contextmanager
def waiting_line(err: TextIO) -> Iterator[WaitingLine]:
    """A spinner kept turning until the block ends, then erased."""
    line = WaitingLine(err)
    stop = threading.Event()

    def turn() -> None:
        while not stop.wait(EVERY_S):
            line.draw()

    ticker = threading.Thread(target=turn, name="waiting-line", daemon=True)
    if line.enabled:
        ticker.start()
    try:
        yield line
    finally:
        stop.set()
        if ticker.is_alive():
            ticker.join()
        line.clear()
