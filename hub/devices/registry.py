"""Enrolled devices: who owns each, how it is reached, and whether it is there.

A dial-in device's token is shown once and kept hashed; it authenticates every call and
resolves the owner in one lookup, so the device acts only inside its owner's world. An endpoint
device's secret must be sent to it, so it is kept as given — and never returned by any route.
Presence is a heartbeat within the last 60 s; the clock is injectable so tests can let a
minute pass without waiting one.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hub.contracts import PRESENCE_WINDOW_S
from hub.core.errors import Refused
from hub.people.identity import hash_token, new_token
from hub.store.db import Database

Clock = Callable[[], float]


class AdjustableClock:
    """Wall-clock time plus an offset: the hub runs at offset 0, tests move it forward to let
    a minute or an hour pass at once."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


DIAL_IN_KINDS = ("daemon", "browser", "cli")
KINDS = ("endpoint", *DIAL_IN_KINDS)
NAME = re.compile(r"^[\w .'-]{1,64}$")
MAX_CAPABILITIES = 50


class DeviceError(Refused):
    """A device request that cannot be met; ``status`` is its HTTP answer."""

    status = 400


class DeviceAuthError(DeviceError):
    status = 401


class DeviceNameTaken(DeviceError):
    """The owner already has a device of that name: a conflict with what exists."""

    status = 409


class DeviceNotFound(DeviceError):
    status = 404


class DeviceUnreachable(DeviceError):
    """The device was asked and failed us (refused, timed out, rejected our credential)."""

    status = 502


@dataclass(frozen=True)
class Device:
    id: str
    owner: str
    name: str
    kind: str
    platform: str
    capabilities: tuple[str, ...]
    url: str | None
    lan_url: str | None
    last_seen: float | None
    created_at: float

    @property
    def dial_in(self) -> bool:
        return self.kind in DIAL_IN_KINDS

    def online(self, now: float) -> bool | None:
        """True/False for dial-in devices; None for endpoints (reachability is per call)."""
        if not self.dial_in:
            return None
        return self.last_seen is not None and now - self.last_seen <= PRESENCE_WINDOW_S

    def as_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "platform": self.platform,
            "capabilities": list(self.capabilities),
            "url": self.url,
            "lanUrl": self.lan_url,
            "last_seen": self.last_seen,
            "online": self.online(now),
            "created_at": self.created_at,
        }


def capabilities_of(raw: Any) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(c, str) and 0 < len(c) <= 64 for c in raw):
        raise DeviceError("capabilities must be an array of short strings")
    if len(raw) > MAX_CAPABILITIES:
        raise DeviceError(f"at most {MAX_CAPABILITIES} capabilities")
    return list(dict.fromkeys(raw))


class DeviceRegistry:
    def __init__(self, db: Database, clock: Clock = time.time) -> None:
        self._db = db
        self.clock = clock

    def enroll(
        self,
        owner: str,
        *,
        name: Any,
        kind: Any,
        platform: Any = "",
        capabilities: Any = None,
        url: str | None = None,
        secret: Any = None,
    ) -> tuple[Device, str | None]:
        """Enroll; a dial-in device's token is returned here and never again."""
        if not isinstance(name, str) or not NAME.match(name):
            raise DeviceError("name must be 1-64 letters, digits, spaces or . ' - _")
        if kind not in KINDS:
            raise DeviceError(f"kind must be one of {', '.join(KINDS)}")
        if not isinstance(platform, str) or len(platform) > 64:
            raise DeviceError("platform must be a short string")
        caps = capabilities_of(capabilities if capabilities is not None else [])
        if self._by_name(owner, name) is not None:
            raise DeviceNameTaken(f"you already have a device named {name}")
        token = None
        if kind == "endpoint":
            if not url:
                raise DeviceError("an endpoint device needs its https url")
            if not isinstance(secret, str) or not 8 <= len(secret) <= 512:
                raise DeviceError("an endpoint device needs a secret of 8-512 characters")
        else:
            if url is not None or secret is not None:
                raise DeviceError("url and secret are for endpoint devices only")
            token = new_token()
        device_id = "dev_" + uuid.uuid4().hex[:16]
        self._db.table("devices").insert(
            {
                "id": device_id,
                "owner": owner,
                "name": name,
                "kind": kind,
                "platform": platform,
                "capabilities_json": json.dumps(caps),
                "url": url,
                "secret": secret if kind == "endpoint" else None,
                "token_hash": hash_token(token) if token else None,
                "created_at": self.clock(),
            }
        )
        return self.get(owner, device_id), token

    def adopt(self, owner: str, device_id: str) -> str:
        """A new token for a dial-in device the caller owns (the old one stops working)."""
        device = self.get(owner, device_id)
        if not device.dial_in:
            raise DeviceError("endpoint devices have no token; update their secret instead")
        token = new_token()
        self._db.execute(
            "UPDATE devices SET token_hash = ? WHERE id = ?", [hash_token(token), device.id]
        )
        return token

    def get(self, owner: str, device_id: str) -> Device:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM devices WHERE id = ? AND owner = ?", [device_id, owner]
        ).fetchone()
        if row is None:  # another owner's device is "not found" too
            raise DeviceNotFound(f"no device {device_id}")
        return _device(row)

    def by_name(self, owner: str, name: str) -> Device:
        device = self._by_name(owner, name)
        if device is None:
            names = ", ".join(d.name for d in self.list(owner)) or "none enrolled"
            raise DeviceNotFound(f"no device named {name} (yours: {names})")
        return device

    def list(self, owner: str) -> list[Device]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM devices WHERE owner = ? ORDER BY name", [owner]
        )
        return [_device(row) for row in rows]

    def remove(self, owner: str, device_id: str) -> None:
        """Remove a device; an account token its pairing gave (a person's phone) ends too."""
        self.get(owner, device_id)
        with self._db.atomic():
            self._db.execute("DELETE FROM tokens WHERE device_id = ?", [device_id])
            self._db.execute("DELETE FROM devices WHERE id = ?", [device_id])

    def secret_of(self, device: Device) -> str:
        row = self._db.execute("SELECT secret FROM devices WHERE id = ?", [device.id]).fetchone()
        return str(row[0] or "")

    def authenticate(self, body: Any) -> Device:
        """``{deviceId, token}`` from a dial-in call → the device; 401 for anything else."""
        if not isinstance(body, dict):
            raise DeviceError("body must be a JSON object with deviceId and token")
        device_id, token = body.get("deviceId"), body.get("token")
        if not isinstance(device_id, str) or not isinstance(token, str) or not token:
            raise DeviceAuthError("deviceId and token are required")
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM devices WHERE id = ? AND token_hash = ?",
            [device_id, hash_token(token)],
        ).fetchone()
        if row is None:
            raise DeviceAuthError("unknown device or wrong token")
        return _device(row)

    def heartbeat(self, device: Device, capabilities: Any = None, lan_url: Any = None) -> Device:
        """Presence for the next 60 s. Capabilities sent replace the list; none leaves it."""
        updates: dict[str, Any] = {"last_seen": self.clock()}
        if capabilities is not None:
            updates["capabilities_json"] = json.dumps(capabilities_of(capabilities))
        if lan_url is not None:
            if not isinstance(lan_url, str) or not lan_url.startswith(("http://", "https://")):
                raise DeviceError("lanUrl must be an http(s) URL")
            updates["lan_url"] = lan_url
        self._db.table("devices").update(device.id, updates)
        return self.get(device.owner, device.id)

    def _by_name(self, owner: str, name: str) -> Device | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM devices WHERE owner = ? AND lower(name) = lower(?)",
            [owner, name],
        ).fetchone()
        return _device(row) if row else None


_COLUMNS = "id, owner, name, kind, platform, capabilities_json, url, lan_url, last_seen, created_at"


def _device(row: Sequence[Any]) -> Device:
    return Device(
        id=row[0],
        owner=row[1],
        name=row[2],
        kind=row[3],
        platform=row[4],
        capabilities=tuple(json.loads(row[5])),
        url=row[6],
        lan_url=row[7],
        last_seen=row[8],
        created_at=row[9],
    )
