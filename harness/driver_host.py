"""A ``drivers.base.DeviceHost`` that keeps what a driver hands it, for a driver run outside a
hub (a test, a benchmark): every audited command, and every event with its kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RecordingHost:
    audited: list[str] = field(default_factory=list)
    """The commands, in the order they were audited."""
    events: list[tuple[str, Any, str | None]] = field(default_factory=list)
    """(kind, detail, device id) of each event, in order."""

    def audit(self, driver: str, device_id: str, command: str) -> None:
        self.audited.append(command)

    def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
        self.events.append((kind, detail, device_id))
