-- MCP clients the owner named and gave a token of their own: only the token's hash is kept.
CREATE TABLE mcp_clients (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    last_used_at REAL
);
