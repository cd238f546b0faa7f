"""The hub as an MCP server for other AI clients on this machine (see docs/mcp.md)."""
