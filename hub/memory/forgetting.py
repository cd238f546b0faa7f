"""Forgetting's bookkeeping: which facts and links one act of forgetting closed, until when the
person can bring them back, and which forgettings are past that and due to be deleted for good.

The writes to the facts themselves (closing, restoring, deleting) are the fact graph's
(``hub.memory.graph``), in its transactions; this module only reads and writes the forgetting
tables, on the connection and inside the transaction the graph hands it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Literal

from hub.memory.model import Fact, FactNotFound, MemoryRefused
from hub.store.db import Database

Scope = Literal["fact", "about", "all"]
SCOPES: tuple[Scope, ...] = ("fact", "about", "all")
DEFAULT_GRACE_DAYS = 30
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def later(stamp: str, seconds: float) -> str:
    """The memory's ISO-8601 UTC ``stamp`` moved on by ``seconds``, in the same format."""
    moved = datetime.strptime(stamp, STAMP_FORMAT) + timedelta(seconds=seconds)
    return moved.strftime(STAMP_FORMAT)


def new_forgetting_id() -> str:
    return "f_" + uuid.uuid4().hex[:20]


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Recorded:
    """A forgetting's row as stored: the facts and links it closed, by id."""

    id: str
    owner: str
    scope: Scope
    about: str
    forgotten_at: str
    delete_after: str
    restored_at: str | None
    fact_ids: tuple[str, ...]
    edge_ids: tuple[int, ...]


@dataclass(frozen=True)
class Forgetting(Recorded):
    """One act of forgetting with the facts it closed: what the person is shown."""

    facts: tuple[Fact, ...] = ()

    @classmethod
    def of(cls, made: Recorded, facts: Sequence[Fact]) -> Forgetting:
        kept = {f.name: getattr(made, f.name) for f in fields(Recorded)}
        return cls(**kept, facts=tuple(facts))

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "about": self.about,
            "forgotten_at": self.forgotten_at,
            "delete_after": self.delete_after,
            "restored_at": self.restored_at,
            "facts": [fact.as_json() for fact in self.facts],
        }

    def describe(self) -> str:
        """ "Forgot 2 facts about my bicycle: [id] text; [id] text." — the exact facts."""
        about = f" about {self.about}" if self.scope == "about" and self.about else ""
        listed = "; ".join(f"[{f.id}] {f.text}" for f in self.facts)
        return f"Forgot {plural(len(self.facts), 'fact')}{about}: {listed}."

    def undo_note(self) -> str:
        return (
            f"They can be brought back until {self.delete_after[:10]} (the memory's recently "
            "forgotten list, or tiny-hub memory undo); then they are deleted for good."
        )


def record(
    db: Database,
    owner: str,
    scope: Scope,
    about: str,
    stamp: str,
    grace_s: float,
    fact_ids: Sequence[str],
    edge_ids: Sequence[int],
) -> Recorded:
    """Write one forgetting; call inside the transaction that closes its facts."""
    if scope not in SCOPES:
        raise MemoryRefused(f"scope must be one of {', '.join(SCOPES)}")
    made = Recorded(
        new_forgetting_id(),
        owner,
        scope,
        about,
        stamp,
        later(stamp, grace_s),
        None,
        tuple(fact_ids),
        tuple(edge_ids),
    )
    db.execute(
        "INSERT INTO forgetting (id, owner, scope, about, forgotten_at, delete_after)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [made.id, owner, scope, about, stamp, made.delete_after],
    )
    db.conn.executemany(
        "INSERT INTO forgotten_fact (forgetting, fact) VALUES (?, ?)",
        [(made.id, fact_id) for fact_id in made.fact_ids],
    )
    db.conn.executemany(
        "INSERT INTO forgotten_edge (forgetting, edge) VALUES (?, ?)",
        [(made.id, edge_id) for edge_id in made.edge_ids],
    )
    return made


def restorable(db: Database, owner: str, forgetting_id: Any, at: str) -> Recorded:
    """The person's forgetting that can still be undone; anyone else's is not found."""
    if not isinstance(forgetting_id, str) or not forgetting_id:
        raise MemoryRefused("id is required: the id of a forgetting (GET /learnings/forgotten)")
    found = load(db, owner, forgetting_id)
    if found is None or found.delete_after <= at:
        raise FactNotFound(f"no forgetting {forgetting_id} of yours that can still be undone")
    if found.restored_at is not None:
        raise MemoryRefused(f"forgetting {forgetting_id} was already undone at {found.restored_at}")
    return found


def load(db: Database, owner: str, forgetting_id: str) -> Recorded | None:
    row = db.execute(
        "SELECT id, owner, scope, about, forgotten_at, delete_after, restored_at FROM forgetting"
        " WHERE id = ? AND owner = ?",
        [forgetting_id, owner],
    ).fetchone()
    return None if row is None else _recorded(db, row)


def recent(db: Database, owner: str, at: str) -> list[Recorded]:
    """The person's forgettings that can still be undone, newest first."""
    rows = db.execute(
        "SELECT id, owner, scope, about, forgotten_at, delete_after, restored_at FROM forgetting"
        " WHERE owner = ? AND restored_at IS NULL AND delete_after > ?"
        " ORDER BY forgotten_at DESC, rowid DESC",
        [owner, at],
    ).fetchall()
    return [_recorded(db, row) for row in rows]


def mark_restored(db: Database, forgetting_id: str, stamp: str) -> None:
    db.execute("UPDATE forgetting SET restored_at = ? WHERE id = ?", [stamp, forgetting_id])


def due(db: Database, at: str) -> list[Recorded]:
    """Forgettings whose grace period is over: their facts go for good (an undone one only
    leaves its row: its facts were brought back as new ones)."""
    rows = db.execute(
        "SELECT id, owner, scope, about, forgotten_at, delete_after, restored_at FROM forgetting"
        " WHERE delete_after <= ? ORDER BY delete_after",
        [at],
    ).fetchall()
    return [_recorded(db, row) for row in rows]


def drop(db: Database, forgetting_ids: Sequence[str]) -> None:
    db.conn.executemany("DELETE FROM forgetting WHERE id = ?", [(made,) for made in forgetting_ids])


def _recorded(db: Database, row: Sequence[Any]) -> Recorded:
    facts = db.execute(
        "SELECT fact FROM forgotten_fact WHERE forgetting = ? ORDER BY rowid", [row[0]]
    ).fetchall()
    edges = db.execute(
        "SELECT edge FROM forgotten_edge WHERE forgetting = ? ORDER BY edge", [row[0]]
    ).fetchall()
    return Recorded(
        id=row[0],
        owner=row[1],
        scope=row[2],
        about=row[3],
        forgotten_at=row[4],
        delete_after=row[5],
        restored_at=row[6],
        fact_ids=tuple(str(r[0]) for r in facts),
        edge_ids=tuple(int(r[0]) for r in edges),
    )
