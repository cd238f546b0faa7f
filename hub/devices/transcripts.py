"""Transcripts: what a microphone heard, kept as text with a link to the recording, and the
one path every recording takes (media store → speech-to-text → transcript → event ring).

Each is also announced on the owner's event ring as ``contracts.TRANSCRIPT_EVENT`` (the one
transcript kind the contract's ring allows), so the TUI and the phones see it arrive.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import asdict, dataclass
from typing import Any

from hub.contracts import TRANSCRIPT_EVENT
from hub.devices.events import EventRing
from hub.devices.media import MediaStore
from hub.devices.registry import Clock, DeviceNotFound
from hub.store.db import Database
from media.soundtrack import wav_of
from media.speech import SpeechEngine, Transcript

WAV_TYPE = "audio/wav"
PREVIEW_CHARS = 280


@dataclass(frozen=True)
class TranscriptRecord:
    id: str
    source: str  # the driver that recorded it (microphone, ...) or "device" (its own report)
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


async def transcribe_recording(
    speech: SpeechEngine,
    media: MediaStore,
    transcripts: TranscriptStore,
    *,
    owner: str,
    source: str,
    device_id: str | None,
    wav: bytes,
) -> tuple[TranscriptRecord, Transcript]:
    """Keep the recording, transcribe it, keep the transcript (which announces it).

    The transcription runs first: a recording speech cannot read is refused before anything is
    stored, so a failure leaves nothing half-kept.
    """
    heard = await speech.transcribe(wav, source=source)
    key = media.put(owner, device_id, wav, WAV_TYPE)
    record = transcripts.add(
        owner,
        source,
        heard.text,
        device_id=device_id,
        language=heard.language,
        audio_s=heard.audio_s,
        media_key=key,
    )
    return record, heard


async def transcribe_media(
    speech: SpeechEngine, data: bytes, content_type: str, *, source: str = ""
) -> Transcript:
    """What was said in a recording or a clip of any type with sound (a phone's WAV, the MP4
    its glasses filmed). Raises AudioError for one without readable sound, SpeechUnavailable
    when the model cannot be had."""
    wav = await asyncio.to_thread(wav_of, data, content_type)
    return await speech.transcribe(wav, source=source)
