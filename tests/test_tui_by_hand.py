"""By hand in the TUI what the companion's tools set up, driven headless against a real hub:
a job from the Jobs screen's form, the Telegram bot from the settings screen (against a fake
Bot API) and a forged tool from the Tools screen; each is what the agent's own tools then see."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static

from fakes.ollama import FakeOllama
from fakes.telegram import TOKEN, FakeTelegram
from harness.waits import until
from hub.agent.tools import mount_tools, schedule, telegram
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tests.toolcall import result_text, use_tool
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.job_form import JobForm
from tui.jobs import JobsScreen
from tui.settings.telegram import NO_BOT, TelegramForm
from tui.tables import cursor_key
from tui.tool_forms import ForgeForm, TryForm
from tui.tools import ToolsScreen


@pytest.fixture
async def server(
    start_hub: StartHub, fake_ollama: FakeOllama, fake_telegram: FakeTelegram
) -> RunningServer:
    return await start_hub(
        ollama_host=fake_ollama.url, telegram_api_url=fake_telegram.url, telegram_long_poll_s=1
    )


def app_for(server: RunningServer, tmp_path: Path) -> TinyApp:
    token = owner_headers(server)["Authorization"].split()[1]
    return TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))


async def type_into(pilot: Pilot[None], selector: str, text: str) -> None:
    field = pilot.app.screen.query_one(selector, Input)
    field.value = text
    await pilot.pause()


async def test_a_job_from_the_jobs_form_is_the_schedule_tools(
    server: RunningServer, tmp_path: Path
) -> None:
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f8")
        assert isinstance(app.screen, JobsScreen)
        await pilot.press("a")
        form = app.screen
        assert isinstance(form, JobForm)
        preview = form.query_one("#job-preview", Static)
        await until(lambda: "every 2 hours: next " in str(preview.render()), what="the preview")
        form.query_one("#job-kind", Select).value = "daily"
        await type_into(pilot, "#job-value", "07:00")
        await until(lambda: "daily at 07:00 UTC" in str(preview.render()), what="daily preview")
        await type_into(pilot, "#job-value", "25:00")
        await until(
            lambda: "needs a time from 00:00 to 23:59" in str(preview.render()), what="refusal"
        )
        await type_into(pilot, "#job-prompt", "Tell me the weather")
        await type_into(pilot, "#job-title", "weather")
        await pilot.press("ctrl+s")
        error = form.query_one("#error", Static)
        await until(lambda: "23:59" in str(error.render()), what="the hub's refusal in the form")
        assert app.screen is form, "a refusal keeps the form open"
        await type_into(pilot, "#job-value", "07:30")
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, JobsScreen), what="the form closed")
    listed = result_text(await use_tool(server, schedule.schedule, action="list"))
    assert "daily at 07:30 UTC: weather (next " in listed, listed


async def test_a_tool_forged_on_the_tools_screen_is_mounted_and_tried(
    server: RunningServer, tmp_path: Path
) -> None:
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f9")
        screen = app.screen
        assert isinstance(screen, ToolsScreen)
        await until(lambda: "learn" in screen.tools, what="the built-in tools listed")
        assert screen.tools["learn"]["tier"] == "built-in"
        await pilot.press("f")
        form = app.screen
        assert isinstance(form, ForgeForm)
        await type_into(pilot, "#tool-name", "word_count")
        await type_into(pilot, "#tool-description", "Count the words of a text.")
        await pilot.press("ctrl+s")
        await until(lambda: app.screen is screen, what="the form closed")
        await until(lambda: "my_word_count" in screen.forged, what="the forged tool listed")
        assert cursor_key(screen.query_one("#tools", DataTable)) == "my_word_count", "first row"

        await pilot.press("t")
        trying = app.screen
        assert isinstance(trying, TryForm)
        await type_into(pilot, "#tool-input", '{"text": "one two three"}')
        await pilot.press("ctrl+s")
        result = trying.query_one("#tool-result", Static)
        await until(lambda: '✓ {"words": 3}' in str(result.render()), what="the run's result")
        await pilot.press("escape")

        await pilot.press("space")
        await until(lambda: screen.tools.get("my_word_count", {}).get("on") is False, what="off")
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    mounted = mount_tools(ToolContext(server.hub, server.hub.owner, tiny))
    assert mounted.tiers["my_word_count"] == "forged", "the agent's mount list has it"
    assert "my_word_count" not in mounted.names, "turned off by hand, off for the agent"


async def test_telegram_set_up_on_the_settings_screen_is_the_telegram_tools(
    server: RunningServer, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    app = app_for(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f4")
        section = app.screen.query_one("#telegram", Static)
        await until(lambda: str(section.render()) == NO_BOT, what="no bot yet")
        await pilot.press("t")
        form = app.screen
        assert isinstance(form, TelegramForm)
        await type_into(pilot, "#telegram-token", "123:short")
        await pilot.press("ctrl+s")
        error = form.query_one("#error", Static)
        await until(lambda: "that is not a bot token" in str(error.render()), what="refused")
        await type_into(pilot, "#telegram-token", TOKEN)
        await type_into(pilot, "#telegram-chat", "4242")
        await pilot.press("ctrl+s")
        await until(lambda: not isinstance(app.screen, TelegramForm), what="the form closed")
        await until(
            lambda: "@tiny_test_bot answers as tiny" in str(section.render()), what="the bot"
        )
        assert "allowed chats: 4242" in str(section.render())
        assert TOKEN not in str(section.render()), "the token is shown masked only"
    assert "getMe" in fake_telegram.calls
    status = result_text(await use_tool(server, telegram.telegram, action="status"))
    assert status.startswith("@tiny_test_bot answers as tiny") and "allowed chats: 4242" in status
