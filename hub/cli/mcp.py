"""``tiny-hub mcp``: apart from the serve commands, so that it loads no more than a client of
the running hub needs."""

from __future__ import annotations

import argparse

from hub.cli.common import CliError, local_url, settings_of, token


def mcp_bridge(args: argparse.Namespace) -> int:
    """``tiny-hub mcp``: the running hub's MCP server on stdio, or its client tokens."""
    from hub.mcp_server.command import mcp_command

    settings = settings_of(args)
    try:
        return mcp_command(
            settings, args, local_url(settings, args.url), token(settings, args.token)
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
