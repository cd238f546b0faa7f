"""The TUI's side of a proposal: a card in the chat lists what a turn asks to do, and only the
person's Confirm (sent with their token) carries it out. A real hub, the scripted fake model,
the TUI headless."""

from __future__ import annotations

from pathlib import Path

from fakes.ollama import FakeOllama, Reply
from tests.conftest import StartHub
from tests.test_tui import chat_of
from tests.test_tui_chat import say, token_of, turn_done
from tests.waits import until
from tui.app import TinyApp
from tui.client import HubClient
from tui.config import TuiConfig
from tui.confirmation import ConfirmationCard

FACTS = ("The user's bicycle is a green Brompton.", "The user is allergic to hazelnuts.")


def forget_all_turn() -> list[Reply]:
    call = {"function": {"name": "unlearn", "arguments": {"scope": "all"}}}
    return [Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Confirm it in the card."])]


async def test_a_card_lists_what_would_be_forgotten_and_confirm_forgets_it(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    me = server.hub.owner.id
    for fact in FACTS:
        server.hub.memory.learn(me, fact)
    fake_ollama.script(*forget_all_turn())
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "forget everything about me")
        await turn_done(chat, 2)
        card = chat.query_one(ConfirmationCard)
        shown = str(card.query_one("#items").render())
        assert all(fact in shown for fact in FACTS)
        assert "forget everything: all 2 facts" in str(card.query_one("#title").render())
        assert server.hub.memory.count(me) == 2, "nothing happens until the person answers"
        assert app.focused is not card.query_one("#confirm"), "a stray Enter confirms nothing"

        await pilot.click("#confirm")
        await until(lambda: card.state != "waiting", what="the hub's answer")
        assert card.state == "confirmed"
        assert card.outcome.startswith("Forgot 2 facts: ") and "deleted for good" in card.outcome
        assert server.hub.memory.count(me) == 0
        assert len(server.hub.memory.forgotten(me)) == 1


async def test_decline_leaves_everything_and_a_card_answers_once(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    me = server.hub.owner.id
    for fact in FACTS:
        server.hub.memory.learn(me, fact)
    fake_ollama.script(*forget_all_turn())
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "forget everything")
        await turn_done(chat, 2)
        card = chat.query_one(ConfirmationCard)
        await pilot.click("#decline")
        await until(lambda: card.state != "waiting", what="the hub's answer")
        assert (card.state, card.outcome) == ("declined", "Declined: nothing was done.")
        assert not card.query_one("#answers").display
        assert server.hub.memory.count(me) == 2


async def test_an_answer_the_hub_refuses_is_shown_and_can_be_given_again(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """Another person's token (a TUI signed in as someone else) is told the proposal is not
    theirs; nothing is forgotten."""
    server = await start_hub(ollama_host=fake_ollama.url)
    me = server.hub.owner.id
    server.hub.memory.learn(me, FACTS[0])
    fake_ollama.script(*forget_all_turn())
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "forget everything")
        await turn_done(chat, 2)
        card = chat.query_one(ConfirmationCard)
        bea = server.hub.identity.add_user("bea")
        chat.client = HubClient(server.url, server.hub.identity.issue_token(bea, "t"))
        await pilot.click("#confirm")
        await until(lambda: card.state != "waiting", what="the hub's answer")
        assert card.state == "failed" and "no pending action" in card.outcome
        assert card.query_one("#answers").display and not card.query_one("#answers").disabled
        assert server.hub.memory.count(me) == 1
