"""The Telegram Bot API over aiohttp: ``POST <base>/bot<token>/<method>`` with a JSON body,
answered ``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description"}``.

A dozen lines of aiohttp cover the four methods the hub needs and any method a person calls
through ``use_telegram``; a bot framework (aiogram) would add its own loop and types for no gain.
The token is part of every URL, so nothing here lets a URL reach a message: transport errors
are re-raised as one sentence that names no address, and every text that leaves is redacted.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from hub.core.errors import Refused
from hub.core.redaction import redact_text

TOKEN = re.compile(r"^\d{3,15}:[A-Za-z0-9_-]{20,100}$")
METHOD = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}$")
CALL_TIMEOUT_S = 30.0


class TelegramRefused(Refused):
    """Telegram answered ``ok: false``; ``code`` is its ``error_code``."""

    def __init__(self, code: int, description: str) -> None:
        super().__init__(f"Telegram answered {code}: {description}")
        self.code = code
        self.description = description


class TelegramUnreachable(Refused):
    """No answer from the Bot API: no internet, DNS, a timeout, or not a Bot API at all."""

    status = 502


def check_token(token: str) -> str:
    cleaned = token.strip()
    if not TOKEN.match(cleaned):
        raise Refused(
            "that is not a bot token: @BotFather gives one like 123456789:AAE... "
            "(digits, a colon, then letters, digits, - and _)"
        )
    return cleaned


def mask(token: str) -> str:
    """How a kept token is shown again: its bot id and last four characters."""
    bot_id, _, secret = token.partition(":")
    return f"{bot_id}:…{secret[-4:]}"


def redact(text: str, token: str) -> str:
    """``text`` with the bot's token masked however it is echoed (as it is, URL-encoded, in
    another case), and any other credential redacted (``hub.core.redaction``)."""
    if token:
        for form in {token, quote(token, safe="")}:
            text = re.sub(re.escape(form), mask(token), text, flags=re.IGNORECASE)
    return redact_text(text)


@dataclass(frozen=True)
class BotApi:
    base_url: str
    token: str
    session: aiohttp.ClientSession

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = CALL_TIMEOUT_S
    ) -> Any:
        """The method's ``result``; TelegramRefused or TelegramUnreachable otherwise."""
        if not METHOD.match(method):
            raise Refused(f"{method[:70]!r} is not a Bot API method name (letters and digits)")
        url = f"{self.base_url.rstrip('/')}/bot{self.token}/{method}"
        try:
            async with self.session.post(
                url, json=params or {}, timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as response:
                answer = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise TelegramUnreachable(_why(exc)) from None
        return _result(answer, self.token)


def _why(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "the Telegram Bot API did not answer in time"
    if isinstance(exc, ValueError):
        return "the Telegram Bot API answered with something that is not JSON"
    if isinstance(exc, aiohttp.ClientConnectionError):
        return "cannot reach the Telegram Bot API (no internet, or it is down)"
    return f"the Telegram Bot API call failed ({type(exc).__name__})"


def _result(answer: Any, token: str) -> Any:
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        raise TelegramUnreachable("the Telegram Bot API answered in a shape it never uses")
    if answer["ok"]:
        return answer.get("result")
    code = answer.get("error_code")
    description = redact(str(answer.get("description") or "no description"), token)
    raise TelegramRefused(code if isinstance(code, int) else 0, description[:500])
