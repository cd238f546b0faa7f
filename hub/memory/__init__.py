"""Memory: the bitemporal fact graph (SQLite, the source of truth) and its vectors (Chroma)."""
