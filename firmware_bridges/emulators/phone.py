"""A phone with Meta glasses, in software: what a phone app does for the hub (docs/phone-apps.md).

It pairs with a hub using a pairing code (``POST /api/pair``), heartbeats with its
capabilities (``meta_glasses`` while emulated glasses are paired with it), holds its mailbox pull
open (``PUT /api/devices/relay`` with ``wait``) and answers each envelope the way an app would:
a photo is a committed JPEG uploaded through ``POST /api/media`` and pointed at from the reply,
audio is the committed speech recording, a video a committed MP4 with that speech as its sound
track. Every envelope is printed as it arrives, and ``notify`` envelopes as notifications.

It is a class (``start``/``stop``, for tests) and ``tiny-hub emulate phone`` (for people).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
PHOTO = FIXTURES / "phone" / "photo.jpg"
CLIP = FIXTURES / "phone" / "clip.mp4"
SPEECH = FIXTURES / "speech" / "kitchen.wav"
HEARTBEAT_EVERY_S = 20.0
PULL_WAIT_S = 20.0
RETRY_AFTER_S = 1.0
CALL_TIMEOUT_S = PULL_WAIT_S + 10.0


class PhoneError(Exception):
    """The hub refused the emulated phone (a wrong code, a revoked token); ``str()`` says why."""


@dataclass
class Glasses:
    """The emulated Meta glasses' state, as a test or a person sets it."""

    connected: bool = True
    battery: int = 82
    model: str = "Ray-Ban Meta (emulated)"


@dataclass
class Media:
    """What the emulated phone's camera, microphone and screen produce."""

    photo: Path = PHOTO
    clip: Path = CLIP
    speech: Path = SPEECH

    def read(self, path: Path) -> bytes:
        if not path.is_file():
            raise PhoneError(f"{path} is missing: the emulated phone's media ship with the repo")
        return path.read_bytes()


@dataclass
class EmulatedPhone:
    """A paired phone that answers the hub's envelopes. Give it a pairing ``code`` or the
    ``device_id`` and ``token`` of an earlier pairing."""

    hub_url: str
    code: str | None = None
    name: str = "Emulated phone"
    platform: str = "android"
    glasses: Glasses | None = None
    extra_capabilities: tuple[str, ...] = ("screenshot",)
    device_id: str = ""
    token: str = ""
    media: Media = field(default_factory=Media)
    say: Callable[[str], None] = print
    received: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    _http: aiohttp.ClientSession | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def capabilities(self) -> list[str]:
        """What the heartbeat reports: ``meta_glasses`` while glasses are paired (connected or
        not: the status tool tells which), the rest as given."""
        glasses = ["meta_glasses"] if self.glasses is not None else []
        return [*self.extra_capabilities, *glasses]

    async def start(self) -> None:
        """Pair (when given a code), heartbeat once, then keep heartbeating and pulling."""
        self._http = aiohttp.ClientSession(
            self.hub_url.rstrip("/"), timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
        )
        if self.code is not None:
            await self._pair(self.code)
        await self.heartbeat()
        self._tasks = [
            asyncio.create_task(self._heartbeats(), name="phone heartbeat"),
            asyncio.create_task(self._pulls(), name="phone mailbox"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def run(self) -> None:
        """Start and keep going until cancelled (the command line's Ctrl-C)."""
        await self.start()
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self.stop()

    async def heartbeat(self) -> None:
        await self._call("POST", "/api/devices/heartbeat", capabilities=self.capabilities)

    # --- the hub's protocol -----------------------------------------------------------------

    async def _pair(self, code: str) -> None:
        body = {"code": code, "name": self.name, "platform": self.platform}
        paired = await self._request("POST", "/api/pair", body)
        self.device_id, self.token = paired["deviceId"], paired["token"]
        self.name = str(paired.get("name") or self.name)
        self.say(f"paired as {self.name} ({self.device_id})")

    async def _call(self, method: str, path: str, **body: Any) -> Any:
        return await self._request(
            method, path, {"deviceId": self.device_id, "token": self.token, **body}
        )

    async def _request(self, method: str, path: str, body: dict[str, Any]) -> Any:
        assert self._http is not None, "start the phone first"
        async with self._http.request(method, path, json=body) as response:
            answer = await response.json(content_type=None)
            if response.status != 200:
                error = answer.get("error") if isinstance(answer, dict) else answer
                raise PhoneError(f"{method} {path}: {response.status} {error}")
            return answer

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY_S)
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                await self.heartbeat()

    async def _pulls(self) -> None:
        while True:
            try:
                pulled = await self._call("PUT", "/api/devices/relay", max=10, wait=PULL_WAIT_S)
            except (PhoneError, aiohttp.ClientError, TimeoutError) as exc:
                self.say(f"pull failed ({exc}); again in {RETRY_AFTER_S:g} s")
                await asyncio.sleep(RETRY_AFTER_S)
                continue
            for message in pulled["messages"]:
                await self._reply(message)

    async def _reply(self, message: dict[str, Any]) -> None:
        reply = await self._answer(json.loads(message["payload"]))
        try:
            await self._call("PATCH", "/api/devices/relay", inReplyTo=message["id"], payload=reply)
        except (PhoneError, aiohttp.ClientError, TimeoutError) as exc:
            self.say(f"could not answer {message['id']}: {exc}")

    async def _upload(self, data: bytes, content_type: str) -> str:
        encoded = base64.b64encode(data).decode("ascii")
        uploaded = await self._call("POST", "/api/media", data=encoded, contentType=content_type)
        return str(uploaded["url"])

    # --- what the phone does ----------------------------------------------------------------

    async def _answer(self, envelope: dict[str, Any]) -> dict[str, Any]:
        self.received.append(envelope)
        kind = str(envelope.get("type"))
        if kind == "notify":
            self.notices.append(envelope)
            self.say(f"notification: {envelope.get('title')} — {envelope.get('body')}")
            return {"ok": True}
        self.say(f"action: {kind} {json.dumps({k: v for k, v in envelope.items() if k != 'type'})}")
        try:
            return await self._act(kind, envelope)
        except (PhoneError, aiohttp.ClientError, TimeoutError) as exc:
            return {"ok": False, "error": str(exc) or type(exc).__name__}

    async def _act(self, kind: str, envelope: dict[str, Any]) -> dict[str, Any]:
        if kind == "invoke":
            return {"result": f"{self.name} is an emulated phone; it can: {self.capabilities}"}
        if kind in ("screenshot", "generate_image") and kind in self.capabilities:
            url = await self._upload(self.media.read(self.media.photo), "image/jpeg")
            said = "The phone's screen." if kind == "screenshot" else "The image, generated."
            return {"result": said, "images": [{"url": url, "format": "jpeg"}]}
        if kind.startswith("meta_"):
            return await self._glasses(kind, envelope)
        return {"ok": False, "error": f"unknown envelope type {kind}"}

    async def _glasses(self, kind: str, envelope: dict[str, Any]) -> dict[str, Any]:
        glasses = self.glasses
        if glasses is None:
            raise PhoneError("no Meta glasses are paired with this phone")
        if kind == "meta_glasses_status":
            state = {"connected": glasses.connected, "battery": glasses.battery}
            return {"result": {**state, "model": glasses.model}}
        if not glasses.connected:
            raise PhoneError("the Meta glasses are not connected to the phone")
        if kind == "meta_take_photo":
            url = await self._upload(self.media.read(self.media.photo), "image/jpeg")
            return {"result": "Photo from the glasses.", "images": [{"url": url, "format": "jpeg"}]}
        seconds = envelope.get("seconds")
        if kind == "meta_listen":
            url = await self._upload(self.media.read(self.media.speech), "audio/wav")
            text = f"Listened through the glasses ({seconds} s asked)."
            return {"result": text, "media": [{"url": url, "contentType": "audio/wav"}]}
        if kind == "meta_record_video":
            url = await self._upload(self.media.read(self.media.clip), "video/mp4")
            text = f"Video from the glasses ({seconds} s asked)."
            return {"result": text, "media": [{"url": url, "contentType": "video/mp4"}]}
        raise PhoneError(f"unknown envelope type {kind}")
