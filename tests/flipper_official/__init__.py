"""The official Flipper Zero protobuf messages, as generated and published (see README.md)."""
