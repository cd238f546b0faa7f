-- Tiny records: who answers a chat (the create_ai / modify_ai fields).
CREATE TABLE tinys (
    name TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users (id),
    system_prompt TEXT NOT NULL DEFAULT '',
    system_knowledge TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL DEFAULT '',
    worker TEXT NOT NULL DEFAULT '',
    skills_json TEXT NOT NULL DEFAULT '[]',
    mcp_servers_json TEXT NOT NULL DEFAULT '[]',
    visibility TEXT NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private')),
    key_hash TEXT,
    hook TEXT NOT NULL DEFAULT '',
    hero TEXT NOT NULL DEFAULT '',
    logo TEXT NOT NULL DEFAULT '',
    theme TEXT NOT NULL DEFAULT '',
    tagline TEXT NOT NULL DEFAULT '',
    chips_json TEXT NOT NULL DEFAULT '[]',
    intro_vibe TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);

CREATE INDEX tinys_owner ON tinys (owner_id);
