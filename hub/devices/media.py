"""Media devices upload (photos, clips, recordings), kept in the data dir, served to the owner.

Only types from an allowlist are kept, and the type served is the one recorded here, so a file
can never be served as something it did not arrive as.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from pathlib import Path
from typing import Any

from hub.devices.registry import Clock, Device, DeviceError, DeviceNotFound
from hub.store.db import Database

MAX_MEDIA_BYTES = 8 * 1024 * 1024
ALLOWED_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/webp",
        "image/gif",
        "audio/wav",
        "audio/mpeg",
        "audio/ogg",
        "video/mp4",
    }
)
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp", "image/gif": "gif"}


class MediaStore:
    def __init__(self, db: Database, folder: Path, clock: Clock) -> None:
        self._db = db
        self._folder = folder
        self._clock = clock

    def put_base64(self, device: Device, data: Any, content_type: Any) -> str:
        if not isinstance(content_type, str) or content_type.lower() not in ALLOWED_TYPES:
            raise DeviceError("contentType must be one of " + ", ".join(sorted(ALLOWED_TYPES)))
        if not isinstance(data, str) or not data:
            raise DeviceError("data must be a base64 string")
        if len(data) > (MAX_MEDIA_BYTES * 4) // 3 + 4:
            raise DeviceError(f"media is over {MAX_MEDIA_BYTES // (1024 * 1024)} MB")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise DeviceError("data is not valid base64") from None
        return self.put(device.owner, device.id, raw, content_type.lower())

    def put(self, owner: str, device_id: str | None, raw: bytes, content_type: str) -> str:
        if len(raw) > MAX_MEDIA_BYTES:
            raise DeviceError(f"media is over {MAX_MEDIA_BYTES // (1024 * 1024)} MB")
        if content_type not in ALLOWED_TYPES:
            raise DeviceError(f"{content_type} is not a media type this hub keeps")
        key = secrets.token_urlsafe(18)
        self._folder.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name and renamed only once its row exists: a crash or a
        # failed insert leaves no file that looks like media (and `get` needs both).
        partial = self._folder / f".{key}.part"
        try:
            partial.write_bytes(raw)
            self._db.table("media").insert(
                {
                    "key": key,
                    "owner": owner,
                    "device_id": device_id,
                    "content_type": content_type,
                    "size": len(raw),
                    "created_at": self._clock(),
                }
            )
            partial.rename(self._folder / key)
        except BaseException:
            partial.unlink(missing_ok=True)
            self._db.execute("DELETE FROM media WHERE key = ?", [key])
            raise
        return key

    def keys(self, owner: str) -> list[str]:
        """Every media key of ``owner`` (newest first)."""
        rows = self._db.execute(
            "SELECT key FROM media WHERE owner = ? ORDER BY created_at DESC", [owner]
        ).fetchall()
        return [str(r[0]) for r in rows]

    def delete_files(self, keys: list[str]) -> None:
        """Delete the files of media whose rows are gone (a person purged with their data)."""
        for key in keys:
            (self._folder / key).unlink(missing_ok=True)

    def get(self, owner: str, key: str) -> tuple[bytes, str]:
        row = self._db.execute(
            "SELECT content_type FROM media WHERE key = ? AND owner = ?", [key, owner]
        ).fetchone()
        if row is None or not (self._folder / key).is_file():
            raise DeviceNotFound(f"no media {key}")
        return (self._folder / key).read_bytes(), str(row[0])
