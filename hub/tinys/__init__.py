"""Tinys: the companions a chat can be with (records now; the universe and OpenAPI tools later)."""
