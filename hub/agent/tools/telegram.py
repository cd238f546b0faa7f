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

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.confirming import proposed
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.confirmations.actions import REMOVE_BOT
from hub.confirmations.store import Item
from hub.core.errors import Refused
from hub.people.identity import User
from hub.telegram.api import redact
from hub.telegram.bots import Bots, NoBot
from hub.telegram.setup import bots_of, call_bot, connect_bot, described, status_line

ACTIONS = ("setup", "status", "allow_chat", "disable", "remove")
# Polling is the hub's: these would take the bot's updates from it (getUpdates competes with
# the poller, a webhook stops getUpdates, logOut and close end the bot's session).
POLLER_METHODS = frozenset({"getUpdates", "setWebhook", "deleteWebhook", "logOut", "close"})
MAX_PARAMS_BYTES = 16_384
MAX_ANSWER_CHARS = 8_000


def _bots(ctx: ToolContext) -> Bots:
    return bots_of(ctx.hub)


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
    said = await connect_bot(ctx.hub, person, token, tiny)
    return ok(said, **described(_bots(ctx), person))


def _manage(ctx: ToolContext, person: User, action: str, chat_id: int) -> dict[str, Any]:
    bots = _bots(ctx)
    if action == "status":
        shown = described(bots, person)
        return ok(status_line(shown), **shown)
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
    line = Item(bot.username or "bot", f"@{bot.username}, answering as {bot.tiny}")
    return proposed(ctx, REMOVE_BOT, "remove the Telegram bot and delete its token", [line], {})


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
        result = await call_bot(ctx.hub, token, method, params or {})
    except Refused as exc:
        return failed(redact(str(exc), token))
    return _bounded(method, redact(json.dumps(result, ensure_ascii=False), token))


def _bounded(method: str, text: str) -> dict[str, Any]:
    if len(text) <= MAX_ANSWER_CHARS:
        return ok(f"{method}: {text}", result=json.loads(text))
    cut = len(text) - MAX_ANSWER_CHARS
    return ok(f"{method}: {text[:MAX_ANSWER_CHARS]}… ({cut} more characters not shown)")


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [telegram, use_telegram]


hinted("telegram", telegram, use_telegram)
