"""A person's Telegram bot, end to end against a fake Bot API on loopback: setup, the poller
answering allowed chats with the tiny (on the fake Ollama), refusing the others, use_telegram,
no internet, and the token kept out of every log and answer."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest
from strands.types.tools import AgentTool

from fakes.ollama import FakeOllama, Reply
from fakes.telegram import TOKEN, FakeTelegram
from harness.waits import until
from hub import contracts as c
from hub.agent.tools.context import ToolContext
from hub.agent.tools.telegram import telegram, use_telegram
from hub.api.keys import PARTS
from hub.api.server import RunningServer
from hub.devices.notify import NOTIFY_KIND
from hub.people.identity import User
from hub.telegram.poller import MAX_BACKOFF_S, backoff_s
from tests.confirming import confirmed_by
from tests.conftest import StartHub
from tests.sse import tool_in_a_turn
from tests.toolcall import call_tool, result_text

CHAT = 5550123


async def hub_with_bot_api(
    start_hub: StartHub, fake_ollama: FakeOllama, api_url: str
) -> tuple[RunningServer, User]:
    server = await start_hub(
        ollama_host=fake_ollama.url, telegram_api_url=api_url, telegram_long_poll_s=1
    )
    ann = server.hub.identity.add_user("Ann", login="ann")
    server.hub.tinys.create(ann, {"name": "helper", "systemPrompt": "Help briefly."})
    return server, ann


async def use(server: RunningServer, tool: AgentTool, caller: User | None, **args: Any) -> Any:
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    return dict(await call_tool(tool, ToolContext(server.hub, caller, tiny), **args))


def data(result: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(b["json"] for b in result["content"] if "json" in b)
    return found


async def status(server: RunningServer, ann: User) -> dict[str, Any]:
    return data(await use(server, telegram, ann, action="status"))


def refused_notices(server: RunningServer, ann: User) -> list[dict[str, Any]]:
    return [
        e.detail
        for e in server.hub.devices.events.recent(ann.id)
        if e.kind == NOTIFY_KIND and str(e.detail.get("tag", "")).startswith("telegram-refused")
    ]


async def test_an_allowed_chat_gets_the_tinys_answer_and_any_other_chat_nothing(
    fake_telegram: FakeTelegram, fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server, ann = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
    setup = await use(server, telegram, ann, action="setup", token=TOKEN, tiny="helper")
    assert setup["status"] == "success", setup
    assert result_text(setup).startswith("Connected @tiny_test_bot to the tiny helper.")
    await until(lambda: fake_telegram.offsets, what="the poller asks for updates")

    fake_telegram.user_says(CHAT, "hello bot", first_name="Stranger")
    await until(lambda: bool(refused_notices(server, ann)), what="Ann is told of the chat")
    (notice,) = refused_notices(server, ann)
    assert f"chat {CHAT}" in notice["body"] and "Stranger" in notice["body"]
    await until(lambda: max(fake_telegram.offsets) == 2, what="the update is confirmed")
    assert fake_telegram.sent == [] and fake_ollama.requests == []
    waiting = (await status(server, ann))["chats"]
    assert waiting == [{"chatId": CHAT, "title": "Stranger", "allowed": False}]

    allowed = await use(server, telegram, ann, action="allow_chat", chat_id=CHAT)
    assert result_text(allowed) == f"Chat {CHAT} is allowed: the tiny answers it from now on."
    fake_ollama.script(Reply(chunks=["Tea is", " ready."]))
    fake_telegram.user_says(CHAT, "is the tea ready?", first_name="Stranger")
    await until(lambda: fake_telegram.sent_to(CHAT) == ["Tea is ready."], what="the answer")
    asked = json.dumps(fake_ollama.requests[-1]["messages"])
    assert "is the tea ready?" in asked and "Help briefly." in asked  # as the tiny helper
    assert "hello bot" not in asked  # the refused message was never answered later
    assert (await status(server, ann))["state"] == "polling"
    assert len(refused_notices(server, ann)) == 1


async def test_use_telegram_calls_bot_api_methods_with_the_connected_bot(
    fake_telegram: FakeTelegram, fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server, ann = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
    nothing = await use(server, use_telegram, ann, method="getMe")
    assert "no Telegram bot is connected" in result_text(nothing)
    await use(server, telegram, ann, action="setup", token=TOKEN, tiny="helper")

    sent = await use(
        server, use_telegram, ann, method="sendMessage", params={"chat_id": 42, "text": "Hi!"}
    )
    assert sent["status"] == "success", sent
    assert data(sent)["result"]["text"] == "Hi!"
    assert fake_telegram.sent_to(42) == ["Hi!"]
    refusals: list[tuple[str, dict[str, Any] | None, str]] = [
        ("fooBar", None, "Telegram answered 404: Not Found"),
        ("sendMessage", {"chat_id": 42}, "Telegram answered 400: Bad Request: message text"),
        ("getUpdates", None, "getUpdates is the hub's own"),
        ("setWebhook", {"url": "https://example.com"}, "setWebhook is the hub's own"),
        ("send/../getMe", None, "is not a Bot API method name"),
        ("sendMessage", {"chat_id": 42, "text": "x" * 20_000}, "params are at most"),
    ]
    for method, params, why in refusals:
        result = await use(server, use_telegram, ann, method=method, params=params)
        assert result["status"] == "error", (method, result)
        assert why in result_text(result), (method, result_text(result))
    assert fake_telegram.calls[-2:] == ["fooBar", "sendMessage"]  # the rest refused first
    me = await use(server, use_telegram, ann, method="getMe", params={})
    assert result_text(me).startswith('getMe: {"id": 123456789')


async def test_setup_refuses_a_bad_token_or_tiny_and_saves_nothing(
    fake_telegram: FakeTelegram, fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server, ann = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
    bea = server.hub.identity.add_user("Bea", login="bea")
    server.hub.tinys.create(bea, {"name": "diary", "systemPrompt": "x", "visibility": "private"})
    unknown = "987654321:AAHsomeoneElsesTokenThatIsNotKnown12"
    refusals = {
        ("setup", "not-a-token", "helper"): "that is not a bot token",
        ("setup", unknown, "helper"): "Telegram refuses this token (Unauthorized)",
        ("setup", TOKEN, ""): "name the tiny that answers",
        ("setup", TOKEN, "nosuch"): "no tiny named nosuch",
        ("setup", TOKEN, "diary"): "diary is private",
        ("setup", "", "helper"): "give the bot token",
        ("status", "", ""): "no Telegram bot is connected",
        ("disable", "", ""): "no Telegram bot is connected",
        ("remove", "", ""): "no Telegram bot is connected",
        ("allow_chat", "", ""): "give the chat_id to allow",
        ("explode", "", ""): "action must be one of",
    }
    for (action, token, tiny), why in refusals.items():
        result = await use(server, telegram, ann, action=action, token=token, tiny=tiny)
        assert result["status"] == "error", (action, token, result)
        assert why in result_text(result), (action, token, result_text(result))
    assert not server.hub.settings.home.joinpath(f"telegram-{ann.id}.token").exists()
    for tool, args in ((telegram, {"action": "status"}), (use_telegram, {"method": "getMe"})):
        assert result_text(await use(server, tool, None, **args)) == "Login required"


async def test_with_no_internet_setup_keeps_the_bot_and_the_status_says_why(
    fake_ollama: FakeOllama, start_hub: StartHub, closed_port: int
) -> None:
    server, ann = await hub_with_bot_api(start_hub, fake_ollama, f"http://127.0.0.1:{closed_port}")
    setup = await use(server, telegram, ann, action="setup", token=TOKEN, tiny="helper")
    assert setup["status"] == "success", setup
    assert "Telegram cannot be reached now" in result_text(setup)
    await until(lambda: data_sync(server, ann)["state"] == "offline", what="offline status")
    shown = await use(server, telegram, ann, action="status")
    assert "cannot reach the Telegram Bot API" in result_text(shown)
    assert "next try in" in data(shown)["detail"]
    # the retries double from a second up to a minute, never more
    assert [backoff_s(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert MAX_BACKOFF_S == 60


def data_sync(server: RunningServer, ann: User) -> dict[str, Any]:
    row = server.hub.db.execute(
        "SELECT state, detail FROM telegram_bots WHERE user_id = ?", [ann.id]
    ).fetchone()
    return {"state": row[0], "detail": row[1]} if row else {}


async def test_disable_stops_polling_and_remove_deletes_the_token(
    fake_telegram: FakeTelegram, fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server, ann = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
    poller = server.runner.app[PARTS].telegram
    assert poller is not None
    await use(server, telegram, ann, action="setup", token=TOKEN, tiny="helper")
    await until(lambda: poller.status()["bots"] == 1, what="the bot is polled")
    disabled = await use(server, telegram, ann, action="disable")
    assert result_text(disabled).startswith("The bot is disabled")
    await until(lambda: poller.status()["bots"] == 0, what="polling stops")
    assert (await status(server, ann))["state"] == "disabled"
    again = await use(server, telegram, ann, action="setup")  # the kept token and tiny
    assert again["status"] == "success", again
    await until(lambda: poller.status()["bots"] == 1, what="polling starts again")
    token_file = server.hub.settings.home / f"telegram-{ann.id}.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    removed = await use(server, telegram, ann, action="remove")
    assert token_file.exists(), "the person confirms a removal in their app"
    outcome = await confirmed_by(server.hub, ann, removed)
    assert outcome == "The Telegram bot is removed, its token deleted from this hub."
    assert not token_file.exists()
    await until(lambda: poller.status()["bots"] == 0, what="polling stops")


async def test_the_token_appears_in_no_log_answer_or_database(
    fake_telegram: FakeTelegram,
    fake_ollama: FakeOllama,
    start_hub: StartHub,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "hub.log"
    file_handler = logging.FileHandler(log_file, encoding="utf-8")
    root = logging.getLogger()
    root.addHandler(file_handler)
    caplog.set_level(logging.DEBUG)
    try:
        server, ann = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
        answers = [await use(server, telegram, ann, action="setup", token=TOKEN, tiny="helper")]
        await use(server, telegram, ann, action="allow_chat", chat_id=CHAT)
        fake_telegram.user_says(CHAT, "hi")
        fake_telegram.user_says(CHAT + 1, "let me in")
        await until(lambda: len(fake_telegram.sent_to(CHAT)) == 1, what="the answer")
        await until(lambda: bool(refused_notices(server, ann)), what="the refusal")
        for method in ("getMe", "nosuchMethod", "getUpdates"):
            answers.append(await use(server, use_telegram, ann, method=method))
        answers.append(await use(server, telegram, ann, action="status"))
        server.hub.settings.home.joinpath(f"telegram-{ann.id}.token").unlink()
        await until(lambda: data_sync(server, ann)["state"] == "refused", what="no token")
        answers.append(await use(server, telegram, ann, action="status"))
    finally:
        root.removeHandler(file_handler)
        file_handler.close()
    assert "123456789:…ij" not in TOKEN  # the masked form is not a part of the token
    assert data(answers[-2])["token"] == "123456789:…ghij"
    assert TOKEN not in json.dumps(answers, default=str)
    assert caplog.records and TOKEN not in caplog.text
    assert log_file.read_text(encoding="utf-8") and TOKEN not in log_file.read_text()
    assert TOKEN not in "\n".join(server.hub.db.conn.iterdump())
    secret = TOKEN.split(":", 1)[1]
    assert secret not in caplog.text and secret not in json.dumps(answers, default=str)


async def test_the_tools_work_in_a_chat_turn_and_its_results_never_carry_the_token(
    fake_telegram: FakeTelegram, fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server, _ = await hub_with_bot_api(start_hub, fake_ollama, fake_telegram.url)
    setup = {"action": "setup", "token": TOKEN, "tiny": "tiny"}
    result, transcript = await tool_in_a_turn(server, fake_ollama, "telegram", setup)
    assert result["status"] == "success", result
    assert "Connected @tiny_test_bot to the tiny tiny" in json.dumps(result)
    after = transcript.of_type(c.EV_AFTER_TOOL) + transcript.of_type("toolResultBlock")
    assert after and TOKEN not in json.dumps(after) and TOKEN not in transcript.text
    send = {"method": "sendMessage", "params": {"chat_id": 7, "text": "from a turn"}}
    result, _ = await tool_in_a_turn(server, fake_ollama, "use_telegram", send)
    assert result["status"] == "success", result
    assert fake_telegram.sent_to(7) == ["from a turn"]
