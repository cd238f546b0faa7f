"""The hub's side of the drivers: the manager built from settings, and the audit log.

Drivers never see the database; they get an ``audit`` callable in their config, and every
command they send to hardware passes through it before it is written to the port.
"""

from __future__ import annotations

import time
from typing import Any

import sqlite_utils

from drivers.base import load_drivers
from drivers.flipper_ble import BleAdvertisements
from hub.config import Settings
from hub.drivers import DriverManager

AUDIT_KEEP = 10_000


class AuditLog:
    def __init__(self, db: sqlite_utils.Database) -> None:
        self._db = db

    def sink(self, driver: str) -> Any:
        def record(device_id: str, command: str) -> None:
            self._db.execute(
                "INSERT INTO driver_audit (at, driver, device_id, command) VALUES (?, ?, ?, ?)",
                [time.time(), driver, device_id, command],
            )

        return record

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


def build_manager(settings: Settings, audit: AuditLog, **options: Any) -> DriverManager:
    driver_settings = {
        "flipper": {
            "port": settings.flipper_port or None,
            "enabled": settings.flipper_enabled,
            "deny": list(settings.flipper_deny),
            "audit": audit.sink("flipper"),
        },
        # Device ids over BLE are addresses, not flip_* serial numbers: deny does not apply.
        "flipper_ble": {
            "enabled": settings.flipper_enabled,
            "audit": audit.sink("flipper_ble"),
            "backend": None,
        },
    }
    options.setdefault("advertisements", BleAdvertisements(seconds=2.0))
    return DriverManager(load_drivers(), driver_settings, **options)
