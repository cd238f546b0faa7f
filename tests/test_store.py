from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from hub.store.db import connect
from hub.store.migrations import (
    Migration,
    MigrationError,
    bundled_migrations,
    current_version,
    migrate,
    open_database,
)


def test_bundled_migrations_are_numbered_without_gaps() -> None:
    versions = [m.version for m in bundled_migrations()]
    assert versions == list(range(1, len(versions) + 1))


def test_empty_database_gets_every_migration(tmp_path: Path) -> None:
    db = open_database(tmp_path / "hub.db")
    assert current_version(db) == len(bundled_migrations())
    assert {"users", "tokens", "schema_version"} <= set(db.table_names())
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_existing_database_keeps_its_rows_and_gets_only_new_migrations(tmp_path: Path) -> None:
    first = [Migration(1, "notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);")]
    db = connect(tmp_path / "hub.db")
    assert migrate(db, first) == [1]
    db["notes"].insert({"body": "kept"})
    second = [
        *first,
        Migration(
            2, "tags", "ALTER TABLE notes ADD COLUMN tag TEXT;\nUPDATE notes SET tag = 'old';"
        ),
    ]
    assert migrate(db, second) == [2]
    assert migrate(db, second) == []
    assert list(db["notes"].rows) == [{"id": 1, "body": "kept", "tag": "old"}]


def test_a_failing_migration_leaves_the_last_whole_version(tmp_path: Path) -> None:
    good = Migration(1, "a", "CREATE TABLE a (x INTEGER);")
    bad = Migration(2, "b", "CREATE TABLE b (y INTEGER);\nINSERT INTO nowhere VALUES (1);")
    db = connect(tmp_path / "hub.db")
    with pytest.raises(MigrationError, match="0002_b"):
        migrate(db, [good, bad])
    assert current_version(db) == 1
    assert not db["b"].exists(), "half of migration 2 must not survive"


def test_a_newer_database_is_refused_with_advice(tmp_path: Path) -> None:
    db = connect(tmp_path / "hub.db")
    migrate(
        db, [Migration(1, "a", "CREATE TABLE a (x);"), Migration(2, "b", "CREATE TABLE b (x);")]
    )
    with pytest.raises(MigrationError, match="newer than this hub"):
        migrate(db, [Migration(1, "a", "CREATE TABLE a (x);")])


def test_statements_with_semicolons_in_strings(tmp_path: Path) -> None:
    db = connect(tmp_path / "hub.db")
    migrate(db, [Migration(1, "a", "CREATE TABLE a (x TEXT);\nINSERT INTO a VALUES ('1;2');")])
    assert db.execute("SELECT x FROM a").fetchone()[0] == "1;2"


def test_integrity_after_reopen(tmp_path: Path) -> None:
    open_database(tmp_path / "hub.db").conn.close()
    conn = sqlite3.connect(tmp_path / "hub.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_migration_that_arrives_late_is_still_applied(tmp_path: Path) -> None:
    one = Migration(1, "a", "CREATE TABLE a (x);")
    three = Migration(3, "c", "CREATE TABLE c (x);")
    db = connect(tmp_path / "hub.db")
    assert migrate(db, [one, three]) == [1, 3]
    two = Migration(2, "b", "CREATE TABLE b (x);")
    assert migrate(db, [one, two, three]) == [2]
    assert db["b"].exists()


def test_threads_sharing_the_connection_do_not_break_each_others_transactions(
    tmp_path: Path,
) -> None:
    """Tools run in worker threads on the hub's connection while the event loop uses it too."""
    import threading

    db = connect(tmp_path / "hub.db")
    db.execute("CREATE TABLE rows (who TEXT, n INTEGER)")
    failures: list[BaseException] = []

    def transactions() -> None:
        try:
            for n in range(200):
                db["rows"].insert_all([{"who": "atomic", "n": n}, {"who": "atomic", "n": -n}])
        except BaseException as exc:
            failures.append(exc)

    def statements() -> None:
        try:
            for n in range(400):
                db.execute("INSERT INTO rows VALUES ('single', ?)", [n])
        except BaseException as exc:
            failures.append(exc)

    workers = [threading.Thread(target=transactions), threading.Thread(target=statements)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
    counts = dict(db.execute("SELECT who, COUNT(*) FROM rows GROUP BY who").fetchall())
    assert counts == {"atomic": 400, "single": 400}


def test_closing_waits_for_the_turn_another_thread_holds(tmp_path: Path) -> None:
    """The hub stopping while a thread still writes (a sync page being merged): the close waits
    for that thread's turn (a transaction holds it to its end), and a statement after the close
    is an error, not a crash."""
    db = connect(tmp_path / "hub.db")
    inside, release = threading.Event(), threading.Event()
    answers: list[object] = []

    def writer() -> None:
        with db.turn:
            inside.set()
            release.wait(30)
            answers.append(db.execute("SELECT 1").fetchone()[0])

    holding = threading.Thread(target=writer)
    holding.start()
    assert inside.wait(30)
    closing = threading.Thread(target=db.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive(), "closed while another thread held the turn"
    release.set()
    holding.join(30)
    closing.join(30)
    assert answers == [1] and not closing.is_alive()
    with pytest.raises(sqlite3.ProgrammingError):
        db.execute("SELECT 1")
