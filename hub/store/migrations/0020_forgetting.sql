-- Forgetting: each act of forgetting (one fact, the facts about something, or everything)
-- closes facts and the links touching them, and remembers what it closed, so the person can
-- bring it back until delete_after; after that the hub's housekeeping deletes those facts for
-- good. Times are the memory's ISO-8601 UTC text, sortable as text.
CREATE TABLE forgetting (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope TEXT NOT NULL CHECK (scope IN ('fact', 'about', 'all')),
    about TEXT NOT NULL DEFAULT '',
    forgotten_at TEXT NOT NULL,
    delete_after TEXT NOT NULL,
    restored_at TEXT
);

CREATE INDEX forgetting_owner ON forgetting (owner, forgotten_at);
CREATE INDEX forgetting_due ON forgetting (delete_after) WHERE restored_at IS NULL;

CREATE TABLE forgotten_fact (
    forgetting TEXT NOT NULL REFERENCES forgetting (id) ON DELETE CASCADE,
    fact TEXT NOT NULL REFERENCES entity (id) ON DELETE CASCADE,
    PRIMARY KEY (forgetting, fact)
);

CREATE INDEX forgotten_fact_fact ON forgotten_fact (fact);

CREATE TABLE forgotten_edge (
    forgetting TEXT NOT NULL REFERENCES forgetting (id) ON DELETE CASCADE,
    edge INTEGER NOT NULL REFERENCES edge (id) ON DELETE CASCADE,
    PRIMARY KEY (forgetting, edge)
);
