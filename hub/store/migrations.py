"""Numbered migrations, applied at start, each inside the same transaction as its version row.

A migration is a file ``NNNN_name.sql`` beside this module. ``schema_version`` records each one
applied; a start applies the missing ones in order under ``BEGIN IMMEDIATE``, so a crash midway
leaves the database at the last whole version and the next start carries on from there.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hub.store.db import Database, connect

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(Exception):
    """The database cannot be brought to this version of the hub."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def bundled_migrations() -> list[Migration]:
    folder = resources.files("hub.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    return sorted(found, key=lambda m: m.version)


def current_version(db: Database) -> int:
    if not db["schema_version"].exists():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def _applied(db: Database) -> set[int]:
    return {int(row[0]) for row in db.execute("SELECT version FROM schema_version")}


def migrate(db: Database, migrations: list[Migration] | None = None) -> list[int]:
    """Apply what is missing; return the versions applied."""
    pending_all = bundled_migrations() if migrations is None else migrations
    conn = db.conn
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    latest_known = max((m.version for m in pending_all), default=0)
    if current_version(db) > latest_known:
        raise MigrationError(
            f"the database is at schema version {current_version(db)}, newer than this hub "
            f"knows ({latest_known}); upgrade tiny-hub or point TINY_HUB_HOME elsewhere"
        )
    applied = []
    for migration in pending_all:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read inside the lock: another process may have applied it meanwhile. A set,
            # not the highest number: a version that arrived late (a merge) is still applied.
            if migration.version in _applied(db):
                conn.execute("COMMIT")
                continue
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} failed: {exc}"
            ) from exc
        applied.append(migration.version)
    return applied


def _statements(sql: str) -> list[str]:
    """Split a script into statements so they run inside our transaction (executescript
    would commit first)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


def open_database(path: Path) -> Database:
    """Connect and migrate: what the hub does at start."""
    db = connect(path)
    migrate(db)
    return db
