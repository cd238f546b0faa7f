-- The cloud outbox: every call the hub owes the cloud (replies, events, task
-- results, media) is stored here before anything is acknowledged, so an outage, a restart or a
-- SIGKILL loses nothing. `seq` is the delivery order; `idem_key` travels to the cloud as
-- `idempotencyKey`, so a call resent after a crash between "the cloud accepted" and "we marked it
-- delivered" is recognised there and not done twice.
CREATE TABLE cloud_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    body_json TEXT NOT NULL,
    idem_key TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at REAL,
    -- the cloud's JSON answer (a media upload's url is in it)
    answer_json TEXT,
    -- a 4xx other than 401/403: this item is wrong and stays wrong; kept with its reason
    failed_at REAL,
    failure TEXT
);

CREATE INDEX cloud_outbox_pending ON cloud_outbox (seq)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

-- The receiving side of the same promise: a dial-in call that carried an idempotencyKey stores
-- its JSON answer here, and a replay with the same (device, key) gets that answer back without
-- the work being done again. Kept a day.
CREATE TABLE idempotency_keys (
    device_id TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    route TEXT NOT NULL,
    answer_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (device_id, idem_key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
