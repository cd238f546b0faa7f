"""Archives and shares: conversation snapshots kept in SQLite.

An archive is owner-private and full-fidelity: every field a client sends (tool calls, tool
results, usage, model ids, metadata) is kept, after credentials are redacted. Clients redact
before sending; the hub redacts again (defence in depth, with ``hub.core.redaction``), so a
key pasted into a chat or left in a header copy never reaches the database. A share is the
public, sanitised counterpart: the title and the user/assistant text only, readable by anyone
who has its id.

Limits: at most ``MAX_MESSAGES`` messages, a title of at most ``MAX_TITLE_CHARS`` characters (a
longer explicit title is refused with a 400 rather than silently cut; only the default title,
taken from the first user message, is cut, to ``DEFAULT_TITLE_CHARS``), and at most
``MAX_BODY_BYTES`` of JSON once redacted.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub.contracts import CHAT_ROLES, MAX_CHAT_BODY_BYTES
from hub.core.errors import Refused
from hub.core.redaction import redact
from hub.people.identity import User
from hub.store.db import Database

MAX_MESSAGES = 2000
MAX_TITLE_CHARS = 200
DEFAULT_TITLE_CHARS = 60
DEFAULT_TITLE = "Untitled conversation"
MAX_BODY_BYTES = MAX_CHAT_BODY_BYTES
MAX_DEPTH = 64
ARCHIVE_ROLES = (*CHAT_ROLES, "tool")
ARCHIVE_PREFIX = "ar_"
SHARE_PREFIX = "sh_"


class ArchiveError(Refused):
    """A request about an archive or share that cannot be met; ``status`` is the HTTP answer."""

    status = 400


class ArchiveNotFound(ArchiveError):
    status = 404


class ArchiveTooLarge(ArchiveError):
    status = 413


# --- Redaction and reshaping (pure functions) --------------------------------------------------


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one message: a string content, or its text blocks joined by newlines.

    A text block is ``{"type": "text", "text": ...}`` or ``{"text": ...}``; tool calls, tool
    results, reasoning and media carry no text here.
    """
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type", "text") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(t for t in texts if t)


def default_title(messages: list[Any]) -> str:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            text = " ".join(message_text(message).split())
            if text:
                return text[:DEFAULT_TITLE_CHARS].rstrip()
    return DEFAULT_TITLE


def sanitise_for_share(body: Mapping[str, Any]) -> dict[str, Any]:
    """The public form of a conversation: its title and user/assistant text, redacted.

    Tool calls, tool results, usage, model ids and every other field are dropped; so are tool and
    system messages (a system prompt is configuration, often personal, not conversation) and
    messages left with no text.
    """
    raw_messages = body.get("messages")
    messages = raw_messages if isinstance(raw_messages, list) else []
    title = body.get("title")
    if not isinstance(title, str) or not title.strip():
        title = default_title(messages)
    kept = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = message_text(message)
        if text.strip():
            kept.append({"role": message["role"], "text": text})
    sanitised: dict[str, Any] = redact({"title": title.strip(), "messages": kept})
    return sanitised


def restore_messages(body: Mapping[str, Any]) -> list[dict[str, str]]:
    """The conversation as POST /api/chat takes it: ``[{role, content}]``, content a string.

    Only user, assistant and system messages with text are kept (tool messages and tool-only
    assistant turns are dropped), and neighbours with the same role are joined by a blank line,
    so providers that need alternating roles accept the history once tool turns are gone. The
    client appends its next user message and posts ``{"messages": [...]}``.
    """
    restored: list[dict[str, str]] = []
    raw_messages = body.get("messages")
    for message in raw_messages if isinstance(raw_messages, list) else []:
        if not isinstance(message, dict) or message.get("role") not in CHAT_ROLES:
            continue
        text = message_text(message)
        if not text.strip():
            continue
        if restored and restored[-1]["role"] == message["role"]:
            restored[-1]["content"] += "\n\n" + text
        else:
            restored.append({"role": str(message["role"]), "content": text})
    return restored


# --- Validation --------------------------------------------------------------------------------


def _check_depth(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ArchiveError(f"body is nested too deeply (limit {MAX_DEPTH} levels)")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def _check_message(index: int, message: Any) -> None:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise ArchiveError(f"{where} must be an object with role and content")
    if message.get("role") not in ARCHIVE_ROLES:
        raise ArchiveError(f"{where}.role must be one of {', '.join(ARCHIVE_ROLES)}")
    content = message.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ArchiveError(f"{where}.content must be a string, an array of blocks or null")
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise ArchiveError(f"{where}.content[{i}] must be an object")
        is_text = block.get("type", "text") == "text" and "text" in block
        if is_text and not isinstance(block["text"], str):
            raise ArchiveError(f"{where}.content[{i}].text must be a string")


def conversation(body: Any) -> dict[str, Any]:
    """Check a conversation body and return it redacted, with its title settled.

    Every field is kept. ``messages`` must be a non-empty array (at most ``MAX_MESSAGES``) of
    objects whose role is user, assistant, system or tool; ``title``, when given, must be a
    string of at most ``MAX_TITLE_CHARS`` characters.
    """
    if not isinstance(body, dict):
        raise ArchiveError('body must be a JSON object: {"title"?: ..., "messages": [...]}')
    _check_depth(body)
    if "messages" not in body:
        raise ArchiveError("messages is missing: send a non-empty array of messages")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise ArchiveError("messages must be a non-empty array")
    if len(messages) > MAX_MESSAGES:
        raise ArchiveError(f"messages has {len(messages)} entries; the limit is {MAX_MESSAGES}")
    for index, message in enumerate(messages):
        _check_message(index, message)
    title = body.get("title")
    if title is not None and not isinstance(title, str):
        raise ArchiveError("title must be a string")
    if title is not None and len(title.strip()) > MAX_TITLE_CHARS:
        raise ArchiveError(f"title is longer than {MAX_TITLE_CHARS} characters")
    clean: dict[str, Any] = redact(body)
    clean_title = clean.get("title")
    if isinstance(clean_title, str) and clean_title.strip():
        clean["title"] = clean_title.strip()[:MAX_TITLE_CHARS]
    else:
        clean["title"] = default_title(clean["messages"])
    return clean


def _encode(body: Mapping[str, Any]) -> str:
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    if len(encoded.encode("utf-8")) > MAX_BODY_BYTES:
        raise ArchiveTooLarge(f"body too large (limit {MAX_BODY_BYTES} bytes)")
    return encoded


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(12)


# --- The store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Archive:
    id: str
    owner_id: str
    title: str
    body: dict[str, Any]
    message_count: int
    created_at: float

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "messages": self.message_count,
            "created_at": self.created_at,
        }

    def full(self) -> dict[str, Any]:
        return {**self.body, "id": self.id, "title": self.title, "created_at": self.created_at}


@dataclass(frozen=True)
class Share:
    id: str
    owner_id: str
    archive_id: str | None
    title: str
    body: dict[str, Any]
    created_at: float

    def public_dict(self) -> dict[str, Any]:
        return {**self.body, "id": self.id, "title": self.title, "created_at": self.created_at}


class ArchiveStore:
    """Archives (private to their owner) and shares (readable by anyone with the id)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create_archive(self, owner: User, body: Any) -> Archive:
        clean = conversation(body)
        archive = Archive(
            id=_new_id(ARCHIVE_PREFIX),
            owner_id=owner.id,
            title=clean["title"],
            body=clean,
            message_count=len(clean["messages"]),
            created_at=time.time(),
        )
        self._db.execute(
            "INSERT INTO archives (id, owner_id, title, body_json, message_count, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                archive.id,
                archive.owner_id,
                archive.title,
                _encode(clean),
                archive.message_count,
                archive.created_at,
            ),
        )
        return archive

    def list_archives(self, owner: User) -> list[Archive]:
        """The owner's archives, newest first (bodies are not read)."""
        rows = self._db.execute(
            "SELECT id, owner_id, title, message_count, created_at FROM archives"
            " WHERE owner_id = ? ORDER BY created_at DESC, rowid DESC",
            (owner.id,),
        ).fetchall()
        return [Archive(r[0], r[1], r[2], {}, int(r[3]), float(r[4])) for r in rows]

    def get_archive(self, owner: User, archive_id: str) -> Archive:
        """The owner's archive; someone else's is as unknown as one that never existed."""
        row = self._db.execute(
            "SELECT id, owner_id, title, body_json, message_count, created_at FROM archives"
            " WHERE id = ? AND owner_id = ?",
            (archive_id, owner.id),
        ).fetchone()
        if row is None:
            raise ArchiveNotFound(f"no archive {archive_id}")
        return Archive(row[0], row[1], row[2], json.loads(row[3]), int(row[4]), float(row[5]))

    def delete_archive(self, owner: User, archive_id: str) -> None:
        cursor = self._db.execute(
            "DELETE FROM archives WHERE id = ? AND owner_id = ?", (archive_id, owner.id)
        )
        if cursor.rowcount == 0:
            raise ArchiveNotFound(f"no archive {archive_id}")

    def create_share(self, owner: User, body: Any) -> Share:
        """Share one of the owner's archives (``{"archiveId": ...}``) or a conversation body."""
        archive_id: str | None = None
        if isinstance(body, dict) and "archiveId" in body:
            archive_id = body["archiveId"]
            if not isinstance(archive_id, str):
                raise ArchiveError("archiveId must be a string")
            if "messages" in body:
                raise ArchiveError("send either archiveId or messages, not both")
            source = self.get_archive(owner, archive_id).body
        else:
            source = conversation(body)
        public = sanitise_for_share(source)
        if not public["messages"]:
            raise ArchiveError("nothing to share: the conversation has no user or assistant text")
        share = Share(
            id=_new_id(SHARE_PREFIX),
            owner_id=owner.id,
            archive_id=archive_id,
            title=public["title"],
            body=public,
            created_at=time.time(),
        )
        self._db.execute(
            "INSERT INTO shares (id, owner_id, archive_id, title, body_json, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (share.id, share.owner_id, archive_id, share.title, _encode(public), share.created_at),
        )
        return share

    def get_share(self, share_id: str) -> Share:
        row = self._db.execute(
            "SELECT id, owner_id, archive_id, title, body_json, created_at FROM shares"
            " WHERE id = ?",
            (share_id,),
        ).fetchone()
        if row is None:
            raise ArchiveNotFound(f"no share {share_id}")
        return Share(row[0], row[1], row[2], row[3], json.loads(row[4]), float(row[5]))

    def delete_share(self, owner: User, share_id: str) -> None:
        cursor = self._db.execute(
            "DELETE FROM shares WHERE id = ? AND owner_id = ?", (share_id, owner.id)
        )
        if cursor.rowcount == 0:
            raise ArchiveNotFound(f"no share {share_id}")
