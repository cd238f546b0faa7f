"""What memory kept by listening shows in the TUI's chat as "I'll remember: …", and its Undo
takes it back through the same routes every client uses."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button, Static

from firmware_bridges.emulators.flipper import FlipperEmulator
from harness.waits import until
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_small_tools import emulator, scripted_hub
from tests.test_tui import chat_of, say
from tests.test_tui_chat import token_of, turn_done
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.remembered import RememberedLine

__all__ = ["emulator"]


async def test_a_fact_heard_after_the_reply_is_shown_and_undone(
    start_hub: StartHub, closed_port: int, tmp_path: Path, emulator: FlipperEmulator
) -> None:
    heard = "The user's niece Carolina is visiting on Saturday."
    replies = ["How lovely.", "no", heard]
    server, _ = await scripted_hub(start_hub, closed_port, tmp_path, replies, listen=True)
    me = server.hub.owner.id
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path / "tui"))
    async with app.run_test(size=(100, 40)) as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "My niece Carolina is visiting on Saturday.")
        await turn_done(chat, 2)
        await until(lambda: bool(chat.query(RememberedLine)), what="the heard fact shown")
        line = chat.query_one(RememberedLine)
        assert str(line.query_one("#said", Static).render()) == f"I'll remember: {heard}"
        [fact] = server.hub.memory.recent(me, 10)
        assert fact.text == heard
        line.query_one("#undo", Button).press()
        await until(lambda: not server.hub.memory.get(me, fact.id).current, what="undone")
        await until(
            lambda: str(line.query_one("#said", Static).render()).startswith("Not remembered"),
            what="the line says so",
        )
    assert server.hub.memory.recent(me, 10) == []
