"""Logging for the hub: stderr when headless, a file when the TUI owns the terminal."""

from __future__ import annotations

import logging
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
QUIET = ("httpx", "httpcore", "chromadb", "urllib3", "strands", "aiohttp.access")


def setup_logging(level: str, file: Path | None = None) -> None:
    handler: logging.Handler = logging.FileHandler(file) if file else logging.StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT, datefmt="%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
