"""The tiny HTTP API (aiohttp): one module per resource, assembled by ``app.create_app``."""
