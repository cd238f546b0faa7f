-- The community: reputation points, the daily chat allowance, and the social graph's readers.
--
-- reputation: standing, never money, in its own table. Every point is a gesture of someone
-- else (ref names who made it), and UNIQUE (user_id, kind, ref) with ON CONFLICT DO NOTHING
-- makes the award idempotent: follow, unfollow, follow again pays once.
CREATE TABLE reputation (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('follow_received', 'mutual_follow')),
    ref TEXT NOT NULL,
    points INTEGER NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (user_id, kind, ref)
);

-- chat_allowance: chat requests used per caller (user:<id>, or addr:<address> for anonymous
-- callers) per UTC day; a new day is a new row, and rows older than yesterday are dropped.
CREATE TABLE chat_allowance (
    caller TEXT NOT NULL,
    day TEXT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (caller, day)
);

-- Who follows a node, what a person's sync sends, and whether the consults changed since the
-- trust ranking was computed: the social graph read by its far end and by revision.
CREATE INDEX edge_social_dst ON edge (owner, rel, dst) WHERE valid_to IS NULL;
CREATE INDEX edge_social_rev ON edge (owner, src, rev);
CREATE INDEX edge_rel_rev ON edge (owner, rel, rev);
