"""Dispatch: one table from command to the function that runs it, imported on use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

from hub import __version__
from hub.cli.parser import build_parser
from hub.core.collector import settled

EXIT_USAGE = 2

# command → "module:function" taking the parsed arguments and returning the exit status.
COMMANDS: dict[str, str] = {
    "hub": "hub.cli.serve:hub_with_tui",
    "serve": "hub.cli.serve:serve_command",
    "tui": "hub.cli.serve:tui_command",
    "chat": "hub.cli.chat:chat_command",
    "doctor": "hub.cli.maintenance:doctor_command",
    "config": "hub.cli.maintenance:config_command",
    "memory": "hub.cli.maintenance:memory_command",
    "confirm": "hub.cli.confirm:confirm_command",
    "pair": "hub.cli.maintenance:pair_command",
    "people": "hub.cli.people:people_command",
    "emulate": "hub.cli.emulate:emulate_command",
    "capture": "hub.cli.emulate:capture_command",
    "discover": "hub.cli.maintenance:discover_command",
    "cloud": "hub.cloud.cli:cloud_command",
    "export": "hub.cli.export:export_command",
    "mcp": "hub.cli.mcp:mcp_bridge",
    "jobs": "hub.cli.jobs:jobs_command",
    "telegram": "hub.cli.telegram:telegram_command",
    "tools": "hub.cli.tools:tools_command",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "hub"
    if command == "version":
        print(f"tiny-hub {__version__}")
        return 0
    try:
        with settled():
            run = load(COMMANDS[command])
        return run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not isinstance(exc, user_errors()):
            raise
        print(f"tiny-hub: {exc}", file=sys.stderr)
        return EXIT_USAGE


def load(target: str) -> Callable[..., int]:
    module, _, name = target.partition(":")
    function: Callable[..., int] = getattr(importlib.import_module(module), name)
    return function


# Errors a person can fix: one line, no traceback.
USER_ERRORS = (
    ("hub.config", "ConfigError"),
    ("hub.api.listen_socket", "StartError"),
    ("hub.store.migrations", "MigrationError"),
    ("hub.cli.common", "CliError"),
)


def user_errors() -> tuple[type[Exception], ...]:
    """The kinds of USER_ERRORS whose module is loaded: one never imported cannot have raised,
    and importing it here (the server imports the whole hub) would cost a second a command."""
    loaded = [(sys.modules.get(module), name) for module, name in USER_ERRORS]
    return tuple(getattr(module, name) for module, name in loaded if module is not None)
