"""The inbox: messages between two people of this hub, in SQLite (migration 0018).

A conversation is every message between two people, whichever way it went; the overview is
one line per conversation with its unread count, newest first. Both read from the indexes the
migration makes, so they stay quick with tens of thousands of messages (``scripts/bench``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hub.core.errors import Refused
from hub.store.db import Database

MAX_TEXT = 4000  # characters of one message
MAX_LIST = 200  # conversations in the overview, or messages in one page of a conversation


class MessageRefused(Refused):
    """A message that cannot be sent or read: empty, too long, to nobody, to yourself."""


class NoSuchRecipient(MessageRefused):
    status = 404


@dataclass(frozen=True)
class Message:
    id: int
    sender: str  # the sender's login
    recipient: str  # the recipient's login
    tiny: str  # the tiny the sender wrote to, or ""
    text: str
    sent_at: float
    read_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "from": f"@{self.sender}",
            "to": f"@{self.recipient}",
            "tiny": self.tiny,
            "text": self.text,
            "sentAt": self.sent_at,
            "readAt": self.read_at,
        }


@dataclass(frozen=True)
class Conversation:
    login: str  # the other person
    name: str
    unread: int  # messages from them not opened yet
    last: Message

    def as_json(self) -> dict[str, Any]:
        return {
            "with": f"@{self.login}",
            "name": self.name,
            "unread": self.unread,
            "last": self.last.as_json(),
        }


_MESSAGE = (
    "SELECT m.id, s.login, r.login, m.tiny, m.body, m.created_at, m.read_at FROM messages m"
    " JOIN users s ON s.id = m.sender_id JOIN users r ON r.id = m.recipient_id"
)


def check_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise MessageRefused("a message needs some text")
    if len(text) > MAX_TEXT:
        raise MessageRefused(f"a message is at most {MAX_TEXT} characters ({len(text)} given)")
    return text.strip()


class Inbox:
    """Every person's messages, in the hub's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, sender_id: str, recipient_id: str, text: str, tiny: str = "") -> Message:
        with self._db.atomic():
            cursor = self._db.execute(
                "INSERT INTO messages (sender_id, recipient_id, tiny, body, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [sender_id, recipient_id, tiny, check_text(text), time.time()],
            )
        message = self.get(int(cursor.lastrowid or 0))
        assert message is not None
        return message

    def get(self, message_id: int) -> Message | None:
        row = self._db.execute(_MESSAGE + " WHERE m.id = ?", [message_id]).fetchone()
        return Message(*row) if row else None

    def overview(self, user_id: str, limit: int = 50) -> list[Conversation]:
        """One line per person ``user_id`` has written with, newest conversation first.

        One query: the newest message id each way from the covering indexes (no row read),
        the unread counts from the partial index of unread messages (the planner would rather
        read every row for them), each CTE computed once, then the rows it names."""
        rows = self._db.execute(
            "WITH last AS MATERIALIZED ("
            " SELECT peer, MAX(id) AS last_id FROM ("
            "  SELECT sender_id AS peer, MAX(id) AS id FROM messages WHERE recipient_id = :me"
            "   GROUP BY sender_id"
            "  UNION ALL"
            "  SELECT recipient_id, MAX(id) FROM messages WHERE sender_id = :me"
            "   GROUP BY recipient_id"
            " ) GROUP BY peer ORDER BY last_id DESC LIMIT :limit),"
            " unread AS MATERIALIZED (SELECT sender_id AS peer, COUNT(*) AS n"
            "  FROM messages INDEXED BY messages_unread"
            "  WHERE recipient_id = :me AND read_at IS NULL GROUP BY sender_id)"
            " SELECT p.login, p.name, COALESCE(unread.n, 0),"
            " m.id, s.login, r.login, m.tiny, m.body, m.created_at, m.read_at"
            " FROM last JOIN messages m ON m.id = last.last_id JOIN users p ON p.id = last.peer"
            " JOIN users s ON s.id = m.sender_id JOIN users r ON r.id = m.recipient_id"
            " LEFT JOIN unread ON unread.peer = last.peer ORDER BY last.last_id DESC",
            {"me": user_id, "limit": min(max(limit, 1), MAX_LIST)},
        ).fetchall()
        return [Conversation(row[0] or "", row[1], int(row[2]), Message(*row[3:])) for row in rows]

    def conversation(
        self, user_id: str, peer_id: str, limit: int = 50, before: int | None = None
    ) -> list[Message]:
        """The newest ``limit`` messages between the two (before message id ``before``),
        oldest first, as a conversation reads."""
        return self._newest(user_id, peer_id, min(max(limit, 1), MAX_LIST), before)

    def page(
        self, user_id: str, peer_id: str, limit: int = 50, before: int | None = None
    ) -> tuple[list[Message], bool]:
        """:meth:`conversation`, and whether older messages remain (one more is read to
        know, also at the largest page)."""
        limit = min(max(limit, 1), MAX_LIST)
        found = self._newest(user_id, peer_id, limit + 1, before)
        return found[-limit:], len(found) > limit

    def _newest(self, user_id: str, peer_id: str, limit: int, before: int | None) -> list[Message]:
        rows = self._db.execute(
            _MESSAGE + " WHERE m.id IN ("
            " SELECT id FROM messages WHERE recipient_id = ? AND sender_id = ? AND id < ?"
            " UNION ALL"
            " SELECT id FROM messages WHERE recipient_id = ? AND sender_id = ? AND id < ?"
            " ORDER BY id DESC LIMIT ?) ORDER BY m.id",
            [
                *(user_id, peer_id, before or 2**62),
                *(peer_id, user_id, before or 2**62),
                limit,
            ],
        ).fetchall()
        return [Message(*row) for row in rows]

    def mark_read(self, user_id: str, peer_id: str) -> int:
        """Everything ``peer_id`` sent ``user_id`` is read now; how many were not. Looked up
        first in the partial index, so reading a conversation with nothing new in it (the
        usual case) takes no write lock."""
        pending = self._db.execute(
            "SELECT 1 FROM messages INDEXED BY messages_unread WHERE recipient_id = ?"
            " AND sender_id = ? AND read_at IS NULL LIMIT 1",
            [user_id, peer_id],
        ).fetchone()
        if pending is None:
            return 0
        return self._db.execute(
            "UPDATE messages SET read_at = ? WHERE recipient_id = ? AND sender_id = ?"
            " AND read_at IS NULL",
            [time.time(), user_id, peer_id],
        ).rowcount

    def unread(self, user_id: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM messages WHERE recipient_id = ? AND read_at IS NULL", [user_id]
        ).fetchone()
        return int(row[0])
