"""The flags of ``tiny-hub jobs``, ``telegram`` and ``tools``: what a person can ask the
companion to set up, done by hand over the hub's HTTP API (nothing here imports what the
commands need to run)."""

from __future__ import annotations

import argparse
from typing import Any

from hub.scheduler.when import FORMS

TOKEN_ENV = "TINY_HUB_TOKEN"


def _client_options() -> argparse.ArgumentParser:
    """``--url`` and ``--token``, on the command and on each action."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--url", default=argparse.SUPPRESS, help="a hub's URL (default: the local hub)"
    )
    options.add_argument(
        "--token", default=argparse.SUPPRESS, help=f"a token (default: {TOKEN_ENV} or owner.token)"
    )
    return options


def _command(sub: Any, name: str, common: list[argparse.ArgumentParser], **text: str) -> Any:
    parents = [*common, _client_options()]
    command = sub.add_parser(name, parents=parents, **text)
    actions = command.add_subparsers(dest=f"{name}_action", metavar="ACTION", required=True)

    def action(verb: str, help: str, description: str = "") -> argparse.ArgumentParser:
        added: argparse.ArgumentParser = actions.add_parser(
            verb,
            parents=parents,
            help=help,
            description=description or help[:1].upper() + help[1:] + ".",
        )
        return added

    return action


def add_jobs_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    action = _command(
        sub,
        "jobs",
        common,
        help="your scheduled jobs: add, preview, list, remove",
        description="Jobs the hub runs as you while you are away: a prompt, repeating or "
        "once; the answer arrives as a notice. The same jobs the companion's schedule tool makes.",
    )
    add = action("add", "schedule a job")
    add.add_argument("prompt", help="what to do at each run, as you would ask it")
    _when(add)
    add.add_argument("--title", default="", help="a short name, shown on its notices")
    add.add_argument("--tiny", default="", help="the tiny that answers (default: tiny)")
    _when(action("preview", "a schedule in words and its next five runs, nothing saved"))
    action("list", "list your jobs and pending alerts, with next and last run")
    remove = action("remove", "delete one of your jobs or alerts")
    remove.add_argument("id", help="its id, as list shows it")


def _when(parser: argparse.ArgumentParser) -> None:
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--every", metavar="FORM", help=f"repeating: {FORMS}")
    when.add_argument(
        "--in",
        dest="in_minutes",
        type=int,
        metavar="MINUTES",
        help="once, this many minutes from now",
    )


def add_telegram_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    action = _command(
        sub,
        "telegram",
        common,
        help="your Telegram bot: setup, status, allow a chat, disable",
        description="Connect the bot @BotFather made for you, so your tiny answers the chats "
        "you allow (docs/telegram.md).",
    )
    setup = action(
        "setup",
        "connect your bot to a tiny",
        "Connect your bot: its token (asked for without echo, or read from standard input, so "
        "it is not in your shell's history) is checked with Telegram before it is kept.",
    )
    setup.add_argument(
        "--tiny", default="", help="the tiny that answers (default: tiny, or the one kept)"
    )
    setup.add_argument(
        "--keep-token",
        action="store_true",
        help="keep the token already set (change the tiny only)",
    )
    action("status", "the bot's state, its tiny, allowed and refused chats")
    allow = action("allow", "allow a chat: your tiny answers it from now on")
    allow.add_argument("chat_id", type=int, help="the chat's id (a refused chat's notice names it)")
    action("disable", "answer nothing until the bot is set up again")


def add_tools_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    action = _command(
        sub,
        "tools",
        common,
        help="your tools: list, forge, install, enable, disable, run",
        description="Every tool your companion gets, and the ones you forge: JavaScript "
        "functions run in the hub's sandbox (docs/forged-tools.md).",
    )
    action("list", "every tool by tier, on or off; your forged tools")
    forge = action(
        "forge",
        "forge a tool from a tool file",
        "Forge a tool from a JSON tool file {name, description, code, inputSchema} (- reads "
        "standard input): the code runs once in the sandbox before it is kept.",
    )
    forge.add_argument("file", help="the tool file, or - for standard input")
    install = action("install", "install a tool file from GitHub pinned by commit")
    install.add_argument(
        "file_url", metavar="URL", help="https://raw.githubusercontent.com/OWNER/REPO/SHA/PATH.json"
    )
    for verb, what in (("enable", "turn a tool on again"), ("disable", "turn a tool off")):
        action(verb, what).add_argument("name", help="the tool's name, as list shows it")
    run = action("run", "try one of your forged tools with an input")
    run.add_argument("name", help="the tool's name (my_...)")
    run.add_argument(
        "input", nargs="?", default="{}", help="its input as a JSON object (default {})"
    )
