"""The TUI's side of a proposal: a card in the chat lists what a turn asks to do, and only the
person's Confirm (sent with their token) carries it out. A real hub, the scripted fake model,
the TUI headless."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from textual.pilot import Pilot

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_tui import chat_of
from tests.test_tui_chat import say, token_of, turn_done
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.confirmation import ConfirmationCard

FACTS = ("The user's bicycle is a green Brompton.", "The user is allergic to hazelnuts.")


@asynccontextmanager
async def a_card(
    start_hub: StartHub, fake: FakeOllama, tmp_path: Path, facts: tuple[str, ...] = FACTS
) -> AsyncIterator[tuple[RunningServer, TinyApp, Pilot[None], ConfirmationCard]]:
    """A hub holding ``facts`` and a TUI whose chat shows the card of a turn that asked to
    forget everything."""
    server = await start_hub(ollama_host=fake.url)
    for fact in facts:
        server.hub.memory.learn(server.hub.owner.id, fact)
    call = {"function": {"name": "unlearn", "arguments": {"scope": "all"}}}
    fake.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Confirm it in the card."]))
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    # 120 wide: at 100 the footer gains or loses a row when the click moves the focus to the
    # button, which moves the button between press and release (a known KeysFooter limit).
    async with app.run_test(size=(120, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "forget everything about me")
        await turn_done(chat, 2)
        yield server, app, pilot, chat.query_one(ConfirmationCard)


async def test_a_card_lists_what_would_be_forgotten_and_confirm_forgets_it(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    async with a_card(start_hub, fake_ollama, tmp_path) as (server, app, pilot, card):
        me = server.hub.owner.id
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
    async with a_card(start_hub, fake_ollama, tmp_path) as (server, _, pilot, card):
        await pilot.click("#decline")
        await until(lambda: card.state != "waiting", what="the hub's answer")
        assert (card.state, card.outcome) == ("declined", "Declined: nothing was done.")
        assert not card.query_one("#answers").display
        assert server.hub.memory.count(server.hub.owner.id) == 2


async def test_an_answer_the_hub_refuses_is_shown_and_can_be_given_again(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """Another person's token (a TUI signed in as someone else) is told the proposal is not
    theirs; nothing is forgotten."""
    async with a_card(start_hub, fake_ollama, tmp_path, FACTS[:1]) as (server, app, pilot, card):
        me, chat = server.hub.owner.id, chat_of(app)
        bea = server.hub.identity.add_user("bea")
        chat.client = HubClient(server.url, server.hub.identity.issue_token(bea, "t"))
        await pilot.click("#confirm")
        await until(lambda: card.state != "waiting", what="the hub's answer")
        assert card.state == "failed" and "no pending action" in card.outcome
        assert card.query_one("#answers").display and not card.query_one("#answers").disabled
        assert server.hub.memory.count(me) == 1
