"""The pace of Python's cyclic garbage collector in a process that runs a hub or the TUI.

Python's default (a young pass every 700 new objects, a full pass whenever the objects that
survived grew by a quarter) suits short scripts. A hub keeps Chroma, the embedder and strands
alive, the TUI hundreds of thousands of widgets, styles and strips, and each full pass walks
all of them: in the TUI's tests the collector made ~70 full passes of ~0.2 s in under a minute.
Frozen once loaded, the libraries leave the collector's passes; collected every 10,000 new
objects, the rest is walked a few times instead of dozens, for a few megabytes more held
between passes. The garbage the imports leave (7,615 objects, 1.1 MB for ``serve``) is frozen
with them rather than collected first, which would cost a full pass (0.1-0.3 s) at every start.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

COLLECT_EVERY = (10_000, 20, 20)


def settle() -> None:
    """Freeze what is loaded now (modules, their classes and tables live as long as the
    process) and collect at the pace above from here on."""
    gc.freeze()
    gc.set_threshold(*COLLECT_EVERY)


@contextmanager
def settled() -> Iterator[None]:
    """Load a process's code with the collector paused (importing makes no garbage worth a
    pass), then :func:`settle`."""
    gc.disable()
    try:
        yield
    finally:
        settle()
        gc.enable()
