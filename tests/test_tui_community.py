"""The community screen, driven headless against a real hub: what you follow, the trust ranking,
your standing, and following and unfollowing from the keyboard."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from hub.tinys.social import record_consulted
from tests.conftest import StartHub, owner_headers
from tui.app import TinyApp
from tui.community import CommunityScreen, follow_body
from tui.config import TuiConfig
from tui.widgets import AskTextScreen


def app_for(server: RunningServer, tmp_path: Path) -> TinyApp:
    token = owner_headers(server)["Authorization"].split()[1]
    return TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))


def column(screen: CommunityScreen, table_id: str, index: int = 0) -> list[str]:
    table = screen.query_one(f"#{table_id}", DataTable)
    return [str(table.get_row_at(i)[index]) for i in range(table.row_count)]


def status_line(screen: CommunityScreen) -> str:
    return str(screen.query_one("#status", Static).content)


async def community_screen(app: TinyApp, pilot: Pilot[None]) -> CommunityScreen:
    await pilot.press("f7")
    screen = app.screen
    assert isinstance(screen, CommunityScreen)
    return screen


async def answer_follow(app: TinyApp, pilot: Pilot[None], text: str) -> None:
    """Press f, type ``text`` into the question once its box has the keys, and Enter."""
    await pilot.press("f")

    def asking() -> bool:
        modal = app.screen
        return isinstance(modal, AskTextScreen) and modal.query_one(Input).has_focus

    await until(asking, what="the follow question")
    for key in text:
        await pilot.press({"@": "at", " ": "space"}.get(key, key))
    await until(lambda: app.screen.query_one(Input).value == text, what="the typed text")
    await pilot.press("enter")


def test_what_is_typed_becomes_a_follow_body() -> None:
    assert follow_body(" @bea ") == {"login": "@bea"}
    assert follow_body("chef") == {"tiny": "chef"}
    assert follow_body("tiny:chef") == {"tiny": "chef"}
    assert follow_body("  ") is None


async def test_the_screen_shows_follows_trust_and_standing_and_follows_from_the_keyboard(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    hub = server.hub
    bea = hub.identity.add_user("Bea", login="bea")
    for name in ("chef", "critic"):
        hub.tinys.create(bea, {"name": name})
    record_consulted(hub.db, "critic", "chef")
    hub.community.follow(bea, "follow", hub.community.target(bea, login="@owner"))
    app = app_for(server, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await community_screen(app, pilot)
        await until(lambda: column(screen, "trust") == ["chef", "critic"], what="the ranking")
        assert column(screen, "trust", 1) == ["@bea", "@bea"]
        assert status_line(screen) == (
            "@owner · reputation 10 (follow received 10, mutual follow 0)"
        )
        assert column(screen, "following") == ["nobody yet"]
        await answer_follow(app, pilot, "@bea")
        await until(lambda: column(screen, "following") == ["@bea"], what="the follow")
        # Bea followed first, so this follow completed a mutual one: both are paid
        await until(lambda: "mutual follow 5" in status_line(screen))
        await answer_follow(app, pilot, "chef")
        await until(lambda: column(screen, "following") == ["tiny:chef", "@bea"])
        await pilot.press("down", "u")  # the second row: @bea
        await until(lambda: column(screen, "following") == ["tiny:chef"], what="the unfollow")
        assert [c["target"] for c in hub.community.following(hub.owner)] == ["tiny:chef"]
        await answer_follow(app, pilot, "@ghost")
        await until(lambda: "nobody is @ghost" in status_line(screen), what="the refusal")
