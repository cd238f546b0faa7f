-- Pairing a phone. An offer's 6-digit code is kept only as an HMAC keyed by
-- pairing.key in the data dir, so hub.db alone (a backup, a copied file) cannot be searched for
-- it. Offers live in the database, not in memory, because `tiny-hub pair` may run in another
-- process than the hub that answers POST /api/pair; both share this file.
CREATE TABLE pairing_offers (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    -- wrong codes tried while this offer was open; too many voids it
    wrong INTEGER NOT NULL DEFAULT 0,
    voided_at REAL,
    void_reason TEXT,
    used_at REAL,
    used_from TEXT,
    -- the device the code enrolled; kept after the device is removed, as a record
    device_id TEXT
);

CREATE INDEX pairing_offers_code ON pairing_offers (code_hash);
CREATE INDEX pairing_offers_device ON pairing_offers (device_id);

-- Wrong codes per source address: five within the window lock that address for a minute.
CREATE TABLE pairing_throttle (
    address TEXT PRIMARY KEY,
    wrong INTEGER NOT NULL DEFAULT 0,
    window_start REAL NOT NULL,
    locked_until REAL
);
