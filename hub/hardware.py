"""The hub's side of the drivers: the manager built from settings, and the audit log.

Drivers never see the database; they get an ``audit`` callable in their config, and every
command they send to hardware passes through it before it is written to the port.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from drivers.base import load_drivers
from drivers.transports.ble_presence import BleAdvertisements
from hub.config import Settings
from hub.drivers import DriverManager
from hub.store.db import Database

AUDIT_KEEP = 10_000


class AuditLog:
    def __init__(self, db: Database) -> None:
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


EventSink = Callable[[str, dict[str, Any], str | None], None]
"""(kind, detail, device_id): a driver noticed something; it goes on the owner's event ring."""


def build_manager(
    settings: Settings,
    audit: AuditLog,
    on_event: EventSink,
    *,
    drivers: Mapping[str, Mapping[str, Any]] | None = None,
    **options: Any,
) -> DriverManager:
    """The manager with every installed driver; ``drivers`` merges config over the settings'
    (how tests hand a driver an emulated radio), ``options`` go to the manager."""
    driver_settings: dict[str, dict[str, Any]] = {
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
        "nicla_vision": {
            "port": settings.nicla_vision_port or None,
            "enabled": settings.nicla_vision_enabled,
            "audit": audit.sink("nicla_vision"),
        },
        "nicla_voice": {
            "enabled": settings.nicla_voice_enabled,
            "audit": audit.sink("nicla_voice"),
            "backend": None,
            "on_event": on_event,
            **(
                {"service_uuid": settings.nicla_voice_service}
                if settings.nicla_voice_service
                else {}
            ),
        },
    }
    installed = load_drivers()
    for cls in installed:  # every driver, a package's too, writes to the same audit log
        driver_settings.setdefault(cls.name, {}).setdefault("audit", audit.sink(cls.name))
    for name, extra in (drivers or {}).items():
        driver_settings.setdefault(name, {}).update(extra)
    options.setdefault("advertisements", BleAdvertisements(seconds=2.0))
    return DriverManager(installed, driver_settings, **options)
