"""Connecting a person's bot and saying how it stands: what the agent's ``telegram`` tool and the
``/api/telegram`` routes (``tiny-hub telegram``, the TUI's settings) both do, so a bot set up by
hand and one set up by asking follow the same rules (the token checked with Telegram's
``getMe`` before it is kept, a tiny the person may talk to, chats answered only once allowed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp

from hub.core.errors import Refused
from hub.people.identity import User
from hub.telegram.api import BotApi, TelegramRefused, TelegramUnreachable, check_token, mask
from hub.telegram.bots import Bots, NoBot

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

SETUP_TIMEOUT_S = 15.0


class SetupRefused(Refused):
    """A setup that cannot be kept; nothing was saved."""


def bots_of(hub: Hub) -> Bots:
    return Bots(hub.db, hub.settings.home)


async def call_bot(
    hub: Hub, token: str, method: str, params: dict[str, Any], timeout_s: float = 30.0
) -> Any:
    async with aiohttp.ClientSession() as session:
        api = BotApi(hub.settings.telegram_api_url, token, session)
        return await api.call(method, params, timeout_s)


async def connect_bot(hub: Hub, person: User, token: str, tiny: str) -> str:
    """Check the token with Telegram and keep the setup; the sentence that says what happened.
    A new token replaces the kept one; without one the kept token stays (a new tiny only)."""
    bots = bots_of(hub)
    kept, bot = bots.token(person.id), bots.get(person.id)
    new_token = check_token(token) if token.strip() else None
    chosen = tiny.strip() or (bot.tiny if bot else "")
    if new_token is None and kept is None:
        raise SetupRefused("give the bot token @BotFather sent when the bot was made")
    if not chosen:
        raise SetupRefused("name the tiny that answers the bot's chats")
    hub.tinys.resolve(chosen, person, None)  # a tiny the person may talk to
    username, note = "", ""
    try:
        me = await call_bot(hub, new_token or kept or "", "getMe", {}, SETUP_TIMEOUT_S)
        username = str(me.get("username", "")) if isinstance(me, dict) else ""
    except TelegramRefused as exc:
        raise SetupRefused(
            f"Telegram refuses this token ({exc.description}): copy it again from "
            "@BotFather; nothing was saved"
        ) from None
    except TelegramUnreachable as exc:
        note = f" Telegram cannot be reached now ({exc}); the hub keeps trying."
    bots.connect(person.id, chosen, username, new_token)
    name = f"@{username}" if username else "the bot"
    return (
        f"Connected {name} to the tiny {chosen}. It answers only chats you allow: when someone "
        f"writes to it you get a notice with their chat id, then allow_chat with it (by hand: "
        f"tiny-hub telegram allow ID).{note}"
    )


def described(bots: Bots, person: User) -> dict[str, Any]:
    """The person's bot as clients show it (the token masked); NoBot when there is none."""
    bot, token = bots.get(person.id), bots.token(person.id)
    if bot is None:
        raise NoBot()
    return {
        "bot": f"@{bot.username}" if bot.username else "",
        "tiny": bot.tiny,
        "enabled": bot.enabled,
        "state": bot.state,
        "detail": bot.detail,
        "token": mask(token) if token else "(missing)",
        "chats": [chat.as_json() for chat in bots.chats(person.id)],
    }


def status_line(shown: dict[str, Any]) -> str:
    allowed = [str(c["chatId"]) for c in shown["chats"] if c["allowed"]]
    waiting = [f"{c['chatId']} ({c['title']})" for c in shown["chats"] if not c["allowed"]]
    lines = [
        f"{shown['bot'] or 'The bot'} answers as {shown['tiny']}: {shown['state']}"
        + (f" — {shown['detail']}" if shown["detail"] else ""),
        f"token {shown['token']}",
        f"allowed chats: {', '.join(allowed) or 'none yet'}",
    ]
    if waiting:
        lines.append(f"refused chats (allow_chat to answer them): {', '.join(waiting[:10])}")
    return "\n".join(lines)
