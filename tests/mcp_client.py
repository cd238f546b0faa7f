"""An MCP client of the hub, written with the ``mcp`` package (HTTP, or the stdio command)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from hub.api.server import RunningServer


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(server: RunningServer, *extra: str) -> AsyncIterator[ClientSession]:
    """``tiny-hub mcp`` started as a desktop client starts it, against the running hub."""
    async with (
        stdio_client(stdio_params(server, "--url", server.url, *extra)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def stdio_params(server: RunningServer, *args: str) -> StdioServerParameters:
    """The command a desktop client's config names: ``tiny-hub mcp`` with the hub's data dir
    (where the owner's token is read from)."""
    env = {**os.environ, "TINY_HUB_HOME": str(server.hub.settings.home)}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hub.cli", "mcp", *args], env=env
    )


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]
