-- Every person has a @login: how other people of the hub (and the community) name them in
-- messages, follows and profiles. Unique; the platform row has none, so nobody can address it.
ALTER TABLE users ADD COLUMN login TEXT;

UPDATE users SET login = 'owner' WHERE role = 'owner';

UPDATE users SET login = 'person-' || substr(id, 1, 8) WHERE role = 'member' AND id != 'platform';

CREATE UNIQUE INDEX users_login ON users (login) WHERE login IS NOT NULL;
