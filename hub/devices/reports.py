"""What a dial-in device reports on its owner's event ring (docs/protocol.md, device events): an
event of a kind the hub knows, and a finished task, which its owner's phones are told of too.

The kinds a device may post are the contract's (``contracts.CLOUD_EVENT_KINDS``: the hub speaks
the cloud's wire contract, so a device posts to either alike) and every kind an installed driver
emits (``Driver.event_kinds``): a phone that holds a board reports what the board's driver
would. What a device publishes travels to the owner's phones and the cloud, so it must
fit an envelope.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hub import contracts as c
from hub.devices.events import RingEvent
from hub.devices.notify import Notice, push_notice
from hub.devices.registry import Device, DeviceError
from hub.devices.service import Devices
from hub.devices.transcripts import TranscriptStore

TASK_RESULT = "task_result"


def accepted_kinds(driver_kinds: Iterable[str]) -> tuple[str, ...]:
    """The kinds a device may post: the contract's, then the installed drivers'."""
    return tuple(dict.fromkeys((*c.CLOUD_EVENT_KINDS, *driver_kinds)))


def check_fits(value: Any, what: str) -> None:
    """``value`` fits an envelope, or DeviceError saying it does not."""
    if len(json.dumps(value)) > c.RELAY_PAYLOAD_MAX_BYTES:
        raise DeviceError(f"{what} is over {c.RELAY_PAYLOAD_MAX_BYTES} bytes")


def publish_event(
    devices: Devices,
    transcripts: TranscriptStore,
    device: Device,
    kind: str,
    detail: Any,
) -> RingEvent:
    """The device's event on its owner's ring. A transcript the device made itself is kept
    beside the hub's own too, so the transcript tools list both."""
    if (
        kind == c.TRANSCRIPT_EVENT
        and isinstance(detail, dict)
        and isinstance(detail.get("text"), str)
    ):
        transcripts.add(device.owner, "device", detail["text"], device_id=device.id, announce=False)
    return devices.events.publish(device.owner, kind, device.id, detail)


def task_detail(device: Device, task_id: str, summary: str | None, result: Any) -> dict[str, Any]:
    """What a finished task puts on the ring."""
    return {"taskId": task_id, "summary": summary, "result": result, "device": device.name}


def finish_task(
    devices: Devices, device: Device, detail: dict[str, Any]
) -> tuple[RingEvent, Notice]:
    """A finished task (``task_detail``) on its owner's ring, and the notice their phones are
    pushed."""
    event = devices.events.publish(device.owner, TASK_RESULT, device.id, detail)
    notice = finished_notice(device, detail["taskId"], detail["summary"], detail["result"])
    push_notice(devices, device.owner, notice, source=device.id, on_ring=False)
    return event, notice


def finished_notice(device: Device, task_id: str, summary: str | None, result: Any) -> Notice:
    """The notification a finished task is pushed to the owner's phones as."""
    said = summary or (result if isinstance(result, str) else "")
    if not said and result is not None:
        said = json.dumps(result)
    return Notice(
        title=f"{device.name} finished a task",
        body=said or f"Task {task_id} is done.",
        tag=f"task:{task_id}",
    )
