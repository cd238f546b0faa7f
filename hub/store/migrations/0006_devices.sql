-- Devices: enrolled devices, the relay mailbox, the owner's event ring, media.
CREATE TABLE devices (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('endpoint', 'daemon', 'browser', 'cli')),
    platform TEXT NOT NULL DEFAULT '',
    capabilities_json TEXT NOT NULL DEFAULT '[]',
    url TEXT,
    secret TEXT,
    token_hash TEXT UNIQUE,
    lan_url TEXT,
    last_seen REAL,
    created_at REAL NOT NULL
);

CREATE UNIQUE INDEX devices_owner_name ON devices (owner, name);

-- Envelopes for dial-in devices and their replies. Dead-lettered after an hour undelivered;
-- replied rows are kept a day.
CREATE TABLE relay (
    id TEXT PRIMARY KEY,
    device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    delivered_at REAL,
    reply TEXT,
    replied_at REAL,
    dead_at REAL
);

CREATE INDEX relay_waiting ON relay (device_id, delivered_at, dead_at, created_at);

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    device_id TEXT,
    detail_json TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);

CREATE INDEX events_owner ON events (owner, id);

CREATE TABLE media (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    device_id TEXT,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    created_at REAL NOT NULL
);
