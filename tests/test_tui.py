"""The chat screen, driven headless against a real hub (fake Ollama behind it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual._xterm_parser import XTermParser
from textual.pilot import Pilot
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.api.server import start_server
from hub.client.http import HubClient
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tui.app import TinyApp
from tui.chat import STOPPED, ChatScreen
from tui.config import TuiConfig
from tui.widgets import Notice, Prompt, ReplyMessage, StatusLine, UserMessage


def chat_of(app: TinyApp) -> ChatScreen:
    screen = app.screen
    assert isinstance(screen, ChatScreen)
    return screen


def notices(chat: ChatScreen) -> list[str]:
    return [n.text for n in chat.query(Notice)]


async def say(pilot: Pilot[None], chat: ChatScreen, text: str) -> None:
    """Put ``text`` in the prompt and press Enter (the ``send`` binding)."""
    chat.query_one("#prompt", Prompt).load_text(text)
    await pilot.press("enter")


async def test_typing_a_message_streams_the_reply(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    token = owner_headers(server)["Authorization"].split()[1]
    fake_ollama.script(Reply(chunks=["**Hello**", " Ada"]))
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        status = chat.query_one(StatusLine)
        await until(lambda: "qwen3" in status.plain)
        assert "ollama qwen3" in status.plain and "tools on" in status.plain
        await pilot.click("#prompt")
        for key in "hi there":
            await pilot.press(key if key != " " else "space")
        await pilot.press("enter")
        await until(lambda: not chat.busy and len(chat.history) == 2)
        assert chat.query_one(UserMessage).text == "hi there"
        assert chat.query_one(ReplyMessage).source == "**Hello** Ada"
        assert chat.history[-1] == {"role": "assistant", "content": "**Hello** Ada"}
        assert chat.query_one("#prompt", Prompt).text == ""
        await until(lambda: "tok" in status.plain)  # the turn's token usage
    assert fake_ollama.requests[-1]["messages"][-1]["content"] == "hi there"


async def test_the_newline_key_writes_a_second_line_and_enter_sends_both(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["ok"]))
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await pilot.press("a", "ctrl+j", "b")
        assert chat.query_one("#prompt", Prompt).text == "a\nb"
        await pilot.press("enter")
        await until(lambda: not chat.busy and len(chat.history) == 2)
    assert fake_ollama.requests[-1]["messages"][-1]["content"] == "a\nb"


def type_burst(app: TinyApp, keystrokes: str) -> None:
    """``keystrokes`` as one read from the terminal (a paste without bracketed paste, a
    voice-typing tool, ``tmux send-keys 'text' Enter``): Textual's own parser turns the bytes
    into events, and all of them are queued before the app handles the first."""
    for event in XTermParser().feed(keystrokes):
        app.post_message(event)


async def test_text_and_enter_in_one_burst_are_sent_as_typed(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["Heard you."]))
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test():
        chat = chat_of(app)
        type_burst(app, "pasted line one\nline two\r")
        await until(lambda: not chat.busy and len(chat.history) == 2)
        assert chat.history[0] == {"role": "user", "content": "pasted line one\nline two"}
        assert chat.query_one(ReplyMessage).source == "Heard you."
        assert chat.query_one("#prompt", Prompt).text == ""
    assert fake_ollama.requests[-1]["messages"][-1]["content"] == "pasted line one\nline two"


async def test_send_and_newline_keys_rebind_from_tui_toml(closed_port: int, tmp_path: Path) -> None:
    (tmp_path / "tui.toml").write_text('[keys]\nsend = "ctrl+s"\nnewline = "enter"\n')
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig.load(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await pilot.press("a", "enter", "b")
        assert chat.query_one("#prompt", Prompt).text == "a\nb"
        await pilot.press("ctrl+s")
        await until(lambda: not chat.busy and chat.history != [])
        assert chat.history == [{"role": "user", "content": "a\nb"}]


async def test_escape_stops_the_reply_and_the_model(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=[f"w{i} " for i in range(500)], delay_s=0.02))
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "tell me a long story")
        await until(lambda: any("w3" in r.source for r in chat.query(ReplyMessage)))
        await pilot.press("escape")
        await until(lambda: not chat.busy)
        await until(lambda: fake_ollama.disconnects == 1)
        assert STOPPED in notices(chat)
        kept = chat.history[-1]
        assert kept["role"] == "assistant" and kept["content"].startswith("w0 w1 w2 w3")


async def test_unreachable_hub_is_said_plainly(closed_port: int, tmp_path: Path) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test():
        chat = chat_of(app)
        status = chat.query_one(StatusLine)
        await until(lambda: status.problem != "")
        assert status.plain.startswith("⚠ cannot reach the hub at")
        assert chat.sub_title == "hub unreachable"
        assert "cannot reach the hub" in notices(chat)[0]


async def test_the_footer_shows_every_chat_binding_at_80_by_24(
    closed_port: int, tmp_path: Path
) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)):
        chat = chat_of(app)
        footer = chat.query_one(Footer)
        wanted = {
            "send",
            "newline",
            "stop",
            "copy_reply",
            "toggle_sidebar",
            "new_conversation",
            *(f"pick_followup({n})" for n in range(1, 5)),
        }

        def shown() -> set[str]:
            return {key.action for key in footer.query(FooterKey)}

        # the keys of the focused prompt join once it has the focus
        await until(lambda: wanted <= shown(), what=f"footer keys: {sorted(shown())}")
        # the footer lays itself out again in rows after it measured its keys: wait for that
        await until(lambda: footer.virtual_size.width <= 80, what=str(footer.virtual_size))


async def test_screens_switch_and_keys_rebind_from_tui_toml(
    tmp_path: Path, closed_port: int
) -> None:
    (tmp_path / "tui.toml").write_text('[keys]\nshow_devices = "f9"\n')
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig.load(tmp_path))
    async with app.run_test() as pilot:
        await pilot.press("f2")  # rebound away: nothing happens
        assert app.current_mode == "chat"
        await pilot.press("f9")
        assert app.current_mode == "devices"
        await pilot.press("f3")
        assert app.current_mode == "memory"
        await pilot.press("f1")
        assert app.current_mode == "chat"


async def test_a_broken_tui_toml_is_reported_and_the_defaults_used(
    tmp_path: Path, closed_port: int
) -> None:
    (tmp_path / "tui.toml").write_text("[keys\n")
    config = TuiConfig.load(tmp_path)
    assert config.keys == {} and "tui.toml" in config.problems[0]
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), config)
    async with app.run_test() as pilot:
        await pilot.press("f2")
        assert app.current_mode == "devices"


async def test_a_hub_restarted_on_another_model_shows_in_the_header(
    fake_ollama: FakeOllama,
    closed_port: int,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ChatScreen, "health_every_s", 0.2)
    no_ollama = settings_for(home, ollama_host=f"http://127.0.0.1:{closed_port}")
    first = await start_server(Hub.open(no_ollama), "127.0.0.1", 0)
    token = owner_headers(first)["Authorization"].split()[1]
    app = TinyApp(HubClient(first.url, token), TuiConfig(tmp_path))
    async with app.run_test():
        chat = chat_of(app)
        status = chat.query_one(StatusLine)
        await until(lambda: "embedded" in (chat.sub_title or ""))
        assert "embedded SmolLM2-135M-Instruct · offline, tools off" in status.plain
        await first.stop()
        first.hub.close()
        await until(lambda: chat.sub_title == "hub unreachable")

        settings = settings_for(home, ollama_host=fake_ollama.url)
        second = await start_server(Hub.open(settings), "127.0.0.1", first.port)
        try:
            await until(lambda: chat.sub_title == "ollama qwen3:latest · tools on")
            assert status.plain.startswith("ollama qwen3:latest · tools on")
        finally:
            await second.stop()
            second.hub.close()


async def test_the_app_shares_one_hub_session_and_closes_it(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    client = HubClient(server.url, owner_headers(server)["Authorization"].split()[1])
    app = TinyApp(client, TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await until(lambda: chat.status.health is not None)
        session = client._session
        assert session is not None and not session.closed
        await pilot.press("f2")  # another screen's requests go through the same session
        await until(lambda: "live" in str(app.screen.query_one("#status").render()))
        assert client._session is session
    assert session.closed and client._session is None
