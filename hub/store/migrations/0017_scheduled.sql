-- What the hub does at a time without the person: jobs (a chat turn run as them, on a schedule
-- or once) and alerts (a notice at a time). Local to this hub and never synced, so two hubs
-- sharing a cloud cannot both run one. `next_run` NULL means done (a one-shot that ran).
CREATE TABLE scheduled (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('job', 'alert')),
    -- '*/5m', '*/2h', 'daily@07:00' (UTC); '' for a one-shot
    every TEXT NOT NULL DEFAULT '',
    -- a job: what the turn is asked; an alert: the notice's body
    text TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    tiny TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    next_run REAL,
    last_run REAL,
    last_status TEXT NOT NULL DEFAULT '' CHECK (last_status IN ('', 'ok', 'error')),
    last_error TEXT NOT NULL DEFAULT '',
    runs INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX scheduled_due ON scheduled (next_run) WHERE next_run IS NOT NULL;

CREATE INDEX scheduled_owner ON scheduled (owner, kind);
