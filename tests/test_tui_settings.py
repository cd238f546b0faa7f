"""The settings screen, driven headless against a real hub (fake Ollama behind it): tinys, the
model choice, the hub's status — and an API key that never reaches the screen or the disk."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Digits, Footer, Input, Select, Static, TextArea

from fakes.ollama import FakeModel, FakeOllama
from harness.waits import until
from hub import contracts as c
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.settings import (
    ASKING_OLLAMA,
    NO_LAN,
    NO_PHONES,
    KeyNotice,
    ModelForm,
    PairNotice,
    SettingsScreen,
    TinyForm,
    cloud_state,
)
from tui.widgets import ConfirmScreen

SECRET = "sktestsecret4242zz"


def token_of(server: RunningServer) -> str:
    return owner_headers(server)["Authorization"].split()[1]


@contextlib.asynccontextmanager
async def settings_of(
    server: RunningServer, tmp_path: Path, size: tuple[int, int] = (80, 24)
) -> AsyncIterator[tuple[TinyApp, Pilot[None], SettingsScreen]]:
    """The TUI on ``server`` as its owner, on the settings screen once it has loaded."""
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=size) as pilot:
        yield app, pilot, await open_settings(app, pilot)


async def open_settings(app: TinyApp, pilot: Pilot[None]) -> SettingsScreen:
    """F4, then wait until both loads answered (or failed): the model section is drawn once
    /api/model, /api/health and /api/models (which asks Ollama) have all answered."""
    await pilot.press("f4")
    screen = app.screen
    assert isinstance(screen, SettingsScreen)
    await until(lambda: "loading" not in text_of(screen, "#model"))
    await until(lambda: "loading" not in text_of(screen, "#tinys-note"))
    return screen


def text_of(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def rows(screen: SettingsScreen, selector: str = "#tinys") -> dict[str, list[str]]:
    table = screen.query_one(selector, DataTable)
    return {str(key.value): [str(cell) for cell in table.get_row(key)] for key in table.rows}


def files_holding(root: Path, text: str) -> tuple[list[Path], list[Path]]:
    """Every file under root, and those whose bytes contain text."""
    files = [p for p in root.rglob("*") if p.is_file()]
    return files, [p for p in files if text.encode() in p.read_bytes()]


async def type_text(pilot: Pilot[None], text: str) -> None:
    for char in text:
        await pilot.press("space" if char == " " else char)


async def get(http: aiohttp.ClientSession, server: RunningServer, path: str) -> Any:
    async with http.get(f"{server.url}{path}", headers=owner_headers(server)) as response:
        return await response.json()


async def test_lists_tinys_the_model_and_the_status(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (_app, _pilot, screen):
        await until(lambda: "tiny" in rows(screen))
        marker, name, visibility, prompt = rows(screen)["tiny"]
        assert (marker, name, visibility) == ("▶", "tiny", "public")
        assert prompt.startswith("You are tiny, a personal companion")
        model = text_of(screen, "#model")
        assert "default: ollama qwen3:latest · tools on" in model
        assert "saved: none" in model
        status = text_of(screen, "#status")
        assert f"version {server.hub.version}" in status
        assert f"LAN: {NO_LAN}" in status
        assert "cloud: off (tiny-hub cloud join)" in status
        assert "pairing: p shows a code and a QR" in status
        assert text_of(screen, "#phones-note") == NO_PHONES
        assert not screen.query_one("#phones").display


async def test_create_a_tiny_in_the_modal_then_edit_its_prompt(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        await pilot.press("n")
        assert isinstance(app.screen, TinyForm)
        await type_text(pilot, "poet")
        app.screen.query_one("#prompt", TextArea).focus()
        await type_text(pilot, "You write haiku.")
        await pilot.press("ctrl+s")
        await until(lambda: app.screen is screen and "poet" in rows(screen))
        assert rows(screen)["poet"][1:] == ["poet", "public", "You write haiku."]
        answer = await get(http, server, "/api/tinys")
        assert [t["name"] for t in answer["tinys"]] == ["poet", "tiny"]
        assert answer["tinys"][0]["systemPrompt"] == "You write haiku."

        table = screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("poet"))
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, TinyForm)
        area = form.query_one("#prompt", TextArea)
        assert area.text == "You write haiku."
        area.load_text("You write limericks.\nAlways five lines.")
        await pilot.press("ctrl+s")
        await until(lambda: rows(screen)["poet"][3] == "You write limericks.")
        poet = await get(http, server, "/api/tinys/poet")
        assert poet["tiny"]["systemPrompt"] == "You write limericks.\nAlways five lines."


async def test_a_private_tiny_shows_its_key_once(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        await pilot.press("n")
        await type_text(pilot, "diary")
        app.screen.query_one("#visibility", Select).value = "private"
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, KeyNotice))
        notice = app.screen
        assert isinstance(notice, KeyNotice)
        key = notice.key
        assert key and key in text_of(notice, "#key")
        assert "Copy it now" in app.export_screenshot().replace("&#160;", " ")
        url = f"{server.url}/api/tinys/diary"
        async with http.get(url, headers={c.H_KEY: key}) as response:
            assert response.status == 200
        async with http.get(url) as response:
            assert response.status == 403
        await pilot.press("escape")
        await until(lambda: app.screen is screen and "diary" in rows(screen))
        assert rows(screen)["diary"][2] == "private"
        assert key not in app.export_screenshot()


async def test_a_bad_name_shows_the_hubs_sentence(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, _):
        await pilot.press("n")
        form = app.screen
        assert isinstance(form, TinyForm)
        await type_text(pilot, "Bad Name")
        await pilot.press("ctrl+s")
        await until(lambda: text_of(form, "#error").startswith("the hub answered"))
        assert text_of(form, "#error") == (
            "the hub answered 400: name must be 2-40 characters: lowercase letters, digits and '-'"
        )
        assert app.screen is form  # still open, so the name can be fixed


async def test_picking_a_tiny_sets_app_tiny_name(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    body = {"name": "helper", "systemPrompt": "You help."}
    async with http.post(
        f"{server.url}/api/tinys", json=body, headers=owner_headers(server)
    ) as response:
        assert response.status == 201
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        await until(lambda: list(rows(screen)) == ["helper", "tiny"])
        assert getattr(app, "tiny_name", c.DEFAULT_TINY) == "tiny"
        await pilot.press("u")  # the cursor starts on the newest: helper
        assert app.tiny_name == "helper"  # type: ignore[attr-defined]
        assert rows(screen)["helper"][0] == "▶" and rows(screen)["tiny"][0] == ""
        await pilot.press("down", "enter")
        assert app.tiny_name == "tiny"  # type: ignore[attr-defined]


async def test_saving_an_ollama_choice_reaches_the_hub_and_clearing_forgets_it(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        assert form.query_one("#provider", Select).value == c.PROVIDER_OLLAMA
        form.query_one("#model-id", Input).value = "llama3.1"
        await pilot.press("ctrl+s")
        await until(lambda: "saved: ollama llama3.1" in text_of(screen, "#model"))
        assert (await get(http, server, "/api/model"))["saved"] == {
            "provider": "ollama",
            "id": "llama3.1",
            "baseUrl": "",
            "maxTokens": None,
        }
        await pilot.press("m", "ctrl+r")
        await until(lambda: "saved: none" in text_of(screen, "#model"))
        assert (await get(http, server, "/api/model"))["saved"] is None


class HeldOllama(FakeOllama):
    """A fake Ollama whose model list waits until the test lets it answer."""

    def __init__(self) -> None:
        super().__init__([FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))])
        self.answer = asyncio.Event()
        self.answer.set()
        self.asked = asyncio.Event()

    async def _tags(self, request: web.Request) -> web.Response:
        self.asked.set()
        await self.answer.wait()
        return await super()._tags(request)


@pytest.fixture
async def held_ollama() -> AsyncIterator[HeldOllama]:
    fake = HeldOllama()
    await fake.start()
    yield fake
    fake.answer.set()
    await fake.stop()


async def test_the_model_section_lists_ollamas_models_with_tools_on_or_off(
    start_hub: StartHub, held_ollama: HeldOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=held_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        assert text_of(screen, "#models").splitlines()[:5] == [
            f"Ollama at {held_ollama.url} has:",
            "  qwen3:latest · tools on",
            "  gemma:2b · tools off",
            "embedded, offline on this machine:",
            "  SmolLM2-135M-Instruct · tools off · installed · embedded.model",
        ]
        # A reload asks Ollama again (the hub's default stays cached): while Ollama has not
        # answered, the section says so, and the screen goes on answering keys.
        held_ollama.answer.clear()
        held_ollama.asked.clear()
        await pilot.press("r")
        await until(held_ollama.asked.is_set)
        assert text_of(screen, "#models") == ASKING_OLLAMA
        await pilot.press("n")
        form = app.screen
        assert isinstance(form, TinyForm)
        await pilot.press("escape")
        assert app.screen is screen
        held_ollama.answer.set()
        # (had the hub given up on the held Ollama meanwhile, a reload asks it once more)
        await until(lambda: text_of(screen, "#models") != ASKING_OLLAMA)
        if "gemma:2b · tools off" not in text_of(screen, "#models"):
            await pilot.press("r")
        await until(lambda: "gemma:2b · tools off" in text_of(screen, "#models"))


async def test_picking_a_listed_model_in_the_form_saves_it(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))]
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        pick = form.query_one("#ollama-model", Select)
        model_id = form.query_one("#model-id", Input)
        assert (pick.value, model_id.value) == ("qwen3:latest", "qwen3:latest")  # the default
        assert text_of(form, "#model-note") == "qwen3:latest can call tools."
        await pilot.press("tab")  # from the provider to Ollama's models
        assert form.focused is pick
        await pilot.press("enter", "down", "enter")  # the one below qwen3:latest
        await until(lambda: model_id.value == "gemma:2b")
        assert pick.value == "gemma:2b"
        await until(lambda: "gemma:2b cannot call tools" in text_of(form, "#model-note"))
        await pilot.press("ctrl+s")
        await until(lambda: "saved: ollama gemma:2b · tools off" in text_of(screen, "#model"))
        assert (await get(http, server, "/api/model"))["saved"] == {
            "provider": "ollama",
            "id": "gemma:2b",
            "baseUrl": "",
            "maxTokens": None,
        }


async def test_an_id_typed_by_hand_still_works_and_a_late_list_is_offered(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))]
    server = await start_hub(ollama_host=fake_ollama.url)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        listed = screen.listed
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        pick = form.query_one("#ollama-model", Select)
        form.offer(None)  # as if the form opened before Ollama answered
        await until(lambda: text_of(form, "#model-note") == ASKING_OLLAMA and pick.disabled)
        form.offer(listed)
        await until(lambda: not pick.disabled and pick.value == "qwen3:latest")
        model_id = form.query_one("#model-id", Input)
        model_id.value = ""
        model_id.focus()
        await type_text(pilot, "gemma")  # gemma:latest is not listed: no pick, no tools claim
        await until(lambda: pick.value == Select.NULL)
        assert "is not listed" in text_of(form, "#model-note")
        await pilot.press("colon", "2", "b")
        await until(lambda: pick.value == "gemma:2b")
        await pilot.press("ctrl+s")
        await until(lambda: "saved: ollama gemma:2b" in text_of(screen, "#model"))
        assert (await get(http, server, "/api/model"))["saved"]["id"] == "gemma:2b"


async def test_ollama_not_answering_is_said_with_the_hubs_reason(
    start_hub: StartHub, closed_port: int, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        reason, heading, smollm2, qwen = text_of(screen, "#models").splitlines()
        host = f"http://127.0.0.1:{closed_port}"
        assert reason == (  # the fix as doctor says it
            f"Ollama: not answering at {host} (see why above); "
            "install it and run: ollama pull qwen3"
        )
        assert "Cannot connect" in text_of(screen, "#model"), "the hub's reason says the error"
        shown = text_of(screen, "#model") + text_of(screen, "#models")
        assert shown.count("Cannot connect") == 1, "the raw error once, not twice"
        assert heading == "embedded, offline on this machine:"
        assert smollm2 == "  SmolLM2-135M-Instruct · tools off · installed · embedded.model"
        assert qwen.startswith("  Qwen2.5-Coder-1.5B-Instruct · tools on · ")
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        assert form.query_one("#provider", Select).value == c.PROVIDER_EMBEDDED  # the default
        assert not form.query_one("#pick-row").display
        said = text_of(form, "#model-note")  # what the embedded model cannot do, and the fix
        assert "SmolLM2-135M-Instruct" in said and "cannot save memories" in said
        assert "ollama pull qwen3" in said
        form.query_one("#provider", Select).value = c.PROVIDER_OLLAMA
        await until(lambda: form.query_one("#pick-row").display)
        assert form.query_one("#ollama-model", Select).disabled  # nothing to pick
        note = text_of(form, "#model-note")  # the form has no "why" line: the error is here
        assert note.startswith(f"Ollama: not answering at {host} (Cannot connect"), note
        assert note.endswith("install it and run: ollama pull qwen3")


async def test_an_open_provider_list_covers_no_half_lines_of_text(
    start_hub: StartHub, closed_port: int, tmp_path: Path
) -> None:
    """The list opens framed over the form; the notes it would cover in part (their line
    ends showing beside it) are hidden until it closes."""
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    async with settings_of(server, tmp_path) as (app, pilot, _):
        await pilot.press("m")
        await until(lambda: isinstance(app.screen, ModelForm))
        form = app.screen
        notes = list(form.query(".note"))
        assert notes and all(note.visible for note in notes)
        await pilot.press("enter")  # the provider list, which has the focus
        await until(lambda: form.query_one("#provider", Select).expanded)
        await until(lambda: not any(note.visible for note in notes))
        await pilot.press("escape")
        await until(lambda: all(note.visible for note in notes))
        assert app.screen is form, "escape closed the list, not the form"


async def test_a_cloud_key_is_never_rendered_nor_written(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path / "tui"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_settings(app, pilot)
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        form.query_one("#provider", Select).value = "openai"
        await until(lambda: form.query_one("#model-id", Input).value == "")  # qwen3 is gone
        form.query_one("#model-id", Input).value = "gpt-4o-mini"
        form.query_one("#api-key", Input).focus()
        await type_text(pilot, SECRET)
        assert form.query_one("#api-key", Input).value == SECRET  # typed, really
        await pilot.pause()
        shown = app.export_screenshot()
        assert "gpt-4o-mini" in shown and SECRET not in shown
        await pilot.press("ctrl+s")
        await until(lambda: "saved: openai gpt-4o-mini" in text_of(screen, "#model"))
        assert "API key for openai: held in memory" in text_of(screen, "#model")
        assert SECRET not in app.export_screenshot()
        assert not any(
            SECRET in str(widget.render()) for widget in screen.query("*").results(Widget)
        )
        # For this session's chat turns only: the hub refuses to store keys.
        assert app.model_headers == {  # type: ignore[attr-defined]
            c.H_MODEL_PROVIDER: "openai",
            c.H_MODEL_ID: "gpt-4o-mini",
            c.H_MODEL_API_KEY: SECRET,
        }
        saved = (await get(http, server, "/api/model"))["saved"]
        assert saved["provider"] == "openai" and SECRET not in str(saved)
        await pilot.press("m", "ctrl+r")
        await until(lambda: "saved: none" in text_of(screen, "#model"))
        assert app.model_headers == {}  # type: ignore[attr-defined]
    written, holding = files_holding(tmp_path, SECRET)  # the TUI's dir and the hub's (hub.db)
    assert written and holding == []


async def test_every_settings_binding_shows_in_the_footer_at_80_by_24(
    closed_port: int, tmp_path: Path
) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_settings(app, pilot)
        footer = screen.query_one(Footer)
        await until(lambda: footer.virtual_size.width <= 80, what=str(footer.virtual_size))
        shown = {b.binding.id for b in screen.active_bindings.values() if b.binding.show}
        assert shown >= {
            "settings_use_tiny",
            "settings_reload",
            "show_settings",
            "settings_new_tiny",
            "settings_edit_tiny",
            "settings_choose_model",
            "settings_pair",
            "settings_unpair",
            "show_chat",
            "quit",
        }
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        modal = {b.binding.id for b in form.active_bindings.values() if b.binding.show}
        assert modal >= {"settings_save", "settings_cancel", "settings_unset_model"}


async def test_an_unreachable_hub_is_said_plainly(closed_port: int, tmp_path: Path) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_settings(app, pilot)
        for part in ("#tinys-note", "#model", "#status"):
            assert text_of(screen, part).startswith(
                f"cannot reach the hub at http://127.0.0.1:{closed_port}"
            )


async def test_settings_keys_rebind_from_tui_toml(closed_port: int, tmp_path: Path) -> None:
    (tmp_path / "tui.toml").write_text('[keys]\nsettings_new_tiny = "f9"\n')
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig.load(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_settings(app, pilot)
        await pilot.press("n")
        assert app.screen is screen
        await pilot.press("f9")
        assert isinstance(app.screen, TinyForm)
        await pilot.press("escape")
        assert app.screen is screen


LAN_URL = "http://192.168.1.20:8765"


async def test_the_lan_url_is_shown(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, lan_url=LAN_URL)
    async with settings_of(server, tmp_path) as (_app, _pilot, screen):
        assert f"LAN: {LAN_URL}" in text_of(screen, "#status").splitlines()


async def test_pair_a_phone_with_the_shown_code_then_unpair_it(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, lan_url=LAN_URL)
    async with settings_of(server, tmp_path) as (app, pilot, screen):
        assert not any(isinstance(s, PairNotice) for s in app.screen_stack)  # only when asked
        await pilot.press("p")
        await until(lambda: isinstance(app.screen, PairNotice))
        notice = app.screen
        assert isinstance(notice, PairNotice)
        code = notice.query_one("#code", Digits).value
        assert len(code) == 6 and code.isdigit()
        qr = text_of(notice, "#qr").splitlines()
        assert len(qr) > 10 and len({len(line) for line in qr}) == 1  # a block, as the hub drew it
        assert set("".join(qr)) <= set(" █▀▄")
        assert text_of(notice, "#valid") == "valid for 5 minutes, once"

        body = {"code": code, "name": "Bea's Pixel", "platform": "android"}
        async with http.post(f"{server.url}/api/pair", json=body) as response:
            assert response.status == 200, await response.text()
            device_id = (await response.json())["deviceId"]
        await pilot.press("escape")
        await until(lambda: app.screen is screen and device_id in rows(screen, "#phones"))
        name, platform, paired, online = rows(screen, "#phones")[device_id]
        assert (name, platform, online) == ("Bea's Pixel", "android", "offline")
        assert paired  # a date
        assert screen.query_one("#phones").display

        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # no: nothing happens
        await until(lambda: app.screen is screen)
        tokens = await get(http, server, "/api/tokens")
        assert [t["deviceId"] for t in tokens["tokens"]] == [device_id]
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        assert "Bea's Pixel" in text_of(app.screen, "#question")
        await pilot.press("y")
        await until(lambda: text_of(screen, "#phones-note") == NO_PHONES)
        assert rows(screen, "#phones") == {}
        assert (await get(http, server, "/api/tokens")) == {"tokens": []}


async def test_pairing_as_a_non_owner_shows_the_hubs_sentence(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, lan_url=LAN_URL)
    bea = server.hub.identity.add_user("bea")
    token = server.hub.identity.issue_token(bea, "tui")
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_settings(app, pilot)
        await until(lambda: text_of(screen, "#phones-note").startswith("the hub answered 403"))
        await pilot.press("p")
        await until(lambda: any("403" in n.message for n in app._notifications))
        (note,) = [n for n in app._notifications if "403" in n.message]
        assert note.message.startswith("the hub answered 403")
        assert app.screen is screen
        assert server.hub.db["pairing_offers"].count == 0


class OfflineCloud:
    """Stands in for the hub's cloud link (hub/cloud/link.py): offline, three messages waiting."""

    def status(self) -> dict[str, Any]:
        return {"state": "offline", "since": 0.0, "detail": "cannot reach the cloud", "pending": 3}

    async def stop(self) -> None:
        pass


async def test_an_offline_cloud_link_is_said_with_its_reason_and_what_waits(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    server.parts.cloud = OfflineCloud()
    async with settings_of(server, tmp_path, size=(120, 40)) as (_app, _pilot, screen):
        status = text_of(screen, "#status")
        assert "cloud: offline since " in status
        assert " — cannot reach the cloud · 3 waiting" in status


def test_each_cloud_state_reads_as_one_phrase() -> None:
    assert cloud_state({"state": "off"}) == "off (tiny-hub cloud join)"
    assert cloud_state({"state": "online", "since": 1.0, "detail": "", "pending": 0}) == "online"
    assert cloud_state({"state": "refused", "detail": "token revoked"}) == "refused — token revoked"
    assert cloud_state({"state": "offline", "since": None, "detail": "x", "pending": 0}) == (
        "offline — x"
    )
    assert cloud_state(None) == "not available on this hub yet"


def test_memory_sync_is_named_after_the_link_when_it_is_on() -> None:
    link = {"state": "online", "since": 1.0, "detail": "", "pending": 0}
    assert cloud_state({**link, "memory": {"state": "off"}}) == "online"
    synced = cloud_state({**link, "memory": {"state": "online", "syncedAt": 1.0}})
    assert synced.startswith("online · memory: in sync at ")
    offline = {"state": "offline", "since": None, "detail": "down", "syncedAt": None}
    assert cloud_state({**link, "memory": offline}) == "online · memory: offline"
