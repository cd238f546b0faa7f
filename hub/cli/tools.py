"""``tiny-hub tools list|forge|install|enable|disable|run``: the companion's tools by hand, over
``/api/tools`` (the same checks as ``create_tool``, ``install_tool`` and ``manage_tools``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hub.cli.common import CliError
from hub.cli.over_http import Asker, over_http

TIERS = ("built-in", "forged", "dynamic")


def tools_command(args: argparse.Namespace) -> int:
    actions = {
        "list": _list,
        "forge": _forge,
        "install": _install,
        "enable": _switch,
        "disable": _switch,
        "run": _run,
    }
    return over_http(args, lambda ask: actions[args.tools_action](ask, args))


async def _list(ask: Asker, args: argparse.Namespace) -> int:
    listed = await ask("GET", "/api/tools")
    for tier in TIERS:
        names = [_shown(t) for t in listed["tools"] if t["tier"] == tier]
        if names:
            print(f"{tier} ({len(names)}): {', '.join(names)}")
    for forged in listed["forged"]:
        print(f"  {forged['name']}: {forged['description']}")
    print(f"trusted GitHub owners: {', '.join(listed['trusted']) or 'none'}")
    return 0


def _shown(tool: dict[str, Any]) -> str:
    return str(tool["name"]) + ("" if tool["on"] else " (off)")


async def _forge(ask: Asker, args: argparse.Namespace) -> int:
    saved = (await ask("POST", "/api/tools", body=tool_file(args.file)))["tool"]
    print(f"forged {saved['name']}: it can be called from the next message")
    return 0


def tool_file(name: str) -> dict[str, Any]:
    """A tool file, as install_tool reads one from GitHub: {name, description, code,
    inputSchema}."""
    try:
        raw = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {name}: {exc}") from None
    try:
        loaded = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"{name} is not JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise CliError(f"{name} is not a JSON object {{name, description, code, inputSchema}}")
    return loaded


async def _install(ask: Asker, args: argparse.Namespace) -> int:
    saved = (await ask("POST", "/api/tools/install", body={"url": args.file_url}))["tool"]
    print(f"installed {saved['name']} from {saved.get('sourceUrl', args.file_url)}")
    return 0


async def _switch(ask: Asker, args: argparse.Namespace) -> int:
    on = args.tools_action == "enable"
    tool = await ask("PATCH", f"/api/tools/{quote(args.name, safe='')}", body={"on": on})
    print(f"{tool['name']} is {'on' if tool['on'] else 'off'} from the next message")
    return 0


async def _run(ask: Asker, args: argparse.Namespace) -> int:
    try:
        given = json.loads(args.input)
    except json.JSONDecodeError as exc:
        raise CliError(f"the input is not JSON: {exc}") from None
    answer = await ask("POST", f"/api/tools/{quote(args.name, safe='')}/run", body={"input": given})
    print(answer["result"])
    return 0 if answer["ok"] else 1
