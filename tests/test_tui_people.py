"""People on the TUI's settings screen, driven headless against a real hub: the owner lists,
adds (the pairing code shows once and pairs the phone as that person) and removes (keep or
purge, asked); a member opened with their own token sees no people section."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from textual.widgets import Digits, Input

from fakes.ollama import FakeOllama
from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_tui_settings import open_settings, rows, settings_of, text_of
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.settings import NO_PEOPLE, PairNotice, PersonForm, RemoveQuestion, SettingsScreen


async def add_in_the_form(pilot: object, app: TinyApp, name: str, login: str) -> None:
    await pilot.press("a")  # type: ignore[attr-defined]
    await until(lambda: isinstance(app.screen, PersonForm))
    form = app.screen
    form.query_one("#person-name", Input).value = name
    form.query_one("#person-login", Input).value = login
    await pilot.press("ctrl+s")  # type: ignore[attr-defined]


async def test_the_owner_adds_a_person_whose_phone_pairs_as_them_then_removes_them(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server: RunningServer = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path, size=(100, 40)) as (app, pilot, screen):
        await until(lambda: "owner" in rows(screen, "#people"))
        assert text_of(screen, "#people-note") == NO_PEOPLE

        await add_in_the_form(pilot, app, "Bea Smith", "bea")
        await until(lambda: isinstance(app.screen, PairNotice))
        notice = app.screen
        assert "@bea" in text_of(notice, ".title")
        code = notice.query_one("#code", Digits).value
        body = {"code": code, "name": "Bea's Pixel", "platform": "ios"}
        async with http.post(f"{server.url}/api/pair", json=body) as response:
            paired = await response.json()
        assert response.status == 200 and paired["accountToken"]
        bea = server.hub.identity.resolve(paired["accountToken"])
        assert bea is not None and bea.login == "bea"
        await pilot.press("escape")
        await until(lambda: app.screen is screen and "bea" in rows(screen, "#people"))
        assert rows(screen, "#people")["bea"] == ["@bea", "Bea Smith", "member", "1"]

        table = screen.query_one("#people")
        table.focus()
        table.move_cursor(row=list(rows(screen, "#people")).index("bea"))  # type: ignore[attr-defined]
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, RemoveQuestion))
        assert "keep" in text_of(app.screen, "#question").lower()
        await pilot.press("n")  # cancel: nothing happens
        await until(lambda: app.screen is screen)
        assert server.hub.identity.resolve(paired["accountToken"]) is not None

        await pilot.press("d")
        await until(lambda: isinstance(app.screen, RemoveQuestion))
        await pilot.press("k")
        await until(lambda: "bea" not in rows(screen, "#people"))
        assert server.hub.identity.resolve(paired["accountToken"]) is None
        assert server.hub.identity.by_login("bea") is not None  # kept, as chosen


async def test_a_refused_name_stays_in_the_form_with_the_hubs_sentence(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server: RunningServer = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path, size=(100, 40)) as (app, pilot, _screen):
        await add_in_the_form(pilot, app, "Dee", "owner")  # the owner's login is taken
        await until(lambda: "409" in text_of(app.screen, "#error"))
        assert isinstance(app.screen, PersonForm)
        assert server.hub.identity.by_login("dee") is None


async def test_a_member_with_their_own_token_sees_no_people(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server: RunningServer = await start_hub(ollama_host=fake_ollama.url)
    bea = server.hub.identity.add_user("Bea", login="bea")
    token = server.hub.identity.issue_token(bea, "tui")
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_settings(app, pilot)
        assert isinstance(screen, SettingsScreen)
        await until(lambda: not screen.query_one("#people-heading").display)
        assert not screen.query_one("#people").display
        assert not screen.query_one("#people-note").display
        await add_in_the_form(pilot, app, "Cy", "cy")  # the hub refuses a member
        await until(lambda: "403" in text_of(app.screen, "#error"))
        assert server.hub.identity.by_login("cy") is None
