-- Forged tools: each person's JavaScript tools, mounted as my_<name>. Their code is public (it
-- shows on the person's profile and in the marketplace). A tool installed from GitHub keeps the
-- raw URL it came from (pinned by commit SHA); one installed from the marketplace keeps the id of
-- the tool it copied.
CREATE TABLE forged_tools (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    input_schema TEXT NOT NULL,
    code TEXT NOT NULL,
    code_sha256 TEXT NOT NULL,
    source_url TEXT NOT NULL DEFAULT '',
    copied_from INTEGER REFERENCES forged_tools (id) ON DELETE SET NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (user_id, name)
);

CREATE INDEX forged_tools_source ON forged_tools (source_url) WHERE source_url != '';

-- The SHA-256 of every tool file fetched from GitHub, by its pinned URL, as first seen: a file at
-- a commit never changes, so a different hash later is refused.
CREATE TABLE tool_files (
    url TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    first_seen REAL NOT NULL
);

-- GitHub owners a person trusts to install tools from, beyond the hub's allowlist.
CREATE TABLE trusted_tool_owners (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (user_id, owner)
);
