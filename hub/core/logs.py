"""Logging for the hub: stderr when headless, a file when the TUI owns the terminal.

The file rotates by size (:data:`MAX_LOG_BYTES`, :data:`KEPT_LOGS` old files), so a hub left
running for months, or a caller provoking errors on purpose, cannot fill the disk. Every line,
tracebacks included, has credentials redacted (``hub.core.redaction``) as it is written: a log is
pasted into bug reports.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
from pathlib import Path

from hub.core.redaction import redact_text

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
QUIET = ("httpx", "httpcore", "chromadb", "urllib3", "strands", "aiohttp.access")
MAX_LOG_BYTES = 5 * 1024 * 1024
KEPT_LOGS = 3


def setup_logging(level: str, file: Path | None = None) -> None:
    handler = _file_handler(file) if file else logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(FORMAT, datefmt="%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


class RedactingFormatter(logging.Formatter):
    """The usual line, with credentials replaced by ``[redacted]``."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def _file_handler(file: Path) -> logging.Handler:
    """A size-capped log, readable by its owner only (it names devices, tinys and errors)."""
    if file.exists():
        file.chmod(0o600)
    return _PrivateRotatingFile(
        file, maxBytes=MAX_LOG_BYTES, backupCount=KEPT_LOGS, encoding="utf-8"
    )


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """Each new log file is made 0600, whatever the umask (the rotation makes a new one)."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)
