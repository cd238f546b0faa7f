"""The inbox screen (F6), driven headless as a second person of a real hub: unread counts,
opening a conversation marks it read, and replies reach the other person's inbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from hub.messages.delivery import send_message
from hub.messages.store import Inbox
from hub.people.identity import User
from tests.conftest import StartHub
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.inbox import InboxScreen, addressed, conversation_text, message_from


def signed_in_as(server: RunningServer, name: str, login: str) -> tuple[User, str]:
    user = server.hub.identity.add_user(name, login=login)
    return user, server.hub.identity.issue_token(user, label="tui")


def rows(screen: InboxScreen) -> list[tuple[str, str]]:
    table = screen.query_one("#conversations", DataTable)
    return [
        (str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1])) for i in range(table.row_count)
    ]


def status_line(screen: InboxScreen) -> str:
    return str(screen.query_one("#status", Static).content)


def thread(screen: InboxScreen) -> str:
    return str(screen.query_one("#messages", Static).content)


async def inbox_screen(app: TinyApp, pilot: Pilot[None]) -> InboxScreen:
    await pilot.press("f6")
    screen = app.screen
    assert isinstance(screen, InboxScreen)
    return screen


async def type_text(pilot: Pilot[None], text: str) -> None:
    for key in text:
        await pilot.press({" ": "space", "@": "at"}.get(key, key))


async def test_unread_messages_show_and_opening_the_conversation_reads_them(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    ann, _ = signed_in_as(server, "Ann", "ann")
    bea, token = signed_in_as(server, "Bea", "bea")
    send_message(server.hub, ann, "@bea", "Are you home tonight?")
    send_message(server.hub, ann, "@bea", "I have your book")
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await inbox_screen(app, pilot)
        await until(lambda: rows(screen) == [("@ann", "2")], what="Ann's conversation, unread")
        assert status_line(screen) == "1 conversation(s), 2 unread"
        assert Inbox(server.hub.db).unread(bea.id) == 2  # showing the list reads nothing
        await pilot.press("enter")
        await until(lambda: "I have your book" in thread(screen), what="the conversation")
        assert thread(screen).index("Are you home tonight?") < thread(screen).index("your book")
        await until(lambda: rows(screen) == [("@ann", "")], what="no longer unread")
        assert status_line(screen) == "1 conversation(s), 0 unread"
        assert Inbox(server.hub.db).unread(bea.id) == 0

        await pilot.press("slash")
        assert screen.query_one("#reply", Input).has_focus
        await type_text(pilot, "Yes, come by")
        await pilot.press("enter")
        await until(lambda: "Yes, come by" in thread(screen), what="the reply in the thread")
        (conversation,) = Inbox(server.hub.db).overview(ann.id)
        assert (conversation.login, conversation.unread) == ("bea", 1)
        assert conversation.last.text == "Yes, come by"
        assert screen.query_one("#reply", Input).value == ""


async def test_a_line_starting_with_a_login_starts_a_conversation_and_errors_keep_it(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    _, token = signed_in_as(server, "Bea", "bea")
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await inbox_screen(app, pilot)
        await until(lambda: status_line(screen) == "0 conversation(s), 0 unread")
        await pilot.press("slash")
        await type_text(pilot, "@nobody hi")
        await pilot.press("enter")
        await until(lambda: any("nobody on this hub" in n.message for n in app._notifications))
        assert screen.query_one("#reply", Input).value == "@nobody hi"  # kept, to fix
        screen.query_one("#reply", Input).value = ""
        await type_text(pilot, "@owner the heating is on")
        await pilot.press("enter")
        await until(lambda: rows(screen) == [("@owner", "")], what="the new conversation")
        await until(lambda: "the heating is on" in thread(screen))
        assert Inbox(server.hub.db).unread(server.hub.owner.id) == 1


async def test_a_message_arriving_shows_at_once_and_in_the_open_conversation_is_read(
    start_hub: StartHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(InboxScreen, "refresh_s", 3600.0)  # only the event ring can tell it
    server = await start_hub()
    ann, _ = signed_in_as(server, "Ann", "ann")
    bea, token = signed_in_as(server, "Bea", "bea")
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await inbox_screen(app, pilot)
        await until(lambda: status_line(screen) == "0 conversation(s), 0 unread")
        send_message(server.hub, ann, "@bea", "Knock knock")
        await until(lambda: rows(screen) == [("@ann", "1")], what="the new message, unread")
        await pilot.press("enter")
        await until(lambda: rows(screen) == [("@ann", "")], what="read once opened")
        send_message(server.hub, ann, "@bea", "Who is there?")
        await until(lambda: "Who is there?" in thread(screen), what="in the open conversation")
        await until(lambda: Inbox(server.hub.db).unread(bea.id) == 0, what="read as it came")
        await until(lambda: rows(screen) == [("@ann", "")], what="the list says it is read")


def test_how_a_line_is_addressed_and_a_conversation_reads() -> None:
    assert addressed("@ann see you") == ("@ann", "see you")
    assert addressed("see you @ann") is None
    assert addressed("@") is None
    shown = str(
        conversation_text(
            "@ann",
            [
                {"from": "@ann", "text": "hi", "sentAt": 0, "tiny": "chef"},
                {"from": "@bea", "text": "hello", "sentAt": 0, "tiny": ""},
            ],
        )
    )
    assert "@ann → chef: hi" in shown and "@bea: hello" in shown
    assert "No messages with @ann yet" in str(conversation_text("@ann", []))
    notice = {"kind": "notify", "detail": {"tag": "message:ann", "title": "Message from @ann"}}
    assert message_from(notice) == "@ann"
    assert message_from({"kind": "notify", "detail": {"tag": "job:3"}}) is None
    assert message_from({"kind": "device_online", "detail": {"tag": "message:ann"}}) is None
