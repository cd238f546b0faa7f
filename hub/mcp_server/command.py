"""``tiny-hub mcp`` (the stdio bridge) and ``tiny-hub mcp token add|remove|list``."""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime
from typing import Any

from hub.config import Settings

TOKEN_ENV = "TINY_HUB_TOKEN"


def add_mcp_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp",
        parents=common,
        help="the hub as an MCP server on stdio, for Claude Desktop and other MCP clients",
        description="Serve the running hub's MCP server on stdin/stdout (what a desktop MCP "
        "client starts), or manage the tokens of named MCP clients.",
    )
    mcp.add_argument("--url", help="the hub's URL (default: the local hub)")
    mcp.add_argument("--token", help=f"a token (default: {TOKEN_ENV} or owner.token)")
    actions = mcp.add_subparsers(dest="mcp_action", metavar="ACTION")
    token = actions.add_parser(
        "token",
        parents=common,
        help="add, remove or list the tokens of named MCP clients",
        description="A named client gets a token of its own that opens /mcp only; it is shown "
        "once and kept hashed. Removing the client ends the token.",
    )
    token.add_argument("op", choices=("add", "remove", "list"))
    token.add_argument("name", nargs="?", help="the client's name (for add and remove)")


def mcp_command(settings: Settings, args: argparse.Namespace, url: str, token: str | None) -> int:
    """Returns the exit status; raises ``ValueError`` with a one-line message for a person."""
    if args.mcp_action == "token":
        return _token_command(settings, args.op, args.name)
    if not token:
        raise ValueError(
            f"no token: pass --token, set {TOKEN_ENV}, or start the hub once so it writes "
            f"{settings.owner_token_path}"
        )
    from hub.mcp_server.stdio import bridge

    asyncio.run(bridge(url, token))
    return 0


def when(stamp: float | None) -> str:
    """A stored time as a person reads it: local date and minute, or "never"."""
    if stamp is None:
        return "never"
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")


def _token_command(settings: Settings, op: str, name: str | None) -> int:
    from hub.mcp_server.clients import ClientRefused, McpClients
    from hub.store.migrations import open_database

    if op != "list" and not name:
        raise ValueError(f"tiny-hub mcp token {op} needs the client's name")
    db = open_database(settings.db_path)
    try:
        clients = McpClients(db)
        if op == "add":
            assert name is not None
            try:
                token = clients.add(name)
            except ClientRefused as exc:
                raise ValueError(str(exc)) from None
            print(f"token for {name} (shown once; it opens /mcp only):\n{token}")
        elif op == "remove":
            if not clients.remove(name or ""):
                raise ValueError(f"no MCP client named {name}")
            print(f"removed {name}; its token no longer works")
        else:
            for client in clients.list():
                added, used = when(client.created_at), when(client.last_used_at)
                print(f"{client.name}\tadded {added}\tlast used {used}")
    finally:
        db.conn.close()
    return 0
