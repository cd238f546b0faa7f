-- What a user chose: tools they turned off, and the model they prefer (never an API key).
CREATE TABLE disabled_tools (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tool TEXT NOT NULL,
    PRIMARY KEY (user_id, tool)
);

CREATE TABLE model_choices (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    model_id TEXT NOT NULL DEFAULT '',
    base_url TEXT NOT NULL DEFAULT '',
    max_tokens INTEGER,
    updated_at REAL NOT NULL
);
