"""The MCP clients the owner named: each has a token of its own, shown once and kept hashed.

A client token opens ``/mcp`` only, as the owner, and nothing else on the hub: a desktop app
given one can use what the owner exposed to MCP clients, not the hub's other routes. Removing a
client ends its token at once; its name stays readable in the audit log of what it did.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from hub.core.errors import Refused
from hub.people.identity import hash_token, new_token
from hub.store.db import Database

NAME = re.compile(r"^[A-Za-z0-9][\w .-]{0,63}$")


class ClientRefused(Refused):
    status = 400


@dataclass(frozen=True)
class McpClient:
    """Who is calling over MCP: a named client, or the owner themself (``name`` "owner")."""

    name: str
    created_at: float | None = None
    last_used_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "created_at": self.created_at, "last_used_at": self.last_used_at}


OWNER_CLIENT = McpClient("owner")


class McpClients:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, name: str) -> str:
        """A new client and its token (returned here and never again)."""
        if not NAME.match(name):
            raise ClientRefused("a client name is 1-64 letters, digits, spaces or . - _")
        if self._row(name) is not None:
            raise ClientRefused(f"there is already a client named {name}; remove it first")
        token = new_token()
        self._db.table("mcp_clients").insert(
            {"name": name, "token_hash": hash_token(token), "created_at": time.time()}
        )
        return token

    def remove(self, name: str) -> bool:
        return bool(self._db.execute("DELETE FROM mcp_clients WHERE name = ?", [name]).rowcount)

    def list(self) -> list[McpClient]:
        rows = self._db.execute(
            "SELECT name, created_at, last_used_at FROM mcp_clients ORDER BY name"
        ).fetchall()
        return [McpClient(*row) for row in rows]

    def resolve(self, token: str) -> McpClient | None:
        """The client a token names, stamping its use; None for any other token."""
        row = self._db.execute(
            "SELECT name, created_at FROM mcp_clients WHERE token_hash = ?", [hash_token(token)]
        ).fetchone()
        if row is None:
            return None
        now = time.time()
        self._db.execute("UPDATE mcp_clients SET last_used_at = ? WHERE name = ?", [now, row[0]])
        return McpClient(row[0], row[1], now)

    def _row(self, name: str) -> tuple[Any, ...] | None:
        found = self._db.execute("SELECT name FROM mcp_clients WHERE name = ?", [name]).fetchone()
        return tuple(found) if found else None
