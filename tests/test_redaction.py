"""Credentials never leave the hub in text: not in archives and public shares, not in the log, not
in a tool's result (to the model and the stream), however they are echoed: as pasted, URL-encoded
or lower-cased. A Telegram bot token, as the docs' own setup puts it in the chat, is the case.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.agent.tools.context import ToolContext
from hub.core.logs import setup_logging
from hub.core.redaction import redact_text
from hub.telegram.api import mask, redact
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat
from tests.test_forge import forge, member, tool_call, turn

BOT_TOKEN = "7412365890:AAHx9wQ2v_Lk3sRt5Yp8mNc4Bz1Df6GhJkL"
ECHOES = (BOT_TOKEN, quote(BOT_TOKEN, safe=""), BOT_TOKEN.lower(), BOT_TOKEN.upper())
SECRET_PART = BOT_TOKEN.split(":", 1)[1]


def leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [echo for echo in ECHOES if echo.lower() in lowered or SECRET_PART.lower() in lowered]


@pytest.mark.parametrize("echo", ECHOES)
def test_every_echo_of_a_bot_token_is_redacted(echo: str) -> None:
    text = f"setup telegram with {echo} please; https://api.telegram.org/bot{echo}/getMe"
    assert leaks(redact_text(text)) == []
    assert "[redacted]" in redact_text(text)


def test_use_telegrams_own_redaction_masks_every_echo() -> None:
    for echo in ECHOES:
        shown = redact(f"Telegram said: bad request for bot{echo}", BOT_TOKEN)
        assert leaks(shown) == [], shown
    assert mask(BOT_TOKEN) in redact(f"bot{BOT_TOKEN.lower()}", BOT_TOKEN)


async def test_a_token_in_the_chat_never_reaches_a_public_share(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    messages = [
        {"role": "user", "content": f"Set up my Telegram bot, the token is {BOT_TOKEN}"},
        {"role": "assistant", "content": f"Done: bot{quote(BOT_TOKEN, safe='')} answers."},
        {"role": "user", "content": f"it printed {BOT_TOKEN.lower()}"},
    ]
    async with http.post(
        f"{server.url}/share", json={"messages": messages}, headers=owner_headers(server)
    ) as created:
        assert created.status == 201, await created.text()
        url = (await created.json())["url"]
    async with http.get(f"{server.url}{url}") as public:
        shown = await public.text()
    assert "Set up my Telegram bot" in shown
    assert leaks(shown) == []
    async with http.post(
        f"{server.url}/archive", json={"messages": messages}, headers=owner_headers(server)
    ) as archived:
        archive_id = (await archived.json())["id"]
    async with http.get(
        f"{server.url}/archive/{archive_id}", headers=owner_headers(server)
    ) as kept:
        assert leaks(await kept.text()) == []


def test_the_log_redacts_what_it_writes(tmp_path: Path) -> None:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    log_file = tmp_path / "hub.log"
    try:
        setup_logging("info", log_file)
        logging.getLogger("hub.test").info("calling %s/bot%s/getMe", "https://x", BOT_TOKEN)
        try:
            raise RuntimeError(f"failed with {BOT_TOKEN.lower()}")
        except RuntimeError:
            logging.getLogger("hub.test").exception("it broke")
        root.handlers[0].close()
    finally:
        root.handlers[:] = saved
        root.setLevel(level)
    written = log_file.read_text()
    assert "calling https://x/bot[redacted]/getMe" in written
    assert "RuntimeError" in written
    assert leaks(written) == []


async def test_a_tools_result_is_redacted_for_the_model_and_the_stream(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    _, headers = member(server, "eli")
    ctx: ToolContext = turn(server, server.hub.identity.by_login("eli"))
    code = f"() => ({{ said: 'your token: {BOT_TOKEN.lower()}', url: 'bot{quote(BOT_TOKEN)}' }})"
    assert (await forge(ctx, "echo", code))["status"] == "success"
    fake_ollama.script(tool_call("my_echo"), Reply(chunks=["Done."]))
    chat = await post_chat(server.url, {"messages": [{"role": "user", "content": "go"}]}, headers)
    after = chat.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["status"] == "success"
    assert "your token: [redacted]" in json.dumps(after)
    assert leaks(json.dumps(chat.events)) == []
    sent = json.dumps(fake_ollama.requests[-1]["messages"])
    assert "[redacted]" in sent and leaks(sent) == []
