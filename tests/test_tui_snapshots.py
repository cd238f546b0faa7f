"""Each screen at 80×24 and 120×40, against a real hub, compared with the SVG kept beside the
tests (pytest-textual-snapshot's SVG format; ``pytest --snapshot-update`` rewrites them after an
intended change, and the diff of the SVG shows what moved).

A screen must look the same on every run, so what differs between runs is fixed first: the hub
runs without Ollama (the embedded model: a fixed status line), nothing is enrolled, and on the
settings screen the hub's address (a free port) and uptime are replaced by placeholders.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion
from textual.pilot import Pilot
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from harness.waits import until
from hub.client.http import HubClient
from tests.conftest import StartHub, owner_headers
from tui.app import TinyApp
from tui.config import TuiConfig

SIZES = [(80, 24), (120, 40)]
SCREENS = ["chat", "devices", "memory", "settings", "map", "inbox", "community"]
LOADED = {  # what each screen shows once the hub has answered
    "chat": "embedded model",
    "devices": "live ·",
    "memory": "facts",
    "settings": "hub: http://",
    "map": "no markers yet",
    "inbox": "conversation(s)",
    "community": "reputation",
}


def visible_text(app: TinyApp) -> str:
    return " ".join(str(static.render()) for static in app.screen.query(Static))


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


VOLATILE = (  # what changes between runs, and what stands in for it
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),  # a free port
    (re.compile(r"'127\.0\.0\.1', \d+"), "'127.0.0.1', PORT"),  # the same, as Python says it
    (re.compile(r"\bup \d+ s\b"), "up N s"),  # the hub's uptime
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "HH:MM:SS"),  # the time of the last refresh
    # whether the agent-model extra is installed in this environment
    (re.compile(r"(?<=-1\.5B-Instruct · tools on · )(installed|not installed: .*)"), "INSTALLED?"),
)


def fixed(app: TinyApp) -> None:
    """Put the stand-ins in every line that shows a port, an uptime or a clock time, and stop
    the cursors blinking (a screenshot would catch one lit or dark by chance)."""
    for text_input in app.screen.query("Input, TextArea"):
        text_input.cursor_blink = False  # type: ignore[attr-defined]
    for static in app.screen.query(Static):
        text = original = str(static.render())
        for pattern, stand_in in VOLATILE:
            text = pattern.sub(stand_in, text)
        if text != original:
            static.update(text)


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
        svg = app.export_screenshot(title=app.title)
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
