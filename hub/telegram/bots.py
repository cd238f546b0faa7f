"""Each person's Telegram bot: which tiny answers, whether it runs, where polling left off, and
the chats it has heard from (migration 0018). The token is not in the database: it is kept in
``telegram-<user id>.token`` (0600) in the data dir, written the way ``cloud.token`` is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.cloud.account import load_token, save_token
from hub.core.errors import Refused
from hub.store.db import Database


class NoBot(Refused):
    status = 404

    def __init__(self) -> None:
        super().__init__("no Telegram bot is connected: use the telegram tool's setup first")


@dataclass(frozen=True)
class Bot:
    user_id: str
    tiny: str
    username: str
    enabled: bool
    offset: int
    state: str  # starting, polling, offline, refused (Telegram refuses the token), disabled
    detail: str
    created_at: float  # changes with each setup, so the poller starts again on a new token


@dataclass(frozen=True)
class Chat:
    chat_id: int
    title: str
    allowed: bool
    last_seen: float

    def as_json(self) -> dict[str, Any]:
        return {"chatId": self.chat_id, "title": self.title, "allowed": self.allowed}


class Bots:
    def __init__(self, db: Database, home: Path) -> None:
        self._db = db
        self._home = home

    def token_path(self, user_id: str) -> Path:
        return self._home / f"telegram-{user_id}.token"

    def token(self, user_id: str) -> str | None:
        return load_token(self.token_path(user_id))

    def get(self, user_id: str) -> Bot | None:
        row = self._db.execute(
            "SELECT user_id, tiny, bot_username, enabled, update_offset, state, detail,"
            " created_at FROM telegram_bots WHERE user_id = ?",
            [user_id],
        ).fetchone()
        return _bot(row) if row else None

    def enabled(self) -> list[Bot]:
        rows = self._db.execute(
            "SELECT user_id, tiny, bot_username, enabled, update_offset, state, detail,"
            " created_at FROM telegram_bots WHERE enabled = 1"
        ).fetchall()
        return [_bot(row) for row in rows]

    def connect(self, user_id: str, tiny: str, username: str, token: str | None) -> Bot:
        """Save a setup; a new ``token`` replaces the kept one and polling starts from scratch
        (another bot's update ids mean nothing to this one)."""
        if token is not None:
            save_token(self.token_path(user_id), token)
        with self._db.atomic():
            self._db.execute(
                "INSERT INTO telegram_bots (user_id, tiny, bot_username, enabled, created_at)"
                " VALUES (?, ?, ?, 1, ?) ON CONFLICT (user_id) DO UPDATE SET tiny = excluded.tiny,"
                " bot_username = CASE WHEN excluded.bot_username = '' THEN bot_username"
                " ELSE excluded.bot_username END, enabled = 1, created_at = excluded.created_at,"
                " state = 'starting', detail = '',"
                " update_offset = CASE WHEN ? THEN 0 ELSE update_offset END",
                [user_id, tiny, username, time.time(), token is not None],
            )
        found = self.get(user_id)
        assert found is not None
        return found

    def disable(self, user_id: str) -> None:
        self._require(user_id)
        self._db.execute(
            "UPDATE telegram_bots SET enabled = 0, state = 'disabled', detail = ''"
            " WHERE user_id = ?",
            [user_id],
        )

    def remove(self, user_id: str) -> None:
        self._require(user_id)
        self._db.execute("DELETE FROM telegram_bots WHERE user_id = ?", [user_id])
        self.token_path(user_id).unlink(missing_ok=True)

    def _require(self, user_id: str) -> None:
        if self.get(user_id) is None:
            raise NoBot()

    def set_state(self, user_id: str, state: str, detail: str = "") -> None:
        self._db.execute(
            "UPDATE telegram_bots SET state = ?, detail = ? WHERE user_id = ? AND enabled = 1",
            [state, detail[:300], user_id],
        )

    def set_offset(self, user_id: str, offset: int) -> None:
        self._db.execute(
            "UPDATE telegram_bots SET update_offset = ? WHERE user_id = ?", [offset, user_id]
        )

    # --- chats --------------------------------------------------------------------------

    def chat(self, user_id: str, chat_id: int) -> Chat | None:
        row = self._db.execute(
            "SELECT chat_id, title, allowed, last_seen FROM telegram_chats"
            " WHERE user_id = ? AND chat_id = ?",
            [user_id, chat_id],
        ).fetchone()
        return Chat(row[0], row[1], bool(row[2]), row[3]) if row else None

    def chats(self, user_id: str) -> list[Chat]:
        rows = self._db.execute(
            "SELECT chat_id, title, allowed, last_seen FROM telegram_chats WHERE user_id = ?"
            " ORDER BY allowed DESC, last_seen DESC",
            [user_id],
        ).fetchall()
        return [Chat(r[0], r[1], bool(r[2]), r[3]) for r in rows]

    def allow(self, user_id: str, chat_id: int) -> None:
        self._require(user_id)
        self._db.execute(
            "INSERT INTO telegram_chats (user_id, chat_id, allowed, last_seen) VALUES (?, ?, 1, ?)"
            " ON CONFLICT (user_id, chat_id) DO UPDATE SET allowed = 1",
            [user_id, chat_id, time.time()],
        )

    def heard(self, user_id: str, chat_id: int, title: str) -> Chat:
        """Note that ``chat_id`` wrote (a new chat is not allowed); what it was before."""
        before = self.chat(user_id, chat_id)
        self._db.execute(
            "INSERT INTO telegram_chats (user_id, chat_id, title, allowed, last_seen)"
            " VALUES (?, ?, ?, 0, ?) ON CONFLICT (user_id, chat_id) DO UPDATE SET"
            " title = excluded.title, last_seen = excluded.last_seen",
            [user_id, chat_id, title[:100], time.time()],
        )
        return before or Chat(chat_id, title, False, 0.0)


def _bot(row: Any) -> Bot:
    return Bot(row[0], row[1], row[2], bool(row[3]), int(row[4]), row[5], row[6], float(row[7]))
