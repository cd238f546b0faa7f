"""While a turn runs, the chat shows what it is doing and for how long, and keeps every key:
the phases read from the stream (pure, on a clock of the test's own), then the chat screen
against a real hub whose fake Ollama holds each reply until the test lets it go, so "during
the turn" never depends on how fast this machine is."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.client.http import HubClient
from hub.client.progress import TurnProgress
from tests.conftest import StartHub
from tests.test_tui import chat_of
from tests.test_tui_chat import notices, say, tool_turn, turn_done
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.conversations import ConversationStore
from tui.widgets import Prompt, QueuedMessages, StatusLine, ToolCard


def test_the_phases_follow_the_stream_and_the_clock() -> None:
    now = [100.0]
    progress = TurnProgress(clock=lambda: now[0])
    assert progress.line() == "reading the prompt · 0 s"
    now[0] = 103.4
    assert progress.line() == "reading the prompt · 3 s"
    call = {"name": "learn", "toolUseId": "t1"}
    assert progress.see({"type": c.EV_BLOCK_START, "toolStart": call})
    assert progress.line() == "calling learn · 3 s"
    assert not progress.see({"type": c.EV_BEFORE_TOOL, "toolCall": {**call, "input": {}}})
    now[0] = 109.0
    result = {"toolUseId": "t1", "status": "success", "content": []}  # no name: known by id
    assert progress.see({"type": c.EV_AFTER_TOOL, "toolResult": result})
    assert progress.line() == "reading learn's result · 9 s"
    assert not progress.see({"type": c.EV_METADATA, "usage": {}})  # still reading
    assert progress.see({"type": c.EV_BLOCK_DELTA, c.DELTA_REASONING: "hm"})
    assert progress.doing == "thinking"
    assert progress.see({"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: "Saved."})
    assert progress.writing and progress.line() == "writing the answer · 9 s"
    assert not progress.finished
    progress.see({"type": c.EV_AGENT_RESULT, "stopReason": "end_turn"})
    assert progress.finished


def held(*replies: Reply) -> list[asyncio.Event]:
    """Hold each reply until its event is set; the events, in order."""
    gates = []
    for reply in replies:
        reply.held = asyncio.Event()
        gates.append(reply.held)
    return gates


async def test_the_status_line_says_what_the_turn_does_until_its_last_token(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    call, answer = tool_turn(
        ("suggest_followups", {"suggestions": ["Tell me more", "Thanks"]}), then="Done."
    )
    gates = held(call, answer)
    fake_ollama.script(call, answer)
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        chat = chat_of(app)
        status = chat.query_one(StatusLine)
        await until(lambda: status.health is not None)
        await say(pilot, chat, "hello")
        assert re.match(r"⟳ reading the prompt · \d+ s", status.plain), "shown from Enter on"
        await until(lambda: len(fake_ollama.requests) == 1)
        await until(lambda: re.match(r"⟳ reading the prompt · [1-9]\d* s", status.plain))

        gates[0].set()  # the model calls the tool; its answer is held
        await until(lambda: len(fake_ollama.requests) == 2)
        await until(lambda: chat.query(ToolCard) and chat.query_one(ToolCard).status == "ok")
        await until(lambda: "⟳ reading suggest_followups's result" in status.plain)
        assert chat.busy, "after the tool card the turn is not over, and the line says so"

        gates[1].set()
        await turn_done(chat, 2)
        assert not status.plain.startswith("⟳"), status.plain
        assert chat.history[-1] == {"role": "assistant", "content": "Done."}


async def test_a_key_burst_during_a_turn_is_queued_and_sent_in_order(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    first, second, third = Reply(["One."]), Reply(["Two."]), Reply(["Three."])
    gates = held(first, second, third)
    fake_ollama.script(first, second, third)
    config = TuiConfig(tmp_path)
    app = TinyApp(HubClient(server.url, None), config)
    async with app.run_test(size=(100, 30)) as pilot:
        chat = chat_of(app)
        prompt = chat.query_one("#prompt", Prompt)
        await say(pilot, chat, "first")
        await until(lambda: len(fake_ollama.requests) == 1)
        # typed while the reply is held: a message, Ctrl+N, another message, and a draft
        await pilot.press(*"second", "enter", "ctrl+n", *"third", "enter", *"dr")
        await until(lambda: chat.queued == ["second", None, "third"], what=str(chat.queued))
        assert prompt.text == "dr", "keys typed after an Enter stay in the prompt"
        shown = str(chat.query_one(QueuedMessages).render())
        assert "3 queued" in shown and "• second" in shown
        assert "• then: a new conversation" in shown and "• third" in shown
        first_conversation = chat.conversation.id

        for gate in gates[:2]:
            gate.set()
        await until(lambda: len(fake_ollama.requests) == 3, what=str(len(fake_ollama.requests)))
        gates[2].set()
        await turn_done(chat, 2)
        await until(lambda: not chat.queued)
        assert not chat.query_one(QueuedMessages).display

    said = [
        [m["content"] for m in r["messages"] if m["role"] != "system"] for r in fake_ollama.requests
    ]
    assert said == [["first"], ["first", "One.", "second"], ["third"]]
    assert chat.history == [
        {"role": "user", "content": "third"},
        {"role": "assistant", "content": "Three."},
    ]
    kept = ConversationStore(config.conversations_dir).load(first_conversation)
    assert [m["content"] for m in kept.messages] == ["first", "One.", "second", "Two."]


async def test_escape_stops_the_reply_and_puts_what_was_queued_back_in_the_prompt(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    (gate,) = held(reply := Reply(["never sent"]))
    fake_ollama.script(reply)
    app = TinyApp(HubClient(server.url, None), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        chat = chat_of(app)
        prompt = chat.query_one("#prompt", Prompt)
        await say(pilot, chat, "a long question")
        await until(lambda: len(fake_ollama.requests) == 1)
        await pilot.press(*"and then", "enter", "ctrl+n")
        await until(lambda: chat.queued == ["and then", None])
        await pilot.press("escape")
        await until(lambda: not chat.busy and prompt.text == "and then")
        assert not chat.queued
        assert (
            "stopped: 1 queued message(s) back in the prompt; "
            "the queued new conversation not started"
        ) in notices(chat)
        assert chat.history[0] == {"role": "user", "content": "a long question"}
    gate.set()
    assert len(fake_ollama.requests) == 1, "nothing queued was sent"
