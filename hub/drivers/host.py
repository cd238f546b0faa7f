"""The hub as every running driver sees it (``drivers.base.DeviceHost``): its commands go into
the audit log and its events onto the owner's event ring. The drivers' tools and routes reach
the same two through their own host (``hub/agent/tools/host.py``), so there is one path each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drivers.base import DeviceHost
from hub.devices.events import EventRing
from hub.drivers.audit import AuditLog


@dataclass(frozen=True)
class HubDeviceHost:
    log: AuditLog
    ring: EventRing
    owner: str
    """Whose ring the events go on: the hardware attached to this hub is the owner's."""

    def audit(self, driver: str, device_id: str, command: str) -> None:
        self.log.record(driver, device_id, command)

    def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
        self.ring.publish(self.owner, kind, device_id, detail)


def as_device_host(host: HubDeviceHost) -> DeviceHost:
    """``host`` as the drivers see it (and the place mypy checks it is a whole DeviceHost)."""
    return host
