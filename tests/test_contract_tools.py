"""Every tool the contract names is mounted: 62 on a signed-in web session before forged,
dynamic and MCP tools, plus the native apps' additions (docs/protocol.md, the mount list)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.client import forget as forget_notes
from hub.agent.tools.context import ToolContext
from hub.runtime.hub import Hub
from tests.conftest import settings_for

CONTRACT_GROUPS: dict[str, tuple[str, ...]] = {
    "tinys and the universe": (
        "create_ai",
        "modify_ai",
        "get_tiny",
        "list_tiny",
        "retrieve",
        "ask_tiny",
        "spawn_agents",
        "http",
    ),
    "memory": (
        "learn",
        "recall",
        "unlearn",
        "memory_graph",
        "memory_conflicts",
        "remember",
        "forget",
        "manage_messages",
    ),
    "devices and hardware": (
        "use_device",
        "nicla_take_photo",
        "nicla_take_video",
        "nicla_listen",
        "nicla_status",
        "nicla_voice_status",
        "nicla_voice_wakes",
        "nicla_voice_record",
        "nicla_voice_transcripts",
        "nicla_voice_transcript",
        "flipper_status",
        "flipper_listen",
        "flipper_files",
        "flipper_find",
    ),
    "the page and the phone": (
        "render_ui",
        "speak",
        "suggest_followups",
        "set_theme",
        "add_map_marker",
        "remove_map_marker",
        "fly_to_marker",
        "fly_to_location",
        "clear_map_markers",
        "tour_markers",
        "vibrate",
        "flashlight",
        "copy_to_clipboard",
        "set_brightness",
        "play_sound",
        "schedule_alert",
        "cancel_alerts",
        "open_url",
    ),
    "messages, jobs, Telegram": (
        "send_message",
        "read_messages",
        "schedule",
        "telegram",
        "use_telegram",
    ),
    "extending the toolset": (
        "create_tool",
        "remove_tool",
        "install_tool",
        "marketplace",
        "manage_tools",
    ),
    "money": (
        "wallet",
        "set_price",
        "pay_x402",
        "make_payment",
    ),
}
CONTRACT_WEB_TOOLS = frozenset(name for group in CONTRACT_GROUPS.values() for name in group)
NATIVE_ADDITIONS = frozenset(
    ["screenshot", "meta_take_photo", "meta_record_video", "meta_listen", "meta_glasses_status"]
)


@pytest.fixture
def hub(home: Path) -> Iterator[Hub]:
    opened = Hub.open(settings_for(home))
    yield opened
    opened.close()


def _names(hub: Hub, session: str = "") -> set[str]:
    person = hub.identity.add_user("Ada")
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    return set(mount_tools(ToolContext(hub=hub, caller=person, tiny=tiny, session=session)).names)


def test_the_contract_names_62_tools() -> None:
    assert len(CONTRACT_WEB_TOOLS) == 62


def test_a_signed_in_web_session_is_sent_every_named_tool(hub: Hub) -> None:
    missing = CONTRACT_WEB_TOOLS - _names(hub)
    assert not missing, f"not mounted: {sorted(missing)}"


def test_native_apps_add_the_phone_tools_and_ios_generate_image(hub: Hub) -> None:
    android = _names(hub, c.SESSION_ANDROID)
    ios = _names(hub, c.SESSION_IOS)
    # the phone apps keep their own conversation and no browser notes
    web_on_phones = CONTRACT_WEB_TOOLS - {"remember", "forget", "manage_messages"}
    assert not (web_on_phones | NATIVE_ADDITIONS) - android
    assert "generate_image" not in android
    assert not (web_on_phones | NATIVE_ADDITIONS | {"generate_image"}) - ios


def test_the_tinys_owner_adds_customize_page(hub: Hub) -> None:
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    owner = hub.identity.user(tiny.owner_id)
    names = mount_tools(ToolContext(hub=hub, caller=owner, tiny=tiny)).names
    assert "customize_page" in names
    assert "customize_page" not in _names(hub)


def test_forgetting_notes_says_first_that_remembered_facts_stay() -> None:
    """A model that takes "delete all my memories" for the notes tool answers from the first
    sentence of its result: that sentence says the person's memory is untouched."""
    result = forget_notes(contains="  my memories ")
    first = result["content"][0]["text"]
    assert first.startswith('Only the notes on this screen that contain "my memories" are deleted')
    assert "your remembered facts stay as they are." in first
    assert result["content"][1]["json"]["request"] == {"contains": "my memories"}
    assert forget_notes(contains="  ")["status"] == "error"
