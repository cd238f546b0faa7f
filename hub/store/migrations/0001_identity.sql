-- People who use this hub, and the tokens that say who is calling.
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at REAL NOT NULL
);

CREATE UNIQUE INDEX users_one_owner ON users (role) WHERE role = 'owner';

-- Tokens are random; only their SHA-256 is kept, so a copied database speaks for nobody.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL
);

CREATE INDEX tokens_user ON tokens (user_id);
