"""The hub's Telegram bots, polled while the hub runs: one long-polling ``getUpdates`` loop per
enabled bot, the offset kept in the database and moved past each update once it is handled, so
a restart does not handle it again (one the hub was handling when it stopped is handled again:
better a second answer than none).

An allowed chat gets the tiny's answer: a one-shot turn as the bot's person, as if they had
asked it themselves. A chat that is not allowed gets nothing; its person is told (a notice on
their ring and phones) when it first writes and again after an hour of quiet, so they can allow
it by id. Without internet the loop
backs off, doubling from 1 s to a minute, and the status says why.

The loops are started and stopped by a supervisor that reads the bots table every few seconds:
a setup, a disable or a removal made by a tool (or another process) takes effect without a
message between them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp

from hub import contracts as c
from hub.agent.compose import answer
from hub.core.tasks import cancel_all
from hub.devices.notify import Notice, push_notice
from hub.runtime.hub import Hub
from hub.telegram.api import BotApi, TelegramRefused, TelegramUnreachable
from hub.telegram.bots import Bot, Bots

log = logging.getLogger(__name__)

SCAN_S = 2.0
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
MESSAGE_CHARS = 4096  # Telegram's limit for one message's text
MAX_PARTS = 4  # a longer answer is cut after this many messages
PROMPT_CHARS = 4000
REFUSED_NOTICE_EVERY_S = 3600.0
SORRY = "Sorry, I cannot answer just now."


def backoff_s(failures: int) -> float:
    """1, 2, 4 ... seconds, at most a minute."""
    return float(min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** max(failures - 1, 0)))


def parts_of(text: str) -> list[str]:
    return [text[i : i + MESSAGE_CHARS] for i in range(0, len(text), MESSAGE_CHARS)][:MAX_PARTS]


class TelegramPoller:
    """A part of the running hub (``hub/process/parts.py``): start, stop, status."""

    def __init__(self, hub: Hub, scan_s: float = SCAN_S) -> None:
        self._hub = hub
        self._bots = Bots(hub.db, hub.settings.home)
        self._scan_s = scan_s
        self._loops: dict[str, tuple[float, asyncio.Task[None]]] = {}
        self._states: dict[str, tuple[str, str]] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    def status(self) -> dict[str, Any]:
        return {"bots": len(self._loops)}

    async def start(self) -> None:
        self._session = aiohttp.ClientSession()
        self._supervisor = asyncio.create_task(self._supervise())

    async def stop(self) -> None:
        await cancel_all([self._supervisor, *(task for _, task in self._loops.values())])
        self._loops.clear()
        if self._session is not None:
            await self._session.close()

    async def _supervise(self) -> None:
        while True:
            try:
                self._align()
            except Exception:
                log.warning("could not read the Telegram bots", exc_info=True)
            await asyncio.sleep(self._scan_s)

    def _align(self) -> None:
        """One loop per enabled bot, started again when its setup changed."""
        wanted = {bot.user_id: bot.created_at for bot in self._bots.enabled()}
        for user_id, (setup, task) in list(self._loops.items()):
            if wanted.get(user_id) != setup or task.done():
                task.cancel()
                del self._loops[user_id]
                self._states.pop(user_id, None)
        for user_id, setup in wanted.items():
            if user_id not in self._loops:
                self._loops[user_id] = (setup, asyncio.create_task(self._poll(user_id)))

    async def _poll(self, user_id: str) -> None:
        failures = 0
        while True:
            try:
                await self._round(user_id)
                failures = 0
                continue
            except TelegramUnreachable as exc:
                failures += 1
                state, why = "offline", str(exc)
            except TelegramRefused as exc:
                failures += 1
                state, why = ("refused" if exc.code in (401, 404) else "error"), str(exc)
            except Exception:
                failures += 1
                state, why = "error", "the poller failed (the hub's log has the details)"
                log.warning("telegram poller failed", exc_info=True)
            delay = backoff_s(failures)
            self._set_state(user_id, state, f"{why}; next try in {delay:g} s")
            await asyncio.sleep(delay)

    async def _round(self, user_id: str) -> None:
        """One ``getUpdates`` and the updates it brought, each handled before its offset
        moves past it."""
        bot, token = self._bots.get(user_id), self._bots.token(user_id)
        if bot is None or token is None:
            raise TelegramRefused(401, "the bot's token is missing from the data dir")
        assert self._session is not None
        api = BotApi(self._hub.settings.telegram_api_url, token, self._session)
        wait = self._hub.settings.telegram_long_poll_s
        updates = await api.call(
            "getUpdates",
            {"offset": bot.offset, "timeout": wait, "allowed_updates": ["message"]},
            timeout_s=wait + 15,
        )
        self._set_state(user_id, "polling")
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
                continue
            await self._handle(api, bot, update)
            self._bots.set_offset(user_id, update["update_id"] + 1)

    async def _handle(self, api: BotApi, bot: Bot, update: dict[str, Any]) -> None:
        message = update.get("message")
        chat = message.get("chat") if isinstance(message, dict) else None
        if not isinstance(chat, dict) or not isinstance(chat.get("id"), int):
            return
        assert isinstance(message, dict)
        before = self._bots.heard(bot.user_id, chat["id"], chat_title(chat))
        if not before.allowed:
            self._refused(bot, chat["id"], chat_title(chat), before.last_seen)
            return
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            return
        reply = await self._answer(bot, text)
        try:
            for part in parts_of(reply):
                await api.call("sendMessage", {"chat_id": chat["id"], "text": part})
        except (TelegramRefused, TelegramUnreachable) as exc:
            log.warning("telegram: could not send the answer to a chat: %s", exc)

    async def _answer(self, bot: Bot, text: str) -> str:
        try:
            person = self._hub.identity.user(bot.user_id)
            said = await answer(self._hub, person, text[:PROMPT_CHARS], {c.H_NAME: bot.tiny})
        except Exception:
            log.warning("telegram: the tiny %s could not answer", bot.tiny, exc_info=True)
            return SORRY
        return said or SORRY

    def _refused(self, bot: Bot, chat_id: int, title: str, last_told: float) -> None:
        log.info("telegram: a chat that is not allowed wrote to a bot; it gets no answer")
        if time.time() - last_told < REFUSED_NOTICE_EVERY_S:
            return
        push_notice(
            self._hub.devices,
            bot.user_id,
            Notice(
                title="Telegram: a chat was not answered",
                body=f"{title or 'Someone'} (chat {chat_id}) wrote to your bot. To let the "
                f"tiny answer them, ask it to allow Telegram chat {chat_id}.",
                tag=f"telegram-refused:{chat_id}",
            ),
        )

    def _set_state(self, user_id: str, state: str, detail: str = "") -> None:
        """Written when it changes, not on every round."""
        if self._states.get(user_id) != (state, detail):
            self._states[user_id] = (state, detail)
            self._bots.set_state(user_id, state, detail)


def chat_title(chat: dict[str, Any]) -> str:
    """A group's title, or the person's name (or @username) in a private chat."""
    if isinstance(chat.get("title"), str):
        return str(chat["title"])
    names = [chat.get("first_name"), chat.get("last_name")]
    name = " ".join(n for n in names if isinstance(n, str))
    username = chat.get("username")
    return name or (f"@{username}" if isinstance(username, str) else "")
