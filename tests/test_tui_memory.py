"""The memory screen, driven headless against a real hub and its real memory (SQLite + Chroma +
the shipped MiniLM embedder)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.memory import MemoryScreen, detail_text, stamp
from tui.widgets import AskTextScreen, ConfirmScreen


def app_for(server: RunningServer, tmp_path: Path) -> TinyApp:
    token = owner_headers(server)["Authorization"].split()[1]
    return TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))


def learn(server: RunningServer, text: str, supersedes: tuple[str, ...] = ()) -> str:
    hub = server.hub
    return hub.memory.learn(hub.owner.id, text, supersedes=supersedes).id


def is_current(server: RunningServer, fact_id: str) -> bool:
    return server.hub.memory.get(server.hub.owner.id, fact_id).current


async def memory_screen(app: TinyApp, pilot: Pilot[None]) -> MemoryScreen:
    await pilot.press("f3")
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    return screen


def listed(screen: MemoryScreen) -> list[str]:
    table = screen.query_one("#facts", DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def status_line(screen: MemoryScreen) -> str:
    return str(screen.query_one("#status", Static).content)


def detail(screen: MemoryScreen) -> str:
    return str(screen.query_one("#detail", Static).content)


async def type_text(pilot: Pilot[None], text: str) -> None:
    for key in text:
        await pilot.press("space" if key == " " else key)


async def test_recent_facts_search_and_a_facts_supersedes_trail(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    tea = learn(server, "I drink tea in the morning")
    learn(server, "I drink coffee in the morning", supersedes=(tea,))
    learn(server, "My sister lives in Lisbon")
    learn(server, "The cat is called Miso")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: len(listed(screen)) == 3)
        assert listed(screen) == [
            "The cat is called Miso",
            "My sister lives in Lisbon",
            "I drink coffee in the morning",
        ]
        assert status_line(screen) == "3 facts, newest first"
        assert screen.query_one("#facts", DataTable).has_focus
        await pilot.press("slash")  # to the search box, without typing the slash
        assert screen.query_one("#search", Input).has_focus
        await type_text(pilot, "where does my sister live")  # "d" here types, it unlearns nothing
        assert screen.query_one("#search", Input).value == "where does my sister live"
        assert app.screen is screen
        searched = "best match for “where does my sister live” first"
        await until(lambda: status_line(screen).endswith(searched))
        assert listed(screen)[0] == "My sister lives in Lisbon"
        await pilot.press("escape")  # back to the newest facts
        await until(lambda: status_line(screen) == "3 facts, newest first")
        await pilot.press("down")  # into the list
        assert screen.query_one("#facts", DataTable).has_focus
        await pilot.press("down", "down")
        await until(lambda: "History, oldest first" in detail(screen))
        shown = detail(screen)
        assert shown.index("I drink tea in the morning") < shown.index("▶")
        assert shown.index("▶") < shown.rindex("I drink coffee in the morning")


async def test_unlearn_asks_first_and_only_yes_closes_the_fact(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    learn(server, "I live by the sea")
    jazz = learn(server, "I like jazz")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: listed(screen) == ["I like jazz", "I live by the sea"])
        await until(lambda: detail(screen).startswith("I like jazz"))
        assert screen.query_one("#facts", DataTable).has_focus  # the list has the keys
        for cancel in ("n", "escape", "enter"):  # Enter presses the focused Cancel button
            await pilot.press("d")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press(cancel)
            await until(lambda: app.screen is screen)
            assert is_current(server, jazz)
        await pilot.press("delete")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: listed(screen) == ["I live by the sea"])
        assert not is_current(server, jazz)  # closed, kept as history
        await until(lambda: detail(screen).startswith("I live by the sea"))


async def test_unlearn_can_be_rebound_in_tui_toml(start_hub: StartHub, tmp_path: Path) -> None:
    server = await start_hub()
    learn(server, "I like jazz")
    token = owner_headers(server)["Authorization"].split()[1]
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path, keys={"unlearn": "u"}))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: listed(screen) == ["I like jazz"])
        await pilot.press("down", "d")
        assert app.screen is screen  # "d" no longer unlearns
        await pilot.press("u")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await until(lambda: app.screen is screen)


async def test_clear_all_needs_the_word_all_typed(
    start_hub: StartHub, tmp_path: Path, closed_port: int
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")  # embedded model
    learn(server, "I like jazz")
    learn(server, "I live by the sea")
    owner = server.hub.owner.id
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: len(listed(screen)) == 2)
        await pilot.press("down")
        for word in ("yes", "al", ""):
            await pilot.press("X")
            await until(lambda: isinstance(app.screen, AskTextScreen))
            await type_text(pilot, word)
            await pilot.press("enter")
            await until(lambda: app.screen is screen)
            assert server.hub.memory.count(owner) == 2
        await pilot.press("X")
        await until(lambda: isinstance(app.screen, AskTextScreen))
        await pilot.press("escape")
        await until(lambda: app.screen is screen)
        assert server.hub.memory.count(owner) == 2 and len(listed(screen)) == 2
        await pilot.press("X")
        await until(lambda: isinstance(app.screen, AskTextScreen))
        await type_text(pilot, "all")
        await pilot.press("enter")
        await until(lambda: listed(screen) == [])
        assert server.hub.memory.count(owner) == 0
        assert server.hub.memory.recent(owner) == []
        assert "No facts yet." in detail(screen)
        await until(lambda: "cannot save memories" in detail(screen))  # the embedded model
        assert "ollama pull qwen3" in detail(screen)


async def test_a_refusal_is_shown_in_the_hubs_own_words(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    jazz = learn(server, "I like jazz")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: listed(screen) == ["I like jazz"])
        server.hub.memory.unlearn(server.hub.owner.id, jazz)  # closed behind the screen's back
        await pilot.press("down", "d")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: "already closed" in status_line(screen))
        assert status_line(screen).startswith(f"the hub answered 400: id: fact {jazz}")
        assert screen.query_one("#status", Static).has_class("problem")


async def test_an_unreachable_hub_is_said_plainly(closed_port: int, tmp_path: Path) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: "cannot reach the hub" in status_line(screen))
        assert screen.query_one("#status", Static).has_class("problem")
        await pilot.press("down", "d")  # nothing listed: nothing to unlearn, and no crash
        assert app.screen is screen


def test_detail_of_a_fact_alone_says_it_has_no_versions() -> None:
    fact = {"id": "m_1", "fact": "I like jazz", "kind": "fact", "visibility": "private"}
    shown = detail_text("m_1", [{**fact, "valid_from": "2024-05-01T10:02:03Z"}]).plain
    learned = stamp("2024-05-01T10:02:03Z")  # in this machine's time zone
    assert len(learned) == len("2024-05-01 10:02") and learned.endswith(":02")
    assert "I like jazz" in shown and f"learned {learned}" in shown
    assert "No earlier or later versions." in shown
    assert detail_text("m_2", []).plain == "This fact is gone."


async def test_recently_forgotten_lists_what_was_forgotten_and_brings_it_back(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    me = server.hub.owner.id
    learn(server, "I live by the sea")
    bike = learn(server, "The user's bicycle is a green Brompton.")
    lock = learn(server, "The bike lock code is 4411.")
    server.hub.memory.forget(me, [bike, lock], scope="about", about="my bicycle")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: listed(screen) == ["I live by the sea"])
        await pilot.press("b")  # nothing to bring back in the facts list: a hint, no crash
        await pilot.press("f")
        await until(lambda: status_line(screen).startswith("1 forgetting you can bring back"))
        [row] = listed(screen)
        assert row.startswith("2 facts about my bicycle: The user") and row.endswith("…")
        shown = detail(screen)
        assert "The bike lock code is 4411." in shown and "deleted for good after" in shown
        await pilot.press("d")  # unlearning means nothing here
        assert app.screen is screen
        await pilot.press("b")
        await until(lambda: server.hub.memory.count(me) == 3)
        await until(lambda: status_line(screen).startswith("0 forgettings"))
        assert "Nothing was forgotten recently." in detail(screen)
        await pilot.press("f")
        await until(lambda: len(listed(screen)) == 3)
        assert "The bike lock code is 4411." in listed(screen)


async def test_a_fact_unlearned_here_can_be_brought_back(
    start_hub: StartHub, tmp_path: Path
) -> None:
    server = await start_hub()
    jazz = learn(server, "I like jazz")
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memory_screen(app, pilot)
        await until(lambda: listed(screen) == ["I like jazz"])
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: listed(screen) == [])
        assert not is_current(server, jazz)
        await pilot.press("f")
        await until(lambda: listed(screen) == ["1 fact: I like jazz"])
        await pilot.press("b")
        await until(lambda: server.hub.memory.count(server.hub.owner.id) == 1)
