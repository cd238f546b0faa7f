"""Transcripts: what a microphone heard, kept as text with a link to the recording.

Each is also announced on the owner's event ring as ``nicla_transcript`` (the one transcript
kind the contract's ring allows), so the TUI and the phones see it arrive.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass
from typing import Any

from hub.devices.events import EventRing
from hub.devices.registry import Clock, DeviceNotFound
from hub.store.db import Database

TRANSCRIPT_EVENT = "nicla_transcript"
PREVIEW_CHARS = 280


@dataclass(frozen=True)
class TranscriptRecord:
    id: str
    source: str  # nicla_voice, nicla_vision, microphone, or a device's own report
    device_id: str | None
    text: str
    language: str
    audio_s: float
    media_key: str | None
    created_at: float

    def as_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["media"] = f"/media/{self.media_key}" if self.media_key else None
        return found


_COLUMNS = "id, source, device_id, text, language, audio_s, media_key, created_at"


class TranscriptStore:
    def __init__(self, db: Database, events: EventRing, clock: Clock) -> None:
        self._db = db
        self._events = events
        self._clock = clock

    def add(
        self,
        owner: str,
        source: str,
        text: str,
        *,
        device_id: str | None = None,
        language: str = "",
        audio_s: float = 0.0,
        media_key: str | None = None,
        announce: bool = True,
    ) -> TranscriptRecord:
        """Keep a transcript; ``announce`` puts it on the event ring (off when the caller is
        publishing the device's own event already)."""
        record = TranscriptRecord(
            f"tr_{secrets.token_hex(8)}",
            source,
            device_id,
            text,
            language,
            round(audio_s, 3),
            media_key,
            self._clock(),
        )
        self._db.execute(
            f"INSERT INTO transcripts (owner, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [owner, *asdict(record).values()],
        )
        if announce:
            self._announce(owner, record)
        return record

    def _announce(self, owner: str, record: TranscriptRecord) -> None:
        self._events.publish(
            owner,
            TRANSCRIPT_EVENT,
            record.device_id,
            {
                "id": record.id,
                "source": record.source,
                "text": record.text[:PREVIEW_CHARS],
                "audio_s": record.audio_s,
            },
        )

    def recent(
        self, owner: str, limit: int = 20, source: str | None = None
    ) -> list[TranscriptRecord]:
        where, args = "owner = ?", [owner]
        if source:
            where += " AND source = ?"
            args.append(source)
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM transcripts WHERE {where} ORDER BY created_at DESC LIMIT ?",
            [*args, limit],
        ).fetchall()
        return [TranscriptRecord(*row) for row in rows]

    def get(self, owner: str, transcript_id: str) -> TranscriptRecord:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM transcripts WHERE owner = ? AND id = ?",
            [owner, transcript_id],
        ).fetchone()
        if row is None:
            raise DeviceNotFound(f"no transcript {transcript_id}")
        return TranscriptRecord(*row)
