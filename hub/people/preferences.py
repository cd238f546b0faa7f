"""Per-user choices kept by the hub: tools turned off and the preferred model.

An API key is never part of a saved model choice: keys arrive per request or from the hub's
config, and are not written anywhere.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hub.people.identity import User
from hub.store.db import Database


@dataclass(frozen=True)
class SavedModel:
    provider: str
    model_id: str = ""
    base_url: str = ""
    max_tokens: int | None = None


def disabled_tools(db: Database, user: User | None) -> frozenset[str]:
    if user is None:
        return frozenset()
    rows = db.execute("SELECT tool FROM disabled_tools WHERE user_id = ?", [user.id]).fetchall()
    return frozenset(row[0] for row in rows)


def set_tool_enabled(db: Database, user: User, tool: str, enabled: bool) -> None:
    if enabled:
        db.execute("DELETE FROM disabled_tools WHERE user_id = ? AND tool = ?", [user.id, tool])
    else:
        db.execute(
            "INSERT OR IGNORE INTO disabled_tools (user_id, tool) VALUES (?, ?)", [user.id, tool]
        )


def saved_model(db: Database, user: User | None) -> SavedModel | None:
    if user is None:
        return None
    row = db.execute(
        "SELECT provider, model_id, base_url, max_tokens FROM model_choices WHERE user_id = ?",
        [user.id],
    ).fetchone()
    return SavedModel(row[0], row[1], row[2], row[3]) if row else None


def save_model(db: Database, user: User, choice: SavedModel | None) -> None:
    if choice is None:
        db.execute("DELETE FROM model_choices WHERE user_id = ?", [user.id])
        return
    db.table("model_choices").upsert(
        {
            "user_id": user.id,
            "provider": choice.provider,
            "model_id": choice.model_id,
            "base_url": choice.base_url,
            "max_tokens": choice.max_tokens,
            "updated_at": time.time(),
        },
        pk="user_id",
    )
