-- The memory graph: facts and typed links between them.
-- Bitemporal: a row is current while valid_to IS NULL; closing stamps valid_to, and nothing is
-- deleted except by "clear all". vec_id is NULL until the fact's vector is in Chroma.
CREATE TABLE entity (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL DEFAULT 'fact'
        CHECK (kind IN ('fact', 'person', 'tiny', 'project', 'concept')),
    label TEXT NOT NULL,
    attrs_json TEXT NOT NULL DEFAULT '{}',
    vec_id TEXT,
    visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'public')),
    valid_from TEXT NOT NULL,
    valid_to TEXT
);

CREATE INDEX entity_owner_current ON entity (owner, valid_to, valid_from);
CREATE INDEX entity_unindexed ON entity (owner) WHERE vec_id IS NULL AND valid_to IS NULL;

CREATE TABLE edge (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    src TEXT NOT NULL,
    rel TEXT NOT NULL,
    dst TEXT NOT NULL,
    scope TEXT NOT NULL DEFAULT '',
    weight REAL NOT NULL DEFAULT 1.0,
    confidence REAL NOT NULL DEFAULT 1.0,
    visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'public')),
    valid_from TEXT NOT NULL,
    valid_to TEXT
);

CREATE INDEX edge_src ON edge (src, rel, valid_to);
CREATE INDEX edge_dst ON edge (dst, rel, valid_to);
CREATE INDEX edge_owner ON edge (owner, valid_to);
