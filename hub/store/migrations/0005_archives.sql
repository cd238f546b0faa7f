-- Archives: owner-private, full-fidelity snapshots of a conversation (credentials redacted).
CREATE TABLE archives (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    body_json TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    created_at REAL NOT NULL
);

CREATE INDEX archives_owner ON archives (owner_id, created_at);

-- Shares: the public, sanitised counterpart (title and message text only), readable by anyone
-- with the id. A share is its own copy: deleting the archive it came from leaves it readable.
CREATE TABLE shares (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    archive_id TEXT REFERENCES archives (id) ON DELETE SET NULL,
    title TEXT NOT NULL,
    body_json TEXT NOT NULL,
    created_at REAL NOT NULL
);

CREATE INDEX shares_owner ON shares (owner_id, created_at);
