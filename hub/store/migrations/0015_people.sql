-- A household on one hub: the owner adds and removes people. A person removed with their data
-- kept stays as a row (their memory, tinys and archives still reference it) but holds no token
-- and never signs in again; removed with their data purged, the row and everything on it go.
ALTER TABLE users ADD COLUMN removed_at REAL;

-- An account token a person's phone got from a pairing code names that phone, so unpairing the
-- phone ends both of its tokens (the dial-in one and this one).
ALTER TABLE tokens ADD COLUMN device_id TEXT;

CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL;

-- Money, switched off unless payments.enabled. A balance is SUM(delta_micro) of a person's rows
-- (micro-dollars: 1 000 000 = $1). Only money enters this table; reputation never does, or a
-- point would become spendable. One row per (user, kind, ref): confirming a quote twice, or a
-- retried request, adds nothing the second time.
CREATE TABLE ledger (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    delta_micro INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'sent', 'received', 'bought', 'sold', 'fee')),
    ref TEXT NOT NULL,
    counterparty TEXT,
    memo TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    UNIQUE (user_id, kind, ref)
);

CREATE INDEX ledger_user ON ledger (user_id, id);

-- What one message to a tiny costs (0: free, the same as no row).
CREATE TABLE tiny_prices (
    tiny TEXT PRIMARY KEY REFERENCES tinys (name) ON DELETE CASCADE,
    price_micro INTEGER NOT NULL CHECK (price_micro >= 0),
    updated_at REAL NOT NULL
);

-- A payment the agent proposed and only the person can confirm, from a client, with their own
-- token. ``kind`` transfer: to another person by @login; message: one paid message to a
-- priced tiny, whose confirmed quote id is the receipt a chat turn presents in
-- x-tiny-x402-settled (spent once).
CREATE TABLE payment_quotes (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('transfer', 'message')),
    payee TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tiny TEXT,
    amount_micro INTEGER NOT NULL CHECK (amount_micro > 0),
    fee_micro INTEGER NOT NULL DEFAULT 0 CHECK (fee_micro >= 0),
    memo TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    confirmed_at REAL,
    spent_at REAL
);

CREATE INDEX payment_quotes_user ON payment_quotes (user_id, created_at);
