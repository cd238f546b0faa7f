"""Reaching a device for its owner: an envelope through the mailbox, or a call to its API.

``ask`` is what ``use_device`` and ``GET /api/devices/endpoint`` do. A dial-in device gets an
``invoke`` envelope and about 45 s to answer; a slower answer is redeemed later by id. A reply's
images count only when they point at this hub's own ``/media/`` store (they are read from it,
never fetched); any other origin is refused, so a device cannot make the hub fetch for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hub.devices.endpoint import EndpointClient, EndpointError, EndpointPolicy
from hub.devices.events import EventRing
from hub.devices.idempotency import IdempotencyKeys
from hub.devices.media import IMAGE_FORMATS, MediaStore
from hub.devices.registry import (
    AdjustableClock,
    Clock,
    Device,
    DeviceError,
    DeviceNotFound,
    DeviceRegistry,
    DeviceUnreachable,
)
from hub.devices.relay import Mailbox
from hub.store.db import Database

INVOKE_WAIT_S = 45.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass
class DeviceAnswer:
    """What a device said: text for the model, images read from the hub's media store."""

    device: str
    text: str = ""
    images: list[tuple[bytes, str]] = field(default_factory=list)
    pending_id: str | None = None
    refused: list[str] = field(default_factory=list)


class Devices:
    """The registry, the mailbox, the event ring and the media store, on one clock."""

    def __init__(
        self,
        db: Database,
        media_folder: Path,
        policy: EndpointPolicy,
        hub_hosts: tuple[str, ...] = (),
        clock: Clock | None = None,
    ) -> None:
        self.clock = clock or AdjustableClock()
        clock = self.clock
        self.registry = DeviceRegistry(db, clock)
        self.mailbox = Mailbox(db, clock)
        self.events = EventRing(db, clock)
        self.media = MediaStore(db, media_folder, clock)
        self.idempotency = IdempotencyKeys(db, clock)
        self.endpoint = EndpointClient(policy)
        self.invoke_wait_s = INVOKE_WAIT_S
        self._hub_hosts = {h.lower() for h in (*hub_hosts, *LOOPBACK_HOSTS)}

    def now(self) -> float:
        return self.clock()

    async def ask(self, owner: str, name: str, prompt: str) -> DeviceAnswer:
        return await self.ask_device(self.registry.by_name(owner, name), prompt)

    async def ask_device(self, device: Device, prompt: str) -> DeviceAnswer:
        if not device.dial_in:
            return await self._ask_endpoint(device, prompt)
        return await self.request(device, {"type": "invoke", "prompt": prompt})

    async def request(self, device: Device, envelope: dict[str, Any]) -> DeviceAnswer:
        """Send a dial-in device ``envelope`` through its mailbox and wait for the reply
        (about 45 s; a slower one is redeemed later by id with ``result``)."""
        if not device.dial_in:
            raise DeviceError(f"{device.name} is not a dial-in device; it has no mailbox")
        message_id = self.mailbox.send(device, envelope)
        reply = await self.mailbox.wait_reply(device.owner, message_id, self.invoke_wait_s)
        if reply is None:
            return DeviceAnswer(device.name, pending_id=message_id)
        return self.read_reply(device.owner, device.name, reply)

    async def result(self, owner: str, message_id: str) -> DeviceAnswer:
        state, reply = self.mailbox.reply_to(owner, message_id)
        if state == "dead":
            raise DeviceError(f"{message_id} was never picked up within an hour; ask again")
        if reply is None:
            return DeviceAnswer("", pending_id=message_id)
        return self.read_reply(owner, "", reply)

    def read_reply(self, owner: str, device_name: str, reply: str) -> DeviceAnswer:
        """``parsed.result ?? parsed`` (docs/protocol.md, devices), plus the images on this hub's
        media store."""
        parsed = json.loads(reply)
        answer = DeviceAnswer(device_name)
        result = parsed.get("result", parsed) if isinstance(parsed, dict) else parsed
        answer.text = result if isinstance(result, str) else json.dumps(result)
        images = parsed.get("images") if isinstance(parsed, dict) else None
        for image in images if isinstance(images, list) else []:
            url = image.get("url") if isinstance(image, dict) else None
            loaded = self.own_image(owner, url)
            if loaded is None:
                answer.refused.append(str(url))
            else:
                answer.images.append(loaded)
        return answer

    async def _ask_endpoint(self, device: Device, prompt: str) -> DeviceAnswer:
        assert device.url is not None
        try:
            reply = await self.endpoint.chat(device.url, self.registry.secret_of(device), prompt)
        except EndpointError as exc:
            raise DeviceUnreachable(f"{device.name}: {exc}") from None
        return DeviceAnswer(device.name, text=reply)

    def own_media(self, owner: str, url: Any) -> tuple[bytes, str] | None:
        """The bytes and content type of ``url`` when it points at ``owner``'s media on this
        hub's own ``/media/`` store (read from the store, never fetched); None otherwise."""
        if not isinstance(url, str):
            return None
        parsed = urlparse(url)
        if parsed.netloc and (parsed.hostname or "").lower() not in self._hub_hosts:
            return None
        if not parsed.path.startswith("/media/") or parsed.query:
            return None
        try:
            return self.media.get(owner, parsed.path.removeprefix("/media/"))
        except DeviceNotFound:
            return None

    def own_image(self, owner: str, url: Any) -> tuple[bytes, str] | None:
        """``own_media`` when it is an image: its bytes and strands' image format."""
        loaded = self.own_media(owner, url)
        image_format = IMAGE_FORMATS.get(loaded[1]) if loaded else None
        return (loaded[0], image_format) if loaded and image_format else None
