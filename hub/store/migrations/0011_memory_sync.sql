-- Memory sync: every change to a fact or a link is stamped with a revision
-- from one counter, taken inside the writing transaction. Writers are serialised (BEGIN
-- IMMEDIATE), so revisions grow in commit order and "everything after revision N" never skips
-- a row that committed late -- which a wall-clock stamp could.
ALTER TABLE entity ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE edge ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE INDEX entity_owner_rev ON entity (owner, rev);
CREATE INDEX edge_owner_rev ON edge (owner, rev);

-- Rows written before this migration are revision 1, so "after 0" means "everything".
UPDATE entity SET rev = 1;
UPDATE edge SET rev = 1;
CREATE TABLE memory_clock (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    rev INTEGER NOT NULL
);
INSERT INTO memory_clock (id, rev) VALUES (1, 1);

-- How far this hub has pushed its changes to a cloud and pulled the cloud's, per cloud and
-- person: pushed is a local revision, pulled is the cloud's.
CREATE TABLE memory_sync_cursor (
    cloud TEXT NOT NULL,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    pushed INTEGER NOT NULL DEFAULT 0,
    pulled INTEGER NOT NULL DEFAULT 0,
    synced_at REAL,
    PRIMARY KEY (cloud, owner)
);
