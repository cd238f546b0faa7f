"""A fake Telegram Bot API on 127.0.0.1, speaking what the hub's bot code calls.

``POST /bot<token>/<method>`` with a JSON body (or form or query parameters), answered
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description"}`` as Telegram
does: an unknown token is 401 Unauthorized, an unknown method 404 Not Found. ``getUpdates``
honours ``offset`` (updates below it are confirmed and forgotten) and ``timeout`` (the call waits
that long for an update, then answers an empty list). ``sendMessage`` keeps what was sent, so a
test reads what each chat got. Its access log is off: the token is in every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from aiohttp import web

TOKEN = "123456789:AAHfakeTokenForTestsOnly_abcdefghij"
BOT = {"id": 123456789, "is_bot": True, "first_name": "Tiny Test", "username": "tiny_test_bot"}
MAX_TEXT = 4096


class FakeTelegram:
    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.updates: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []  # every sendMessage's parameters
        self.calls: list[str] = []  # every method called, in order
        self.offsets: list[int] = []  # the offset of each getUpdates
        self._next_update = 1
        self._arrived = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._method)
        return app

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def user_says(self, chat_id: int, text: str, first_name: str = "Ann") -> int:
        """A person writes to the bot in a private chat; the update's id."""
        update_id, self._next_update = self._next_update, self._next_update + 1
        person = {"id": chat_id, "is_bot": False, "first_name": first_name}
        self.updates.append(
            {
                "update_id": update_id,
                "message": {
                    "message_id": update_id,
                    "from": person,
                    "chat": {"id": chat_id, "type": "private", "first_name": first_name},
                    "date": int(time.time()),
                    "text": text,
                },
            }
        )
        self._arrived.set()
        return update_id

    def sent_to(self, chat_id: int) -> list[str]:
        return [str(m["text"]) for m in self.sent if m.get("chat_id") == chat_id]

    async def _method(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        method = request.match_info["method"]
        self.calls.append(method)
        params = await _params(request)
        handler = {
            "getMe": self._get_me,
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
        }.get(method)
        if handler is None:
            return _error(404, "Not Found")
        return await handler(params)

    async def _get_me(self, params: dict[str, Any]) -> web.Response:
        return _ok(BOT)

    async def _get_updates(self, params: dict[str, Any]) -> web.Response:
        offset, timeout = int(params.get("offset") or 0), float(params.get("timeout") or 0)
        self.offsets.append(offset)
        self.updates = [u for u in self.updates if u["update_id"] >= offset]
        if not self.updates and timeout > 0:
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), timeout)
        return _ok(list(self.updates))

    async def _send_message(self, params: dict[str, Any]) -> web.Response:
        chat_id, text = params.get("chat_id"), params.get("text")
        if chat_id is None:
            return _error(400, "Bad Request: chat_id is empty")
        if not isinstance(text, str) or not text:
            return _error(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            return _error(400, "Bad Request: message is too long")
        self.sent.append(params)
        message_id = len(self.sent)
        chat = {"id": chat_id, "type": "private"}
        return _ok({"message_id": message_id, "date": int(time.time()), "chat": chat, "text": text})


async def _params(request: web.Request) -> dict[str, Any]:
    """The Bot API takes parameters as a query string, a form, or JSON."""
    params: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json" and request.can_read_body:
        body = await request.json()
        if isinstance(body, dict):
            params.update(body)
    elif request.can_read_body:
        params.update(await request.post())
    return params


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _error(code: int, description: str) -> web.Response:
    return web.json_response(
        {"ok": False, "error_code": code, "description": description}, status=code
    )
