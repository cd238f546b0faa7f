-- Direct messages between the people of this hub, and the Telegram bots they connect.
--
-- messages: one row per message. tiny names the tiny the sender addressed (a message to a tiny
-- reaches its owner), empty when they wrote to the person. read_at stays NULL until the
-- recipient opens the conversation. The two indexes serve the inbox's two questions: what came
-- in (and what is unread) for a person, and one conversation, each in id order.
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    sender_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    recipient_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tiny TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    read_at REAL
);

CREATE INDEX messages_in ON messages (recipient_id, sender_id, id);
CREATE INDEX messages_out ON messages (sender_id, recipient_id, id);
CREATE INDEX messages_unread ON messages (recipient_id) WHERE read_at IS NULL;

-- telegram_bots: one bot per person, answering as one tiny. The token is not here: it is kept
-- in a 0600 file in the data dir, so a copied database never carries a working bot token.
-- update_offset is the next getUpdates offset, so an update is handled once across restarts;
-- state and detail are what the poller last found (polling, offline...), for the status.
CREATE TABLE telegram_bots (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    tiny TEXT NOT NULL,
    bot_username TEXT NOT NULL DEFAULT '',
    enabled INTEGER NOT NULL DEFAULT 1,
    update_offset INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'starting',
    detail TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);

-- telegram_chats: the chats a bot has heard from. Only allowed ones are answered; a refused
-- chat is remembered (with who wrote) so its person can allow it by id.
CREATE TABLE telegram_chats (
    user_id TEXT NOT NULL REFERENCES telegram_bots (user_id) ON DELETE CASCADE,
    chat_id INTEGER NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    allowed INTEGER NOT NULL DEFAULT 0,
    last_seen REAL NOT NULL,
    PRIMARY KEY (user_id, chat_id)
);
