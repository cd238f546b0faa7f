"""The one connection factory: every part of the hub opens the database through ``connect``.

WAL lets readers run while one writer commits, and with ``synchronous=NORMAL`` a hub killed
with SIGKILL at any moment loses at most its last uncommitted transaction, never the file.

A connection is shared by the event loop and by agent tools, which strands runs in worker
threads. SQLite serialises single statements, but a transaction is a run of them on one
connection: another thread's statement would land inside it (and its COMMIT could end it).
So statements and ``atomic()`` transactions take turns on one re-entrant lock per connection.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

BUSY_TIMEOUT_MS = 5000


class _TurnTakingConnection(sqlite3.Connection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turn = threading.RLock()

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        with self.turn:
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        with self.turn:
            return super().executemany(sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        with self.turn:
            return super().executescript(script)


class Database(sqlite_utils.Database):
    """sqlite-utils' Database whose transactions hold the connection's turn to the end."""

    @contextlib.contextmanager
    def atomic(self) -> Generator[sqlite_utils.Database, None, None]:
        with self.conn.turn, super().atomic() as db:  # type: ignore[attr-defined]
            yield db


def connect(path: Path) -> Database:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)  # SQLite would make it under the umask (often 0644)
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, factory=_TurnTakingConnection
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return Database(conn)
