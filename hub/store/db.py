"""The one connection factory: every part of the hub opens the database through ``connect``.

WAL lets readers run while one writer commits, and with ``synchronous=NORMAL`` a hub killed
with SIGKILL at any moment loses at most its last uncommitted transaction, never the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

BUSY_TIMEOUT_MS = 5000


def connect(path: Path) -> sqlite_utils.Database:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return sqlite_utils.Database(conn)
