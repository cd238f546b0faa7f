-- What a chat turn asked to do that only the person may carry out (forgetting many facts,
-- deleting a job, a forged tool, a bot): the tool proposes, the person confirms from a client
-- with their own token. params_json is what the action needs; items_json what the person is
-- shown.
CREATE TABLE pending_actions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    action TEXT NOT NULL,
    title TEXT NOT NULL,
    items_json TEXT NOT NULL,
    params_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    answered_at REAL,
    answer TEXT CHECK (answer IN ('confirmed', 'declined')),
    outcome TEXT NOT NULL DEFAULT ''
);

CREATE INDEX pending_actions_user ON pending_actions (user_id, created_at);
