"""The chat screen, driven headless against a real hub (fake Ollama behind it)."""

from __future__ import annotations

from textual.widgets import Input

from tests.conftest import StartHub, owner_headers
from tests.fakes.ollama import FakeOllama, Reply
from tests.waits import until
from tui.app import ChatApp, Notice, ReplyMessage, UserMessage
from tui.client import HubClient


async def test_typing_a_message_streams_the_reply(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    token = owner_headers(server)["Authorization"].split()[1]
    fake_ollama.script(Reply(chunks=["**Hello**", " Ada"]))
    app = ChatApp(HubClient(server.url, token))
    async with app.run_test() as pilot:
        await until(lambda: "qwen3" in app.sub_title)
        await pilot.click("#prompt")
        for key in "hi there":
            await pilot.press(key if key != " " else "space")
        await pilot.press("enter")
        await until(lambda: not app.busy and len(app.history) == 2)
        assert app.query_one(UserMessage).content == "hi there"
        assert app.query_one(ReplyMessage).source == "**Hello** Ada"
        assert app.history[-1] == {"role": "assistant", "content": "**Hello** Ada"}
        assert app.query_one("#prompt", Input).value == ""
    assert fake_ollama.requests[-1]["messages"][-1]["content"] == "hi there"


async def test_escape_stops_the_reply_and_the_model(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=[f"w{i} " for i in range(500)], delay_s=0.02))
    app = ChatApp(HubClient(server.url, None))
    async with app.run_test() as pilot:
        app.query_one("#prompt", Input).value = "tell me a long story"
        await pilot.press("enter")
        await until(lambda: "w3" in app.query_one(ReplyMessage).source)
        await pilot.press("escape")
        await until(lambda: not app.busy)
        await until(lambda: fake_ollama.disconnects == 1)
        notices = [str(n.content) for n in app.query(Notice)]
        assert "stopped" in notices


async def test_unreachable_hub_is_said_plainly(closed_port: int) -> None:
    app = ChatApp(HubClient(f"http://127.0.0.1:{closed_port}", None))
    async with app.run_test():
        await until(lambda: app.sub_title == "hub unreachable")
        assert "cannot reach the hub" in str(app.query_one(Notice).content)
