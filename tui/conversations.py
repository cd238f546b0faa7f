"""What the TUI keeps on this machine: one JSON file per conversation, and the notes file.

A conversation file holds exactly the messages the TUI sends to the hub (``role``/``content``),
so continuing one is sending them again: the person's words and the replies as text, and each
turn's tool calls and results as blocks (hub/client/conversation.py). A file written before
the blocks, all text, reads as it always did. Files are written whole to a temporary file and
renamed over the old one, so a crash mid-write leaves the previous version, never half a file.
A file that cannot be read is skipped with a reason the app shows; it is never a crash.

Notes (``remember``/``forget``) live here too: they are this device's, never the hub's memory.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hub.client.conversation import message_text, paired
from tui.tables import clip

__all__ = ["Conversation", "ConversationStore", "Message", "Notes", "message_text"]

Message = dict[str, Any]
TITLE_CHARS = 60


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def title_for(messages: list[Message]) -> str:
    """The first user message, on one line and short: what a person recognises in a list."""
    for message in messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and content.strip():
            line = " ".join(content.split())
            return clip(line, TITLE_CHARS)
    return "New conversation"


@dataclass
class Conversation:
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    title: str = "New conversation"
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    messages: list[Message] = field(default_factory=list)
    named: bool = False
    """The person gave it its title (rename): saving keeps it instead of the first message."""
    notes: list[dict[str, Any]] = field(default_factory=list)
    """``{"after": index, "text"}``: what the TUI said after message ``index`` (a reply that
    failed, say), shown when the conversation is reopened and never sent to the hub."""

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "named": self.named,
            "created": self.created,
            "updated": self.updated,
            "messages": self.messages,
            "notes": self.notes,
        }

    def mentions(self, query: str) -> bool:
        """Whether the title or any message contains ``query`` (case and spacing ignored)."""
        needle = " ".join(query.casefold().split())
        if not needle:
            return True
        texts = [self.title, *(message_text(m) for m in self.messages)]
        return any(needle in " ".join(text.casefold().split()) for text in texts)

    @classmethod
    def from_json(cls, raw: Any) -> Conversation:
        """ValueError with the reason when ``raw`` is not a conversation this TUI wrote."""
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        messages = raw.get("messages")
        if not isinstance(messages, list) or not all(_is_message(m) for m in messages):
            raise ValueError("messages must be a list of {role, content}")
        texts = [raw.get(k) for k in ("id", "title", "created", "updated")]
        if not all(isinstance(t, str) for t in texts) or not raw["id"]:
            raise ValueError("id, title, created and updated must be strings")
        named = raw.get("named") is True
        notes = [n for n in raw.get("notes") or [] if _is_note(n)]
        # A file edited by hand may hold a tool call without its result: the hub would refuse
        # every turn of the conversation, so what does not pair is left out.
        kept = paired(messages)
        return cls(raw["id"], raw["title"], raw["created"], raw["updated"], kept, named, notes)


def _is_note(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("after"), int)
        and not isinstance(value.get("after"), bool)
        and isinstance(value.get("text"), str)
    )


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("role") in ("user", "assistant", "system")
        and isinstance(value.get("content"), (str, list))
    )


class ConversationStore:
    """The conversations directory: list, load, save. Ids are file names, so they are checked."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path_of(self, conversation_id: str) -> Path:
        if not conversation_id.isalnum():
            raise ValueError(f"not a conversation id: {conversation_id!r}")
        return self.directory / f"{conversation_id}.json"

    def save(self, conversation: Conversation) -> None:
        if not conversation.named:
            conversation.title = title_for(conversation.messages)
        conversation.updated = now_iso()
        write_json_atomically(self.path_of(conversation.id), conversation.as_json())

    def rename(self, conversation: Conversation, title: str) -> None:
        """Give ``conversation`` the person's own title (ValueError when it is blank); an
        empty conversation is not written, as before."""
        line = " ".join(title.split())
        if not line:
            raise ValueError("a title needs at least one character that is not a space")
        conversation.title, conversation.named = line, True
        if conversation.messages:
            self.save(conversation)

    def delete(self, conversation_id: str) -> None:
        """Remove the conversation's file (already gone is fine)."""
        self.path_of(conversation_id).unlink(missing_ok=True)

    def load(self, conversation_id: str) -> Conversation:
        """ValueError (with the file and the reason) when the file cannot be used."""
        path = self.path_of(conversation_id)
        try:
            return Conversation.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"skipped {path.name}: {exc}") from None

    def listing(self) -> tuple[list[Conversation], list[str]]:
        """Every readable conversation, newest first, and one sentence per file skipped."""
        found: list[Conversation] = []
        problems: list[str] = []
        if not self.directory.is_dir():
            return found, problems
        for path in sorted(self.directory.glob("*.json")):
            try:
                found.append(self.load(path.stem))
            except ValueError as exc:
                problems.append(str(exc))
        found.sort(key=lambda conv: conv.updated, reverse=True)
        return found, problems


def matching(conversations: Sequence[Conversation], query: str) -> list[Conversation]:
    """The conversations whose title or text contains ``query``, in the order given."""
    return [conv for conv in conversations if conv.mentions(query)]


class Notes:
    """``notes.json``: a list of ``{"text", "created"}``. Local only, never sent to the hub."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem = ""

    def load(self) -> list[dict[str, str]]:
        """The notes; an unreadable file reads as none (``problem`` says why)."""
        self.problem = ""
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.problem = f"{self.path.name} is unreadable ({exc}); it is kept aside"
            return []
        notes = raw.get("notes") if isinstance(raw, dict) else None
        if not isinstance(notes, list):
            self.problem = f"{self.path.name} has no notes list; it is kept aside"
            return []
        return [n for n in notes if isinstance(n, dict) and isinstance(n.get("text"), str)]

    def texts(self) -> list[str]:
        return [note["text"] for note in self.load()]

    def add(self, text: str) -> int:
        """Keep ``text``; the number of notes now kept. An unreadable file is moved aside
        (``notes.json.broken``), not overwritten: a person may still want what was in it."""
        notes = self.load()
        if self.problem:
            self.path.replace(self.path.with_name(self.path.name + ".broken"))
        notes.append({"text": text, "created": now_iso()})
        write_json_atomically(self.path, {"notes": notes})
        return len(notes)

    def forget(self, contains: str) -> list[str]:
        """Delete the notes containing ``contains`` (case-insensitive); the texts deleted."""
        needle = contains.casefold()
        notes = self.load()
        kept = [n for n in notes if needle not in n["text"].casefold()]
        gone = [n["text"] for n in notes if needle in n["text"].casefold()]
        if gone:
            write_json_atomically(self.path, {"notes": kept})
        return gone
