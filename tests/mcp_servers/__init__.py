"""Small MCP servers the tests mount: real servers from the ``mcp`` package, over stdio and HTTP."""
