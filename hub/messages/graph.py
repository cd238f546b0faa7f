"""The ``messaged`` edge of the community graph: ``user:<sender> → messaged → user:<recipient>``.

Written the way ``hub/tinys/social.py`` writes ``consulted``: on the memory graph's ``edge``
table under the ``platform`` owner, opened once per pair and then weighed up by each message.
It is private: who writes to whom is nobody else's business, unlike a public consult.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlite_utils

from hub.tinys.social import PLATFORM

MESSAGED = "messaged"


def user_node(user_id: str) -> str:
    return f"user:{user_id}"


def record_messaged(db: sqlite_utils.Database, sender_id: str, recipient_id: str) -> None:
    src, dst = user_node(sender_id), user_node(recipient_id)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with db.atomic():
        updated = db.execute(
            "UPDATE edge SET weight = weight + 1 WHERE owner = ? AND rel = ? AND src = ?"
            " AND dst = ? AND valid_to IS NULL",
            [PLATFORM, MESSAGED, src, dst],
        ).rowcount
        if not updated:
            db.execute(
                "INSERT INTO edge (owner, src, rel, dst, visibility, valid_from)"
                " VALUES (?, ?, ?, ?, 'private', ?)",
                [PLATFORM, src, MESSAGED, dst, stamp],
            )
