"""``tiny-hub telegram setup|status|allow|disable``: the person's bot, connected by hand over
``/api/telegram`` (the same checks as the companion's ``telegram`` tool)."""

from __future__ import annotations

import argparse
import getpass
import sys

from hub.cli.common import CliError, is_terminal
from hub.cli.over_http import Asker, over_http
from hub.telegram.setup import status_line


def telegram_command(args: argparse.Namespace) -> int:
    actions = {"setup": _setup, "status": _status, "allow": _allow, "disable": _disable}
    token = "" if args.telegram_action != "setup" or args.keep_token else _read_token()
    return over_http(args, lambda ask: actions[args.telegram_action](ask, args, token))


def _read_token() -> str:
    """The bot token, asked for without echo on a terminal, else one line of standard input:
    never an argument, which the shell's history and ``ps`` would keep."""
    if is_terminal(sys.stdin):
        token = getpass.getpass("bot token from @BotFather (not shown): ")
    else:
        token = sys.stdin.readline()
    if not token.strip():
        raise CliError("no bot token given: paste the one @BotFather sent (or --keep-token)")
    return token.strip()


async def _setup(ask: Asker, args: argparse.Namespace, token: str) -> int:
    body = {"tiny": args.tiny, **({"token": token} if token else {})}
    answer = await ask("PUT", "/api/telegram", body=body)
    print(answer["said"])
    print(status_line(answer["bot"]))
    return 0


async def _status(ask: Asker, args: argparse.Namespace, token: str) -> int:
    print(status_line(await ask("GET", "/api/telegram")))
    return 0


async def _allow(ask: Asker, args: argparse.Namespace, token: str) -> int:
    bot = await ask("POST", "/api/telegram/chats", body={"chatId": args.chat_id})
    print(f"chat {args.chat_id} is allowed: the tiny answers it from now on")
    print(status_line(bot))
    return 0


async def _disable(ask: Asker, args: argparse.Namespace, token: str) -> int:
    bot = await ask("POST", "/api/telegram/disable")
    print("the bot is disabled: nothing is answered until it is set up again")
    print(status_line(bot))
    return 0
