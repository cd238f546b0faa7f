"""The hub as the drivers' tools and routes see it (``drivers.base.DriverHost``).

A driver package asks the hub only what this offers: whether the caller is the owner, the
online drivers of a family, the result shapes, the media store and transcription, the owner's
dial-in devices, events and transcripts. The turn's ToolContext inherits it, and so does the
per-request host of a driver's route (``hub/api/driver_routes.py``).
"""

from __future__ import annotations

from typing import Any

from drivers.base import Driver, DriverHost, DriverHostError, ToolResult
from hub import contracts as c
from hub.agent.tools.media import filmed, heard, seen
from hub.agent.tools.results import answer_result, failed, ok
from hub.devices.registry import DeviceError
from hub.people.identity import User
from hub.runtime.hub import Hub


class HubHost:
    """The methods of ``DriverHost``, for a subclass that holds the hub and the caller."""

    hub: Hub
    caller: User | None

    def owner_refusal(self, what: str) -> ToolResult | None:
        if self.caller is None:
            return failed(c.LOGIN_REQUIRED)
        if self.caller.id != self.hub.owner.id:
            return failed(f"only the owner of this hub can use {what}")
        return None

    def online(self, family: str) -> list[Driver]:
        return self.hub.drivers.online(family)

    def driver_records(self) -> list[dict[str, Any]]:
        return self.hub.drivers.records()

    def devices_reporting(self, capability: str) -> list[str]:
        if self.caller is None:
            return []
        now = self.hub.devices.now()
        return [
            d.name
            for d in self.hub.devices.registry.list(self.caller.id)
            if capability in d.capabilities and d.online(now) is not False
        ]

    def audit(self, driver: str, device_id: str, command: str) -> None:
        self.hub.drivers.host.audit(driver, device_id, command)

    def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
        self.hub.drivers.host.emit(driver, kind, device_id, detail)

    def ok(self, text: str, **data: Any) -> ToolResult:
        return ok(text, **data)

    def failed(self, text: str) -> ToolResult:
        return failed(text)

    def seen(self, camera: str, device_id: str | None, jpeg: bytes) -> ToolResult:
        return seen(self.hub, camera, device_id, jpeg)

    def filmed(self, camera: str, device_id: str | None, mp4: bytes, seconds: float) -> ToolResult:
        return filmed(self.hub, camera, device_id, mp4, seconds)

    async def heard(self, source: str, device_id: str | None, wav: bytes) -> ToolResult:
        return await heard(self.hub, source, device_id, wav)

    def dial_in_devices(self, capability: str) -> list[dict[str, Any]]:
        now = self.hub.devices.now()
        found = [
            d
            for d in self.hub.devices.registry.list(self.hub.owner.id)
            if capability in d.capabilities and d.dial_in
        ]
        return [d.as_json(now) for d in sorted(found, key=lambda d: d.online(now) is not True)]

    async def ask_device(self, device_id: str, envelope: dict[str, Any]) -> ToolResult:
        try:
            device = self.hub.devices.registry.get(self.hub.owner.id, device_id)
            answer = await self.hub.devices.request(device, envelope)
        except DeviceError as exc:
            return failed(str(exc))
        return answer_result(answer)

    def recent_events(self, kind: str) -> list[dict[str, Any]]:
        events = self.hub.devices.events.recent(self.hub.owner.id, 1000)
        return [e.as_json() for e in events if e.kind == kind]

    def transcripts(self, limit: int) -> list[dict[str, Any]]:
        return [t.as_json() for t in self.hub.transcripts.recent(self.hub.owner.id, limit)]

    def transcript(self, transcript_id: str) -> dict[str, Any]:
        try:
            return self.hub.transcripts.get(self.hub.owner.id, transcript_id).as_json()
        except DeviceError as exc:
            raise DriverHostError(str(exc)) from None


def as_driver_host(host: HubHost) -> DriverHost:
    """``host`` as the drivers see it (and the place mypy checks it is a whole DriverHost)."""
    return host
