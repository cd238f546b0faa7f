"""Forged tools as the hub keeps them: each person's tools, the owners they trust, file hashes.

What a forged tool is made of is checked here (``ForgedDraft.checked``): a name that becomes
``my_<name>``, a description, a JSON-schema object for the input and one arrow function of at
most ``MAX_CODE_BYTES``. That the code is exactly one arrow function is the sandbox's to check,
since only V8 parses JavaScript faithfully.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from hub.people.identity import User
from hub.store.db import Database

MAX_CODE_BYTES = 4096
MAX_DESCRIPTION_CHARS = 500
MAX_SCHEMA_CHARS = 4096
PREFIX = "my_"
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_GITHUB_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


class ForgeRefused(Exception):
    """A tool, an install or a trust that is not accepted; the message is for a person."""


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


@dataclass(frozen=True)
class ForgedDraft:
    """A forged tool before it is stored: what create_tool, install_tool and the marketplace
    bring."""

    name: str
    description: str
    input_schema: dict[str, Any]
    code: str

    @classmethod
    def checked(cls, name: str, description: str, input_schema: Any, code: str) -> ForgedDraft:
        name = name.strip().removeprefix(PREFIX).lower()
        if not _NAME.fullmatch(name):
            raise ForgeRefused(
                "name must be 1-40 characters: a lowercase letter, then letters, digits or _"
            )
        description = description.strip()
        if not description or len(description) > MAX_DESCRIPTION_CHARS:
            raise ForgeRefused(f"description must be 1-{MAX_DESCRIPTION_CHARS} characters")
        schema = _schema(input_schema)
        code = code.strip()
        size = len(code.encode())
        if not code:
            raise ForgeRefused("code must be one JavaScript arrow function")
        if size > MAX_CODE_BYTES:
            raise ForgeRefused(f"code is {size} bytes; a forged tool is at most {MAX_CODE_BYTES}")
        return cls(name, description, schema, code)


def _schema(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        return {"type": "object", "properties": {}}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ForgeRefused(f"input_schema is not JSON: {exc}") from exc
    if not isinstance(value, dict) or value.get("type", "object") != "object":
        raise ForgeRefused('input_schema must be a JSON schema of {"type": "object", ...}')
    if len(json.dumps(value)) > MAX_SCHEMA_CHARS:
        raise ForgeRefused(f"input_schema is over {MAX_SCHEMA_CHARS} characters")
    return {"type": "object", **value}


@dataclass(frozen=True)
class ForgedTool:
    id: int
    user_id: str
    name: str
    description: str
    input_schema: dict[str, Any]
    code: str
    code_sha256: str
    source_url: str
    copied_from: int | None
    updated_at: float

    @property
    def tool_name(self) -> str:
        return PREFIX + self.name

    def as_json(self, *, with_code: bool = True) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "id": self.id,
            "name": self.tool_name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "sha256": self.code_sha256,
        }
        if self.source_url:
            shown["sourceUrl"] = self.source_url
        if self.copied_from is not None:
            shown["copiedFrom"] = self.copied_from
        if with_code:
            shown["code"] = self.code
        return shown


def _tool(row: dict[str, Any]) -> ForgedTool:
    return ForgedTool(
        id=row["id"],
        user_id=row["user_id"],
        name=row["name"],
        description=row["description"],
        input_schema=json.loads(row["input_schema"]),
        code=row["code"],
        code_sha256=row["code_sha256"],
        source_url=row["source_url"],
        copied_from=row["copied_from"],
        updated_at=row["updated_at"],
    )


class ForgeStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save(
        self,
        user: User,
        draft: ForgedDraft,
        *,
        source_url: str = "",
        copied_from: int | None = None,
    ) -> ForgedTool:
        """Store `draft` as the person's tool of that name, replacing one they had."""
        now = time.time()
        with self.db.conn:
            self.db.execute(
                "INSERT INTO forged_tools (user_id, name, description, input_schema, code,"
                " code_sha256, source_url, copied_from, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (user_id, name) DO UPDATE SET description = excluded.description,"
                " input_schema = excluded.input_schema, code = excluded.code,"
                " code_sha256 = excluded.code_sha256, source_url = excluded.source_url,"
                " copied_from = excluded.copied_from, updated_at = excluded.updated_at",
                [
                    user.id,
                    draft.name,
                    draft.description,
                    json.dumps(draft.input_schema),
                    draft.code,
                    sha256(draft.code),
                    source_url,
                    copied_from,
                    now,
                    now,
                ],
            )
        found = self.named(user.id, draft.name)
        assert found is not None
        return found

    def named(self, user_id: str, name: str) -> ForgedTool | None:
        name = name.strip().removeprefix(PREFIX).lower()
        rows = list(self.db["forged_tools"].rows_where("user_id = ? AND name = ?", [user_id, name]))
        return _tool(rows[0]) if rows else None

    def by_id(self, tool_id: int) -> ForgedTool | None:
        rows = list(self.db["forged_tools"].rows_where("id = ?", [tool_id]))
        return _tool(rows[0]) if rows else None

    def of(self, user_id: str) -> list[ForgedTool]:
        """A person's forged tools, by name: what their turns mount, and what their profile
        shows (code included: forged tools are public)."""
        rows = self.db["forged_tools"].rows_where("user_id = ?", [user_id], order_by="name")
        return [_tool(row) for row in rows]

    def remove(self, user_id: str, name: str) -> bool:
        name = name.strip().removeprefix(PREFIX).lower()
        with self.db.conn:
            cursor = self.db.execute(
                "DELETE FROM forged_tools WHERE user_id = ? AND name = ?", [user_id, name]
            )
        return cursor.rowcount > 0

    def browse(self, query: str = "", limit: int = 20) -> list[tuple[ForgedTool, str]]:
        """Everyone's forged tools, newest first, with their author's login; `query` matches
        names and descriptions."""
        like = f"%{query.strip().lower()}%"
        rows = self.db.execute(
            "SELECT f.*, u.login AS author FROM forged_tools f JOIN users u ON u.id = f.user_id"
            " WHERE lower(f.name) LIKE ? OR lower(f.description) LIKE ?"
            " ORDER BY f.updated_at DESC, f.id DESC LIMIT ?",
            [like, like, limit],
        )
        columns = [d[0] for d in rows.description]
        found = [dict(zip(columns, row, strict=True)) for row in rows.fetchall()]
        return [(_tool(row), str(row["author"])) for row in found]

    # --- the hashes of files fetched from GitHub ------------------------------------------

    def pin_file(self, url: str, digest: str) -> None:
        """Record `digest` for `url` the first time; refuse a different one later."""
        with self.db.conn:
            self.db.execute(
                "INSERT OR IGNORE INTO tool_files (url, sha256, first_seen) VALUES (?, ?, ?)",
                [url, digest, time.time()],
            )
        row = self.db.execute("SELECT sha256 FROM tool_files WHERE url = ?", [url]).fetchone()
        if row[0] != digest:
            raise ForgeRefused(
                f"{url} changed: its SHA-256 is {digest}, but this hub first saw {row[0]} at "
                "that commit; a file pinned by commit cannot change, so it is refused"
            )

    def file_hash(self, url: str) -> str | None:
        row = self.db.execute("SELECT sha256 FROM tool_files WHERE url = ?", [url]).fetchone()
        return str(row[0]) if row else None

    # --- owners a person trusts -----------------------------------------------------------

    def trusted(self, user_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT owner FROM trusted_tool_owners WHERE user_id = ? ORDER BY owner", [user_id]
        ).fetchall()
        return [row[0] for row in rows]

    def trust(self, user_id: str, owner: str, *, trusted: bool) -> str:
        owner = owner.strip().lstrip("@").lower()
        if not _GITHUB_OWNER.fullmatch(owner):
            raise ForgeRefused(f"{owner!r} is not a GitHub user or organisation name")
        with self.db.conn:
            if trusted:
                self.db.execute(
                    "INSERT OR IGNORE INTO trusted_tool_owners (user_id, owner, created_at)"
                    " VALUES (?, ?, ?)",
                    [user_id, owner, time.time()],
                )
            else:
                self.db.execute(
                    "DELETE FROM trusted_tool_owners WHERE user_id = ? AND owner = ?",
                    [user_id, owner],
                )
        return owner


def public_tools(db: Database, user_id: str) -> list[dict[str, Any]]:
    """A person's public forged tools with their code, as their profile shows them."""
    return [tool.as_json() for tool in ForgeStore(db).of(user_id)]
