"""/api/telegram: the caller's Telegram bot, by hand (``tiny-hub telegram``, the TUI's settings).

The agent's ``telegram`` tool and these routes run the same code (``hub.telegram.setup``): a
token is checked with Telegram before it is kept and never shown again (only masked), the tiny
must be one the caller may talk to, and a chat is answered only once allowed. Removing the bot
(deleting its token) stays a proposal the person confirms, as from a chat.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import read_json_body, whole_number
from hub.api.keys import HUB
from hub.api.spec import (
    ANY,
    BOOLEAN,
    STRING,
    Operation,
    array,
    closed,
    documented,
    matching,
    obj,
)
from hub.telegram.api import TOKEN
from hub.telegram.setup import SetupRefused, bots_of, connect_bot, described

routes = web.RouteTableDef()

MAX_TELEGRAM_BODY_BYTES = 4096
CHAT_ID_MAX = 2**63 - 1
CHAT_ID = {
    "type": "integer",
    "minimum": -CHAT_ID_MAX,
    "maximum": CHAT_ID_MAX,
    "not": {"const": 0},
}
# As check_token reads it, around spaces it trims.
BOT_TOKEN = matching(TOKEN.pattern.removeprefix("^").removesuffix("$").join(("^ *", " *$")))
BOT = obj(
    {"bot": STRING, "tiny": STRING, "enabled": BOOLEAN, "state": STRING, "token": STRING},
    detail=STRING,
    chats=array(ANY),
)


async def _object_body(request: web.Request, fields: tuple[str, ...]) -> dict[str, Any]:
    body = await read_json_body(request, MAX_TELEGRAM_BODY_BYTES)
    if not isinstance(body, dict):
        raise SetupRefused("body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise SetupRefused(f"unknown field(s): {', '.join(unknown)} ({', '.join(fields)})")
    return body


@routes.get("/api/telegram")
@access(Access.USER)
@documented(
    Operation("your Telegram bot: its state, tiny and chats", answers={200: BOT}, errors=(404,))
)
async def telegram_status(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    return web.json_response(described(bots_of(hub), signed_in(request)))


@routes.put("/api/telegram")
@access(Access.USER)
@documented(
    Operation(
        "connect your Telegram bot (the token @BotFather gave, checked with Telegram) to a tiny",
        body=closed(token=BOT_TOKEN, tiny=STRING),
        answers={200: obj({"said": STRING, "bot": BOT})},
        errors=(403, 404),
    )
)
async def telegram_setup(request: web.Request) -> web.Response:
    body = await _object_body(request, ("token", "tiny"))
    token, tiny = body.get("token", ""), body.get("tiny", "")
    if not isinstance(token, str) or not isinstance(tiny, str):
        raise SetupRefused("token and tiny must be strings")
    hub, person = request.app[HUB], signed_in(request)
    said = await connect_bot(hub, person, token, tiny)
    return web.json_response({"said": said, "bot": described(bots_of(hub), person)})


@routes.post("/api/telegram/chats")
@access(Access.USER)
@documented(
    Operation(
        "allow a chat: your tiny answers it from now on (a refused chat's notice names its id)",
        body=closed({"chatId": CHAT_ID}),
        answers={200: BOT},
        errors=(404,),
    )
)
async def telegram_allow(request: web.Request) -> web.Response:
    body = await _object_body(request, ("chatId",))
    chat_id = whole_number(body.get("chatId"))
    if chat_id is None or chat_id == 0:
        raise SetupRefused("chatId must be the chat's id, a whole number (not 0)")
    if abs(chat_id) > CHAT_ID_MAX:
        raise SetupRefused("chatId is not a Telegram chat id")
    hub, person = request.app[HUB], signed_in(request)
    bots = bots_of(hub)
    bots.allow(person.id, chat_id)
    return web.json_response(described(bots, person))


@routes.post("/api/telegram/disable")
@access(Access.USER)
@documented(
    Operation(
        "disable your bot: nothing is answered until it is set up again",
        answers={200: BOT},
        errors=(404,),
    )
)
async def telegram_disable(request: web.Request) -> web.Response:
    hub, person = request.app[HUB], signed_in(request)
    bots = bots_of(hub)
    bots.disable(person.id)
    return web.json_response(described(bots, person))
