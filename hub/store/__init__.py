"""SQLite: one connection factory (WAL), numbered migrations, a schema-version table."""
