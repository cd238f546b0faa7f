"""Serve an MCP server's ASGI app (streamable HTTP or SSE) on 127.0.0.1 inside the test's loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from harness.waits import until

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Any, Any], Awaitable[None]]


def recording(app: Asgi, seen: list[dict[str, str]]) -> Asgi:
    """The app, noting the headers of every HTTP request it gets."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    return wrapped


@asynccontextmanager
async def serving(app: Asgi) -> AsyncIterator[str]:
    """``http://127.0.0.1:<port>`` while the app is served."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await until(lambda: server.started or task.done(), what="the MCP server started")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
