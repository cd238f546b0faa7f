-- What a microphone heard, as text: recordings made by the hub (its own microphone, a Nicla
-- Vision, a Nicla Voice) after speech-to-text, and transcripts devices report.
CREATE TABLE transcripts (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    device_id TEXT,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    language TEXT NOT NULL DEFAULT '',
    audio_s REAL NOT NULL DEFAULT 0,
    media_key TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX transcripts_by_owner ON transcripts (owner, created_at);
