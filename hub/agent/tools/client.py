"""Tools the client runs (docs/protocol.md): the hub mounts them and checks their input; the client
— the TUI, a browser, a phone — acts on the tool call it sees in the stream.

``remember``/``forget``/``manage_messages`` act on what the client keeps (its notes, its stored
conversation), never on the hub's memory; the phone apps keep no such store, so they are not
mounted there. The rest are for every client, which answers honestly when it cannot do one.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlparse

from strands import tool
from strands.types.tools import AgentTool

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, sent_to_client

THEME_PRESETS = ("tiny", "cyberpunk", "ocean", "forest", "sunset", "dracula", "nord", "amber")
UI_COMPONENTS = ("table", "bar_chart", "line_chart", "key_value")
NOTE_MAX = 500
SPEAK_MAX = 2000
PROPS_MAX_BYTES = 16 * 1024
MESSAGE_ACTIONS = ("stats", "drop", "compact")
_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")


@tool(name="remember")
def remember(note: str) -> dict[str, Any]:
    """Pin a short note to this screen's notes panel (a to-do, not a fact about the user:
    those go to learn); it survives clearing the chat history.

    Args:
        note: the note, at most 500 characters.
    """
    note = note.strip()
    if not note or len(note) > NOTE_MAX:
        return failed(f"a note is 1 to {NOTE_MAX} characters")
    return sent_to_client("remember", note=note)


@tool(name="forget")
def forget(contains: str) -> dict[str, Any]:
    """Delete the notes pinned to this screen's notes panel that contain some text (facts
    about the user are forgotten with unlearn).

    Args:
        contains: the text the notes to delete contain (case-insensitive).
    """
    contains = contains.strip()
    if not contains:
        return failed("say which notes: some text they contain")
    # Said so that a model which took "delete all my memories" for notes cannot answer that
    # the person's memory is gone: it is untouched.
    said = (
        f'Only the notes on this screen that contain "{contains}" are deleted; your '
        "remembered facts stay as they are."
    )
    return sent_to_client("forget", said, contains=contains)


@tool(name="manage_messages")
def manage_messages(action: str, start: int = 0, end: int = 0) -> dict[str, Any]:
    """Look after the stored conversation: stats, drop a range of messages, or compact a range
    into one summary message.

    Args:
        action: stats, drop or compact.
        start: the first message (0 is the oldest), for drop and compact.
        end: one past the last message, for drop and compact.
    """
    if action not in MESSAGE_ACTIONS:
        return failed(f"action must be one of {', '.join(MESSAGE_ACTIONS)}")
    if action != "stats" and not 0 <= start < end:
        return failed("give a range: 0 <= start < end")
    return sent_to_client("manage_messages", action=action, start=start, end=end)


@tool(name="set_theme")
def set_theme(preset: str = "", accent: str = "", background: str = "") -> dict[str, Any]:
    """Change the chat's colours: a preset, or a custom accent and background.

    Args:
        preset: tiny, cyberpunk, ocean, forest, sunset, dracula, nord or amber.
        accent: a custom accent colour as #rrggbb (with background, instead of a preset).
        background: a custom background colour as #rrggbb.
    """
    if preset:
        if preset not in THEME_PRESETS:
            return failed(f"preset must be one of {', '.join(THEME_PRESETS)}")
        return sent_to_client("set_theme", preset=preset)
    if not (_HEX.match(accent) and _HEX.match(background)):
        return failed("give a preset, or accent and background as #rrggbb")
    return sent_to_client("set_theme", accent=accent, background=background)


@tool(name="copy_to_clipboard")
def copy_to_clipboard(text: str) -> dict[str, Any]:
    """Copy text to the user's clipboard.

    Args:
        text: what to copy.
    """
    if not text:
        return failed("nothing to copy")
    return sent_to_client("copy_to_clipboard", text=text)


@tool(name="open_url")
def open_url(url: str) -> dict[str, Any]:
    """Open a web page on the user's device (they are asked first).

    Args:
        url: an http or https address.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return failed("only http and https addresses can be opened")
    return sent_to_client("open_url", url=url)


@tool(name="speak")
def speak(text: str) -> dict[str, Any]:
    """Say something aloud with the device's own text-to-speech.

    Args:
        text: what to say, at most 2000 characters.
    """
    if not text.strip() or len(text) > SPEAK_MAX:
        return failed(f"text is 1 to {SPEAK_MAX} characters")
    return sent_to_client("speak", text=text)


@tool(name="render_ui")
def render_ui(component: str, props: dict[str, Any]) -> dict[str, Any]:
    """Show a table or a simple chart in the chat (props only, no code).

    Args:
        component: table (props: columns, rows), bar_chart or line_chart (props: title,
            labels, values), or key_value (props: items, a mapping).
        props: the component's data.
    """
    if component not in UI_COMPONENTS:
        return failed(f"component must be one of {', '.join(UI_COMPONENTS)}")
    if not isinstance(props, dict) or len(json.dumps(props)) > PROPS_MAX_BYTES:
        return failed(f"props must be an object of at most {PROPS_MAX_BYTES // 1024} KB")
    return sent_to_client("render_ui", component=component, props=props)


BROWSER_TOOLS: list[AgentTool] = [remember, forget, manage_messages]
EVERYONE_TOOLS: list[AgentTool] = [set_theme, copy_to_clipboard, open_url, speak, render_ui]


def tools(ctx: ToolContext) -> list[AgentTool]:
    if not ctx.client.app_tools:
        return []
    return ([] if ctx.native_app else BROWSER_TOOLS) + EVERYONE_TOOLS


# The notes of a screen are offered only when a message is about them: "forget that I dislike
# mushrooms" is about the person's memory (``unlearn``), and the word "forget" alone drew the
# notes tool.
hinted(
    "notes",
    remember,
    forget,
    offered_at_least=0.9,
    asked_like=("pin a note to my screen: buy milk", "delete the notes on my screen about milk"),
)
hinted("conversation", manage_messages)
hinted("page", set_theme, copy_to_clipboard, open_url, speak, render_ui)
