"""The terminal UI: a Textual app that is a client of the hub's HTTP API, like a phone."""
