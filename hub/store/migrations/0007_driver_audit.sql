-- Every command the hub sent to a piece of hardware, for the owner to read.
CREATE TABLE driver_audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    driver TEXT NOT NULL,
    device_id TEXT NOT NULL,
    command TEXT NOT NULL
);
