"""telegram, use_telegram: a person's Telegram bot, connected and driven by the model.

Both are account tools (a bot belongs to a person). ``telegram`` connects a bot with the token
@BotFather gave and a tiny to answer as, shows its status (the token only masked), allows chats,
disables it, and proposes its removal (the person confirms it in their app: the token is
deleted); the hub's poller (``hub/telegram/poller.py``) does the answering.
``use_telegram`` calls any Bot API method with the connected bot, except the few that would
take the bot's updates away from that poller.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from hub.agent.tools.confirming import proposed
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.confirmations.actions import REMOVE_BOT
from hub.confirmations.store import Item
from hub.core.errors import Refused
from hub.people.identity import User
from hub.telegram.api import (
    BotApi,
    TelegramRefused,
    TelegramUnreachable,
    check_token,
    mask,
    redact,
)
from hub.telegram.bots import Bots, NoBot

ACTIONS = ("setup", "status", "allow_chat", "disable", "remove")
# Polling is the hub's: these would take the bot's updates from it (getUpdates competes with
# the poller, a webhook stops getUpdates, logOut and close end the bot's session).
POLLER_METHODS = frozenset({"getUpdates", "setWebhook", "deleteWebhook", "logOut", "close"})
MAX_PARAMS_BYTES = 16_384
MAX_ANSWER_CHARS = 8_000
SETUP_TIMEOUT_S = 15.0


def _bots(ctx: ToolContext) -> Bots:
    return Bots(ctx.hub.db, ctx.hub.settings.home)


@tool(name="telegram", context=True)
async def telegram(
    action: str,
    tool_context: StrandsToolContext,
    token: str = "",
    tiny: str = "",
    chat_id: int = 0,
) -> dict[str, Any]:
    """Connect the person's Telegram bot so their tiny answers chats they allow.

    Args:
        action: setup (token and tiny), status, allow_chat (chat_id), disable, or remove (the
            person confirms it in their app).
        token: the bot token @BotFather gave (setup; kept hidden, never shown again).
        tiny: the name of the tiny that answers (setup).
        chat_id: the chat to allow (allow_chat); a refused chat's notice names its id.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if action not in ACTIONS:
        return failed(f"action must be one of: {', '.join(ACTIONS)}")
    try:
        if action == "setup":
            return await _setup(ctx, ctx.caller, token, tiny)
        return _manage(ctx, ctx.caller, action, chat_id)
    except Refused as exc:
        return failed(str(exc))


async def _setup(ctx: ToolContext, person: User, token: str, tiny: str) -> dict[str, Any]:
    bots = _bots(ctx)
    kept, bot = bots.token(person.id), bots.get(person.id)
    new_token = check_token(token) if token.strip() else None
    chosen = tiny.strip() or (bot.tiny if bot else "")
    if new_token is None and kept is None:
        return failed("give the bot token @BotFather sent when the bot was made")
    if not chosen:
        return failed("name the tiny that answers the bot's chats")
    ctx.hub.tinys.resolve(chosen, person, None)  # a tiny the person may talk to
    username, note = "", ""
    try:
        me = await _call(ctx, new_token or kept or "", "getMe", {}, SETUP_TIMEOUT_S)
        username = str(me.get("username", "")) if isinstance(me, dict) else ""
    except TelegramRefused as exc:
        return failed(
            f"Telegram refuses this token ({exc.description}): copy it again from "
            "@BotFather; nothing was saved"
        )
    except TelegramUnreachable as exc:
        note = f" Telegram cannot be reached now ({exc}); the hub keeps trying."
    bots.connect(person.id, chosen, username, new_token)
    name = f"@{username}" if username else "the bot"
    return ok(
        f"Connected {name} to the tiny {chosen}. It answers only chats you allow: when someone "
        f"writes to it you get a notice with their chat id, then allow_chat with it.{note}",
        **_described(bots, person),
    )


def _manage(ctx: ToolContext, person: User, action: str, chat_id: int) -> dict[str, Any]:
    bots = _bots(ctx)
    if action == "status":
        if bots.get(person.id) is None:
            raise NoBot()
        described = _described(bots, person)
        return ok(_status_line(described), **described)
    if action == "allow_chat":
        if not isinstance(chat_id, int) or chat_id == 0:
            return failed("give the chat_id to allow (the refused chat's notice names it)")
        bots.allow(person.id, chat_id)
        return ok(f"Chat {chat_id} is allowed: the tiny answers it from now on.")
    if action == "disable":
        bots.disable(person.id)
        return ok("The bot is disabled: nothing is answered until setup is run again.")
    bot = bots.get(person.id)
    if bot is None:
        raise NoBot()
    shown = Item(bot.username or "bot", f"@{bot.username}, answering as {bot.tiny}")
    return proposed(ctx, REMOVE_BOT, "remove the Telegram bot and delete its token", [shown], {})


def _described(bots: Bots, person: User) -> dict[str, Any]:
    bot, token = bots.get(person.id), bots.token(person.id)
    assert bot is not None
    return {
        "bot": f"@{bot.username}" if bot.username else "",
        "tiny": bot.tiny,
        "enabled": bot.enabled,
        "state": bot.state,
        "detail": bot.detail,
        "token": mask(token) if token else "(missing)",
        "chats": [chat.as_json() for chat in bots.chats(person.id)],
    }


def _status_line(described: dict[str, Any]) -> str:
    allowed = [str(c["chatId"]) for c in described["chats"] if c["allowed"]]
    waiting = [f"{c['chatId']} ({c['title']})" for c in described["chats"] if not c["allowed"]]
    lines = [
        f"{described['bot'] or 'The bot'} answers as {described['tiny']}: {described['state']}"
        + (f" — {described['detail']}" if described["detail"] else ""),
        f"token {described['token']}",
        f"allowed chats: {', '.join(allowed) or 'none yet'}",
    ]
    if waiting:
        lines.append(f"refused chats (allow_chat to answer them): {', '.join(waiting[:10])}")
    return "\n".join(lines)


@tool(name="use_telegram", context=True)
async def use_telegram(
    method: str, tool_context: StrandsToolContext, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Call any Telegram Bot API method with the person's connected bot (sendMessage,
    sendPhoto by URL, getChat, setMyCommands...).

    Args:
        method: the Bot API method, e.g. sendMessage.
        params: its parameters as an object, e.g. {"chat_id": 12345, "text": "Hi"}.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if method in POLLER_METHODS:
        return failed(f"{method} is the hub's own: it polls this bot, and {method} would stop it")
    if params is not None and not isinstance(params, dict):
        return failed("params must be an object of the method's parameters")
    if len(json.dumps(params or {}, default=str)) > MAX_PARAMS_BYTES:
        return failed(f"params are at most {MAX_PARAMS_BYTES} bytes of JSON")
    token = _bots(ctx).token(ctx.caller.id)
    if token is None:
        return failed(str(NoBot()))
    try:
        result = await _call(ctx, token, method, params or {})
    except Refused as exc:
        return failed(redact(str(exc), token))
    return _bounded(method, redact(json.dumps(result, ensure_ascii=False), token))


def _bounded(method: str, text: str) -> dict[str, Any]:
    if len(text) <= MAX_ANSWER_CHARS:
        return ok(f"{method}: {text}", result=json.loads(text))
    cut = len(text) - MAX_ANSWER_CHARS
    return ok(f"{method}: {text[:MAX_ANSWER_CHARS]}… ({cut} more characters not shown)")


async def _call(
    ctx: ToolContext, token: str, method: str, params: dict[str, Any], timeout_s: float = 30.0
) -> Any:
    async with aiohttp.ClientSession() as session:
        api = BotApi(ctx.hub.settings.telegram_api_url, token, session)
        return await api.call(method, params, timeout_s)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [telegram, use_telegram]
