"""The audit log: every command the hub sent to hardware, newest last, the last 10,000 kept.

A driver never sees the database: it hands each command to its host (``Driver.audit``) before
the command is written to the port, and the host writes it here (``host.py``); so do the
drivers' tools in a turn and the MCP clients' hardware calls.
"""

from __future__ import annotations

import time
from typing import Any

from hub.store.db import Database

AUDIT_KEEP = 10_000


class AuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, driver: str, device_id: str, command: str) -> None:
        self._db.execute(
            "INSERT INTO driver_audit (at, driver, device_id, command) VALUES (?, ?, ?, ?)",
            [time.time(), driver, device_id, command],
        )

    def recent(self, limit: int = 200) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT id, at, driver, device_id, command FROM driver_audit ORDER BY id DESC LIMIT ?",
            [limit],
        ).fetchall()
        return [
            {"id": r[0], "at": r[1], "driver": r[2], "device_id": r[3], "command": r[4]}
            for r in rows
        ]

    def trim(self) -> None:
        self._db.execute(
            "DELETE FROM driver_audit WHERE id <= (SELECT MAX(id) FROM driver_audit) - ?",
            [AUDIT_KEEP],
        )
