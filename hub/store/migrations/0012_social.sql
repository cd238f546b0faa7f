-- Tinys that know each other.
--
-- universe_index: which tinys have a vector in the universe's Chroma collection, and the
-- updated_at of the version embedded. SQLite stays the source of truth: a tiny that is public
-- but missing here (a crash before its vector was written), or here but private or deleted (a
-- crash before its vector was dropped), is put right at the next start without opening Chroma
-- when nothing is off. No foreign key: a deleted tiny's row must outlive it until its vector
-- is gone.
CREATE TABLE universe_index (
    name TEXT PRIMARY KEY,
    indexed_at REAL NOT NULL
);

-- The social graph reuses the memory graph's edge table (src -> rel -> dst between user:<id>
-- and tiny:<name> nodes) with one platform owner, as the cloud does. edge.owner references a
-- user, so the platform is a user row that holds no token and can never sign in; keeping its
-- edges apart from every person's means no person's memory_graph or memory_conflicts sees them.
INSERT OR IGNORE INTO users (id, name, role, created_at) VALUES ('platform', 'platform', 'member', 0);

CREATE INDEX edge_social ON edge (owner, rel, src, dst) WHERE valid_to IS NULL;
