"""The one connection factory: every part of the hub opens the database through ``connect``.

WAL lets readers run while one writer commits, and with ``synchronous=NORMAL`` a hub killed
with SIGKILL at any moment loses at most its last uncommitted transaction, never the file.

The hub holds ONE connection to its database, and every store writes through it. Two
connections of the same process would wait on each other inside SQLite, and there the busy
timeout does not always help: a connection with a read still open (a cursor another thread
has not finished) that asks to write while the other connection writes is refused at once,
with "database is locked", whatever the timeout. With one connection nothing in the hub can
hold the write lock against itself; another process (``tiny-hub pair``, a CLI command) still
can, and that wait is bounded by the busy timeout, then answered as ``StoreBusy``.

The connection is shared by the event loop and by agent tools and memory calls, which run in
worker threads. SQLite serialises single statements, but a transaction is a run of them on one
connection: another thread's statement would land inside it (and its COMMIT could end it). So
statements and ``atomic()`` transactions take turns on one re-entrant lock per connection. A
transaction starts with ``BEGIN IMMEDIATE``: it takes the write lock first, so it never has to
upgrade a read snapshot that another process's write has made stale (an upgrade SQLite refuses
at once), and it must not call the network or a model while it holds the turn.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any, cast

import sqlite_utils

from hub.core.errors import Refused

BUSY_TIMEOUT_MS = 5000
RETRY_AFTER_S = 1
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_STILL_RUNNING = "statements in progress"  # SQLite's own state error, not another writer


class StoreBusy(Refused, sqlite3.OperationalError):
    """Another process held the database past the busy timeout; nothing was written.

    Still an ``OperationalError``, so code that handles SQLite's errors keeps handling it.
    """

    status = 503
    retry_after_s = RETRY_AFTER_S


@contextlib.contextmanager
def _refused_when_busy() -> Generator[None, None, None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode not in _BUSY_CODES or _STILL_RUNNING in str(exc):
            raise
        raise StoreBusy(
            f"the database is busy (another program is writing to it); nothing was written, "
            f"try again in {RETRY_AFTER_S} s"
        ) from exc


class _TurnTakingConnection(sqlite3.Connection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turn = threading.RLock()

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        with self.turn, _refused_when_busy():
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        with self.turn, _refused_when_busy():
            return super().executemany(sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        with self.turn, _refused_when_busy():
            return super().executescript(script)

    def close(self) -> None:
        """Closed only between statements: a statement another thread is running when the
        hub stops finishes first (closing under it crashes the process), and one after the
        close raises ProgrammingError."""
        with self.turn:
            super().close()


class Database(sqlite_utils.Database):
    """sqlite-utils' Database whose transactions hold the connection's turn to the end."""

    @property
    def turn(self) -> threading.RLock:
        """Held, statements of other threads wait: for a read that must see one moment."""
        return cast(_TurnTakingConnection, self.conn).turn

    @contextlib.contextmanager
    def atomic(self) -> Generator[sqlite_utils.Database, None, None]:
        with self.turn:
            if self.conn.in_transaction:  # nested in this thread's transaction: a savepoint
                with super().atomic() as db:  # type: ignore[attr-defined]
                    yield db
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # nothing half-written, whatever failed
                    self.conn.execute("ROLLBACK")
                raise


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
