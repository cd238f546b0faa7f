"""Tinys: the companions a chat can be with (records; the universe, where they find each
other; the social graph of who consulted whom; OpenAPI operations as tools)."""
