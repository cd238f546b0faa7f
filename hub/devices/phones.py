"""A paired phone as the hub's hands: which phone can do what, the envelope that asks it, and
what its reply points at (docs/phone-apps.md).

A phone is a dial-in device (usually paired with a code). It says what it can do in its
heartbeat's capabilities: ``meta_glasses`` while Meta glasses are paired with it (connected or
not: the glasses' status tool asks which),
``screenshot``, ``generate_image``. The hub asks through the phone's mailbox with an envelope
whose ``type`` is the tool's name and whose other fields are the tool's arguments, and reads the
reply ``{result, images?: [{url, format}], media?: [{url, contentType}]}`` — or ``{ok: false,
error}``. Every url must be on this hub's own ``/media/`` store (the phone uploads first with
``POST /api/media``); any other is refused, so a phone cannot make the hub fetch for it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hub.devices.registry import Device, DeviceNotFound, DeviceUnreachable
from hub.devices.service import Devices

GLASSES = "meta_glasses"
SCREENSHOT = "screenshot"
GENERATE_IMAGE = "generate_image"


@dataclass(frozen=True)
class PhoneMedia:
    """A recording or a clip the phone uploaded: its key on the media store, its type, bytes."""

    key: str
    content_type: str
    data: bytes


@dataclass
class PhoneReply:
    device: Device
    text: str = ""
    images: list[tuple[bytes, str]] = field(default_factory=list)
    image_keys: list[str] = field(default_factory=list)
    media: list[PhoneMedia] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    error: str | None = None
    pending_id: str | None = None


def capabilities_of_phones(devices: Devices, owner: str) -> set[str]:
    """Everything ``owner``'s dial-in devices say they can do, together."""
    return {cap for d in devices.registry.list(owner) if d.dial_in for cap in d.capabilities}


def phone_for(devices: Devices, owner: str, capability: str) -> Device:
    """The phone to ask: one of ``owner``'s dial-in devices listing ``capability``, the one seen
    most recently. DeviceNotFound when none lists it; DeviceUnreachable, saying when it was
    last seen, when none is online."""
    able = [d for d in devices.registry.list(owner) if d.dial_in and capability in d.capabilities]
    if not able:
        raise DeviceNotFound(f"none of your paired phones reports {capability}")
    now = devices.now()
    phone = max(able, key=lambda d: d.last_seen or 0.0)
    if not phone.online(now):
        raise DeviceUnreachable(not_reachable(phone, now))
    return phone


def not_reachable(device: Device, now: float) -> str:
    """ "<name> is not reachable, last seen 3 min ago": what an offline device is reported as."""
    if device.last_seen is None:
        return f"{device.name} is not reachable, never seen online"
    return f"{device.name} is not reachable, last seen {_ago(now - device.last_seen)}"


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{max(0, round(seconds))} s ago"
    if seconds < 2 * 3600:
        return f"{round(seconds / 60)} min ago"
    if seconds < 2 * 86400:
        return f"{round(seconds / 3600)} h ago"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() - seconds))
    return f"on {stamp}"


async def ask_phone(
    devices: Devices, phone: Device, envelope: dict[str, Any], extra_wait_s: float = 0.0
) -> PhoneReply:
    """Send ``envelope`` to ``phone`` and wait for its reply (the usual wait, plus
    ``extra_wait_s`` for a recording that takes that long); a slower reply is pending."""
    message_id = devices.mailbox.send(phone, envelope)
    wait_s = devices.invoke_wait_s + extra_wait_s
    raw = await devices.mailbox.wait_reply(phone.owner, message_id, wait_s)
    if raw is None:
        return PhoneReply(phone, pending_id=message_id)
    return read_phone_reply(devices, phone, raw)


def read_phone_reply(devices: Devices, phone: Device, raw: str) -> PhoneReply:
    """The reply's text, its images and its media, each read from this hub's media store."""
    parsed = json.loads(raw)
    reply = PhoneReply(phone)
    if not isinstance(parsed, dict):
        reply.text = json.dumps(parsed)
        return reply
    if parsed.get("ok") is False:
        reply.error = str(parsed.get("error") or "the phone could not do it")
        return reply
    result = parsed.get("result", "")
    reply.text = result if isinstance(result, str) else json.dumps(result)
    images = _own(reply, parsed.get("images"), lambda url: devices.own_image(phone.owner, url))
    for key, image in images:
        reply.images.append(image)
        reply.image_keys.append(key)
    media = _own(reply, parsed.get("media"), lambda url: devices.own_media(phone.owner, url))
    for key, (data, content_type) in media:
        reply.media.append(PhoneMedia(key, content_type, data))
    return reply


def _own(
    reply: PhoneReply, listed: Any, load: Callable[[Any], tuple[bytes, str] | None]
) -> Iterator[tuple[str, tuple[bytes, str]]]:
    """Each listed ``{url}``'s media key and what ``load`` read from this hub's store; a URL
    that is not the owner's media here is kept in ``reply.refused``."""
    for item in _listed(listed):
        url = item.get("url")
        loaded = load(url)
        if loaded is None:
            reply.refused.append(str(url))
        else:
            yield str(url).rsplit("/", 1)[-1], loaded


def _listed(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
