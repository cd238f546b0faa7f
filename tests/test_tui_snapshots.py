"""Each screen and each dialog at 80×24 and 120×40, against a real hub, compared with the SVG kept
beside the tests (pytest-textual-snapshot's SVG format; ``pytest --snapshot-update`` rewrites
them after an intended change, and the diff of the SVG shows what moved) — and read word by word
(tests/screen_words.py): no text on them is cut at an edge.

A screen must look the same on every run, so what differs between runs is fixed first: the hub
runs without Ollama (the embedded model: a fixed status line) unless a scene needs the scripted
model, nothing is enrolled, the pairing code is fixed, and the hub's address (a free port), its
uptime, the clock and the dates are replaced by placeholders.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from rich.cells import cell_len
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Select, Static
from textual.widgets._footer import FooterKey

from fakes.ollama import FakeOllama, Reply
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from harness.waits import until
from hub.api.server import RunningServer
from hub.client.http import HubClient
from hub.forge.store import ForgedDraft, ForgeStore
from hub.lan import pairing
from tests.conftest import StartHub, owner_headers
from tests.screen_words import cut_words
from tests.test_tui import chat_of
from tests.test_tui_chat import say, turn_done
from tests.test_tui_confirmations import FACTS
from tui import device_rows, forgotten, job_form
from tui import memory as memory_screen
from tui.app import TinyApp
from tui.config import TuiConfig
from tui.confirmation import ConfirmationCard
from tui.devices import DevicesScreen, RowDetail
from tui.job_form import JobForm
from tui.jobs import JobsScreen
from tui.settings import (
    KeyNotice,
    ModelForm,
    PairNotice,
    PersonForm,
    RemoveQuestion,
    TinyForm,
)
from tui.settings.telegram import TelegramForm
from tui.tool_forms import ForgeForm, InstallForm, TryForm
from tui.widgets import AskTextScreen, ConfirmScreen, Sidebar

SIZES = [(80, 24), (120, 40)]
SCREENS = ["chat", "devices", "memory", "settings", "map", "inbox", "community", "jobs", "tools"]
LOADED = {  # what each screen shows once the hub has answered
    "chat": "embedded model",
    "devices": "live ·",
    "memory": "newest first",
    "settings": "hub: http://",
    "map": "no markers yet",
    "inbox": "conversation(s)",
    "community": "reputation",
    "jobs": "pending alert(s)",
    "tools": "forged by you",
}


def visible_text(app: TinyApp) -> str:
    return " ".join(str(static.render()) for static in app.screen.query(Static))


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def still_picture(app: TinyApp, pilot: Pilot[None], looks: int = 80, alike: int = 3) -> str:
    """The screenshot once ``alike`` in a row are the same, a moment apart: a dialog that opens
    as a turn ends (focus moving to it, the prompt redrawn), or the table behind a dialog
    restyled as it loses focus, may still be drawing after one settle."""
    before, same = app.export_screenshot(title=app.title), 1
    for _ in range(looks):
        await settle(pilot)
        await asyncio.sleep(0.05)  # timers the redraw waits on get their turn
        now = app.export_screenshot(title=app.title)
        same = same + 1 if now == before else 1
        if same >= alike:
            return now
        before = now
    raise AssertionError(f"the screen was still changing after {looks} looks")


VOLATILE = (  # what changes between runs, and what stands in for it
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),  # a free port
    (re.compile(r"'127\.0\.0\.1', \d+"), "'127.0.0.1', PORT"),  # the same, as Python says it
    (re.compile(r"\bup \d+ s\b"), "up N s"),  # the hub's uptime
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "HH:MM:SS"),  # the time of the last refresh
    (re.compile(r"\b\d{4}-\d\d-\d\d\b"), "YYYY-MM-DD"),  # when a forgetting is deleted
    (re.compile(r"\bm_[0-9a-f]{8,}\b"), "m_ID"),  # a fact's id
    (re.compile(r"· \d+\.\d\d s\b"), "· N.NN s"),  # how long a tool call took
    # whether the agent-model extra is installed in this environment
    (re.compile(r"(?<=-1\.5B-Instruct · tools on · )(installed|not installed: .*)"), "INSTALLED?"),
)


@pytest.fixture(autouse=True)
def no_refresh_on_a_beat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screens that re-fetch on a beat fetch once: a re-fetch between the stand-ins and
    the screenshot would bring the clock back."""
    monkeypatch.setattr(DevicesScreen, "refresh_every_s", 3600.0)
    monkeypatch.setattr(JobsScreen, "refresh_every_s", 3600.0)


def fixed(app: TinyApp, also: tuple[tuple[re.Pattern[str], str], ...] = ()) -> None:
    """Put the stand-ins in every line that shows a port, an uptime or a clock time (and what
    ``also`` names), and stop the cursors blinking (a screenshot would catch one lit or dark by
    chance)."""
    for screen in app.screen_stack:  # a dialog's: the screen under it shows through
        for text_input in screen.query("Input, TextArea"):
            text_input.cursor_blink = False  # type: ignore[attr-defined]
        for static in screen.query(Static):
            text = original = str(static.render())
            for pattern, stand_in in [*VOLATILE, *also]:
                text = pattern.sub(stand_in, text)
            if text != original:
                static.update(text)
        for framed in screen.query("*"):  # a tool card's time is under its frame
            subtitle = str(framed.border_subtitle or "")
            for pattern, stand_in in VOLATILE:
                subtitle = pattern.sub(stand_in, subtitle)
            if subtitle != str(framed.border_subtitle or ""):
                framed.border_subtitle = subtitle


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", SCREENS)
async def test_each_screen_looks_as_it_did(
    start_hub: StartHub,
    closed_port: int,
    tmp_path: Path,
    snapshot: SnapshotAssertion,
    screen: str,
    size: tuple[int, int],
) -> None:
    # The start-up repairs wait past the test: their note in the status line would come and go.
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}", repairs_after_s=3600)
    token = owner_headers(server)["Authorization"].split()[1]
    app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path))
    async with app.run_test(size=size) as pilot:
        await app.switch_mode(screen)
        await until(lambda: LOADED[screen] in visible_text(app))
        await settle(pilot)
        fixed(app)
        await settle(pilot)
        assert LOADED[screen] in visible_text(app)
        assert cut_words(app.screen) == []
        svg = await still_picture(app, pilot)  # a long table may still be laying out
    assert snapshot(extension_class=SVGImageExtension) == svg


def footer_problems(app: TinyApp, width: int) -> list[str]:
    """Every binding the screen shows that has no key in the footer, or whose key is cut
    (not wholly inside the footer's width)."""
    footer = app.screen.query_one(Footer)
    keys = {key.action: key for key in footer.query(FooterKey)}
    problems = []
    for _, binding, _, _ in app.screen.active_bindings.values():
        if not binding.show:
            continue
        key = keys.get(binding.action)
        if key is None:
            problems.append(f"{binding.action}: not in the footer")
        elif key.region.right > width or key.region.width == 0:
            problems.append(f"{binding.action}: cut at {key.region}")
    if footer.virtual_size.width > footer.size.width:
        problems.append(f"the footer is {footer.virtual_size.width} wide in {width}")
    return problems


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", SCREENS)
async def test_every_footer_key_shows_whole(
    closed_port: int, tmp_path: Path, screen: str, size: tuple[int, int]
) -> None:
    app = TinyApp(HubClient(f"http://127.0.0.1:{closed_port}", None), TuiConfig(tmp_path))
    async with app.run_test(size=size) as pilot:
        await app.switch_mode(screen)
        await settle(pilot)
        await until(
            lambda: footer_problems(app, size[0]) == [], what=str(footer_problems(app, size[0]))
        )
        shown = {key.action for key in app.screen.query(FooterKey)}
        assert {f"switch_mode('{name}')" for name in SCREENS} <= shown


# --- every dialog, and the parts of a screen that only show with something in them ---------------


@dataclass(frozen=True)
class Scene:
    """A screen with a dialog open (or a part of it showing): how to get there."""

    mode: str
    act: Callable[[TinyApp, Pilot[None], RunningServer], Awaitable[None]]
    ready: Callable[[TinyApp], bool]
    prepare: Callable[[RunningServer], None] = lambda server: None


async def press(app: TinyApp, pilot: Pilot[None], server: RunningServer, keys: str = "") -> None:
    await pilot.press(*keys.split())


async def when_loaded(
    app: TinyApp, pilot: Pilot[None], server: RunningServer, keys: str = ""
) -> None:
    """The keys, once the screen has shown what the hub said (so a dialog opens over it) and
    has no fetch under way (a second answer would fill its table again behind the dialog)."""
    await until(lambda: LOADED[str(app.current_mode)] in visible_text(app))
    await until(lambda: not fetching(app), what="the screen's fetches done")
    await until(lambda: tables_laid_out(app), what="the screen's tables laid out")
    await still_picture(app, pilot)  # drawn as laid out before a dialog covers it
    await pilot.press(*keys.split())


def fetching(app: TinyApp) -> bool:
    """Whether a worker of the screen shown fetches now: its one-off workers, not the ones
    that poll or follow a stream for as long as the screen lives."""
    return any(
        worker.node is app.screen and worker.is_running and worker.group not in LIFELONG
        for worker in app.workers
    )


LIFELONG = {"events", "poll"}


def tables_laid_out(app: TinyApp) -> bool:
    """Whether every table of the screen shown has measured its rows: a table measures them
    when it is next idle, and one that is covered by a dialog before then keeps the widths
    of its labels behind the dialog."""
    return all(
        column.content_width
        >= max((cell_len(str(cell)) for cell in table.get_column(key)), default=0)
        for table in app.screen.query(DataTable)
        for key, column in table.columns.items()
    )


"""The worker groups the screens give to loops that last as long as the screen."""


def learned(*facts: str) -> Callable[[RunningServer], None]:
    def prepare(server: RunningServer) -> None:
        for fact in facts:
            server.hub.memory.learn(server.hub.owner.id, fact)

    return prepare


def forgot_a_bicycle(server: RunningServer) -> None:
    me = server.hub.owner.id
    server.hub.memory.learn(me, "I live by the sea")
    bike = server.hub.memory.learn(me, "The user's bicycle is a green Brompton.").id
    lock = server.hub.memory.learn(me, "The bike lock code is 4411.").id
    server.hub.memory.forget(me, [bike, lock], scope="about", about="my bicycle")


async def ask_to_forget(app: TinyApp, pilot: Pilot[None], server: RunningServer) -> None:
    chat = chat_of(app)
    await until(lambda: chat.status.health is not None)
    await say(pilot, chat, "forget everything about me")
    await turn_done(chat, 2)
    chat.status.usage, chat.status.total_tokens = {}, 0  # counts the prompt's date moves


async def remove_bea(app: TinyApp, pilot: Pilot[None], server: RunningServer) -> None:
    await when_loaded(app, pilot, server)
    app.push_screen(RemoveQuestion("bea", "Bea Smith"))


async def show_a_key(app: TinyApp, pilot: Pilot[None], server: RunningServer) -> None:
    await when_loaded(app, pilot, server)
    app.push_screen(KeyNotice("family", "tk_" + "0123456789abcdef" * 3))


async def open_the_flipper(app: TinyApp, pilot: Pilot[None], server: RunningServer) -> None:
    app.screen.query_one("#devices").focus()
    await pilot.press("enter")


def is_open(kind: type[Screen[Any]]) -> Callable[[TinyApp], bool]:
    return lambda app: isinstance(app.screen, kind)


def flipper_online(app: TinyApp) -> bool:
    return "live · 1 device, 1 online" in visible_text(app)


def job_previewed(app: TinyApp) -> bool:
    form = app.screen
    return isinstance(form, JobForm) and "next" in str(form.query_one("#job-preview").render())


def forged_a_tool(server: RunningServer) -> None:
    code = "({ text }) => text.length"
    draft = ForgedDraft("length", "How long a text is.", {"type": "object"}, code)
    ForgeStore(server.hub.db).save(server.hub.owner, draft)


def dropdown_open(app: TinyApp) -> bool:
    form = app.screen
    return isinstance(form, ModelForm) and form.query_one("#provider", Select).expanded


SCENES: dict[str, Scene] = {
    "add-person": Scene("settings", partial(when_loaded, keys="a"), is_open(PersonForm)),
    "model-form": Scene(
        "settings",
        partial(when_loaded, keys="m"),
        lambda app: isinstance(app.screen, ModelForm) and app.screen.listed is not None,
    ),
    "provider-dropdown": Scene("settings", partial(when_loaded, keys="m enter"), dropdown_open),
    "new-tiny": Scene("settings", partial(when_loaded, keys="n"), is_open(TinyForm)),
    "edit-prompt": Scene("settings", partial(when_loaded, keys="e"), is_open(TinyForm)),
    "tiny-key": Scene("settings", show_a_key, is_open(KeyNotice)),
    "pairing-code": Scene("settings", partial(when_loaded, keys="p"), is_open(PairNotice)),
    "remove-person": Scene("settings", remove_bea, is_open(RemoveQuestion)),
    "unlearn-question": Scene(
        "memory",
        partial(when_loaded, keys="d"),
        is_open(ConfirmScreen),
        learned("The user's bicycle is a green Brompton."),
    ),
    "clear-all-word": Scene("memory", partial(when_loaded, keys="X"), is_open(AskTextScreen)),
    "forgotten-list": Scene(
        "memory",
        partial(when_loaded, keys="f"),
        lambda app: "1 forgetting you can bring back" in visible_text(app),
        forgot_a_bicycle,
    ),
    "confirmation-card": Scene(
        "chat", ask_to_forget, lambda app: bool(app.screen.query(ConfirmationCard)), learned(*FACTS)
    ),
    "follow-someone": Scene("community", partial(when_loaded, keys="f"), is_open(AskTextScreen)),
    "conversations": Scene(
        "chat",
        partial(press, keys="ctrl+b"),
        lambda app: app.screen.query_one(Sidebar).has_class("-shown"),
    ),
    "add-job": Scene("jobs", partial(when_loaded, keys="a"), job_previewed),
    "telegram-form": Scene("settings", partial(when_loaded, keys="t"), is_open(TelegramForm)),
    "forge-tool": Scene("tools", partial(when_loaded, keys="f"), is_open(ForgeForm)),
    "install-tool": Scene("tools", partial(when_loaded, keys="i"), is_open(InstallForm)),
    "try-tool": Scene("tools", partial(when_loaded, keys="t"), is_open(TryForm), forged_a_tool),
    "devices-flipper": Scene("devices", press, flipper_online),
    "device-record": Scene("devices", open_the_flipper, is_open(RowDetail)),
}
WITH_A_FLIPPER = ("devices-flipper", "device-record")


class FixedCode:
    """The pairing module's ``secrets``, with a code that is the same on every run (the
    code, and the QR that carries it, are in the picture)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(secrets, name)

    @staticmethod
    def randbelow(limit: int) -> int:
        return 123456 % limit


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", SCENES)
async def test_each_dialog_looks_as_it_did(
    start_hub: StartHub,
    closed_port: int,
    fake_ollama: FakeOllama,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    snapshot: SnapshotAssertion,
    name: str,
    size: tuple[int, int],
) -> None:
    scene = SCENES[name]
    monkeypatch.setattr(pairing, "secrets", FixedCode())
    for module in (device_rows, forgotten, memory_screen, job_form):  # the clock in cells
        for function in ("clock_time", "stamp", "_local", "when_text"):
            if hasattr(module, function):
                monkeypatch.setattr(module, function, lambda *_: "TIME")
    hub: dict[str, Any] = {"ollama_host": f"http://127.0.0.1:{closed_port}"}
    if name == "confirmation-card":
        call = {"function": {"name": "unlearn", "arguments": {"scope": "all"}}}
        fake_ollama.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Confirm it."]))
        hub["ollama_host"] = fake_ollama.url
    board = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    if name in WITH_A_FLIPPER:
        board.start()
        hub["drivers"] = {"flipper": {"port": str(tmp_path / "flipper")}}
    try:
        server = await start_hub(repairs_after_s=3600, **hub)
        scene.prepare(server)
        token = owner_headers(server)["Authorization"].split()[1]
        app = TinyApp(HubClient(server.url, token), TuiConfig(tmp_path / "tui"))
        async with app.run_test(size=size) as pilot:
            await app.switch_mode(scene.mode)
            if name in WITH_A_FLIPPER:
                await until(lambda: flipper_online(app))
            await scene.act(app, pilot, server)
            await until(lambda: scene.ready(app), what=f"{name} shown")
            await settle(pilot)
            app.clear_notifications()
            fixed(app, ((re.compile(re.escape(str(tmp_path))), "TMP"),))
            await settle(pilot)
            assert scene.ready(app)
            assert cut_words(app.screen) == []
            svg = await still_picture(app, pilot)
    finally:
        board.stop()
    assert snapshot(extension_class=SVGImageExtension) == svg
