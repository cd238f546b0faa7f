"""One truth about the model: the chat's header and status line, a new chat's guidance, the
empty memory screen, the settings screen and ``tiny-hub doctor``'s chat-model line all say what
/api/health says (provider, model, tools) — for SmolLM2, the embedded 1.5B and an Ollama model
— and the model picker selects the embedded 1.5B, after which every screen says it answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from textual.widgets import Input, Select, Static

from fakes.ollama import FakeOllama
from harness.waits import until
from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.bundled_models import QWEN_CODER_1_5B, SMOLLM2
from hub.agent.models import probe_ollama
from hub.api.server import RunningServer
from hub.cli.doctor import check_chat_model
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tests.test_tui import chat_of
from tests.test_tui_settings import open_settings, text_of, token_of
from tui.app import TinyApp
from tui.chat import ChatScreen
from tui.config import TuiConfig
from tui.guidance import EmptyChat
from tui.settings import ModelForm
from tui.widgets import StatusLine

CASES = {  # the hub's settings, and what /api/health must then say
    "smollm2": ({"embedded_model": SMOLLM2.key}, (c.PROVIDER_EMBEDDED, SMOLLM2.title, False)),
    "qwen": (
        {"embedded_model": QWEN_CODER_1_5B.key},
        (c.PROVIDER_EMBEDDED, QWEN_CODER_1_5B.title, True),
    ),
    "ollama": ({}, (c.PROVIDER_OLLAMA, "qwen3:latest", True)),
}


async def health_of(http: aiohttp.ClientSession, server: RunningServer) -> dict[str, Any]:
    async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response:
        return dict(await response.json())


def words_for(provider: str, model_id: str, tools: bool) -> str:
    """The few words every screen uses for a model, spelled out here by hand."""
    offline = "offline, " if provider == c.PROVIDER_EMBEDDED else ""
    return f"{provider} {model_id} · {offline}{'tools on' if tools else 'tools off'}"


@pytest.mark.parametrize("case", list(CASES))
async def test_every_screen_and_doctor_say_what_health_says(
    start_hub: StartHub,
    fake_ollama: FakeOllama,
    closed_port: int,
    tmp_path: Path,
    http: aiohttp.ClientSession,
    case: str,
) -> None:
    if case == "qwen" and not bundled_models.installed(QWEN_CODER_1_5B):
        pytest.skip(
            "the agent-model extra (Qwen2.5-Coder-1.5B) is not installed on this machine; the "
            "same screens are checked for SmolLM2 and Ollama here, and for the 1.5B in CI"
        )
    overrides, expected = CASES[case]
    ollama = fake_ollama.url if case == "ollama" else f"http://127.0.0.1:{closed_port}"
    server = await start_hub(ollama_host=ollama, **overrides)
    model = (await health_of(http, server))["model"]
    assert (model["provider"], model["id"], model["toolsCapable"]) == expected
    provider, model_id, tools = expected
    words = words_for(provider, model_id, tools)

    doctor = check_chat_model(server.hub.settings, await probe_ollama(ollama))
    assert doctor.detail.startswith(words)
    assert doctor.status == ("OK" if tools else "WARN")
    if not tools and not bundled_models.installed(QWEN_CODER_1_5B):  # both ways, named
        assert "agent-model" in doctor.fix and "ollama pull qwen3" in doctor.fix
    elif not tools:  # the extra is there: how to use it
        assert f"set embedded.model = {QWEN_CODER_1_5B.key}" in doctor.fix

    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        chat = chat_of(app)
        status = chat.query_one(StatusLine)
        await until(lambda: status.health is not None)
        assert chat.sub_title == words
        assert words in status.plain
        assert status.plain.startswith("⚠") is not tools, "a model without tools is a warning"
        guidance = str(chat.query_one(EmptyChat).render())
        if tools:
            assert "can save memories" in guidance and "cannot" not in guidance
        else:
            assert "cannot save memories" in guidance
            assert "pip install 'tiny-hub[agent-model]'" in guidance
            assert "ollama pull qwen3" in guidance

        await app.switch_mode("memory")
        detail = app.screen.query_one("#detail", Static)
        await until(lambda: "No facts yet" in str(detail.render()))
        hint = str(detail.render())
        if tools:
            assert "what it learns shows up here" in hint
        else:
            assert "cannot save memories" in hint and "agent-model" in hint

        await app.switch_mode("chat")
        settings = await open_settings(app, pilot)
        assert f"default: {words}" in text_of(settings, "#model")
        assert f"model: {words}" in text_of(settings, "#status")


async def test_the_picker_selects_the_embedded_tool_model(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    http: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ChatScreen, "health_every_s", 0.2)
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")  # SmolLM2 answers
    app = TinyApp(HubClient(server.url, token_of(server)), TuiConfig(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_settings(app, pilot)
        listed = text_of(screen, "#models")
        await pilot.press("m")
        form = app.screen
        assert isinstance(form, ModelForm)
        assert form.query_one("#provider", Select).value == c.PROVIDER_EMBEDDED
        assert form.query_one("#embedded-row").display
        pick = form.query_one("#embedded-model", Select)
        await until(lambda: pick.value == SMOLLM2.key)  # what answers now
        model_id = form.query_one("#model-id", Input)
        if not bundled_models.installed(QWEN_CODER_1_5B):
            assert (
                f"Qwen2.5-Coder-1.5B-Instruct · tools on · not installed: {QWEN_CODER_1_5B.install}"
                in listed
            )
            assert [value for _, value in pick._options if value != Select.NULL] == [SMOLLM2.key]
            return
        await pilot.press("tab")  # from the provider to the installed embedded models
        assert form.focused is pick
        await pilot.press("enter", "down", "enter")  # the one below SmolLM2
        await until(lambda: model_id.value == QWEN_CODER_1_5B.key)
        note = text_of(form, "#model-note")
        assert "Qwen2.5-Coder-1.5B-Instruct" in note and "can save memories" in note
        await pilot.press("ctrl+s")
        saved_line = f"saved: {words_for(c.PROVIDER_EMBEDDED, QWEN_CODER_1_5B.title, True)}"
        await until(lambda: saved_line in text_of(screen, "#model"))
        async with http.get(f"{server.url}/api/model", headers=owner_headers(server)) as got:
            assert (await got.json())["saved"] == {
                "provider": "embedded",
                "id": QWEN_CODER_1_5B.key,
                "baseUrl": "",
                "maxTokens": None,
            }
        await app.switch_mode("chat")
        chat = chat_of(app)
        words = words_for(c.PROVIDER_EMBEDDED, QWEN_CODER_1_5B.title, True)
        await until(lambda: chat.sub_title == words, what=str(chat.sub_title))
        assert "can save memories" in str(chat.query_one(EmptyChat).render())
        async with http.get(f"{server.url}/api/health") as anonymous:
            default = (await anonymous.json())["model"]
        assert default["id"] == SMOLLM2.title, "a caller without the choice gets the default"
