"""Tools the phone runs: mounted only for the native apps (and customize_page for the tiny's
owner). The hub cannot take a screenshot of a phone; the app acts on the tool call it sees in
the stream (beforeToolCallEvent) and the result here tells the model the request went out."""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from hub.agent.tools.context import ToolContext, failed, sent_to_client

CUSTOMIZE_LIMIT_BYTES = 8 * 1024


@tool(name="screenshot")
def screenshot() -> dict[str, Any]:
    """Capture the phone's screen. The user is asked first and a recording indicator shows."""
    return sent_to_client("screenshot")


@tool(name="meta_take_photo")
def meta_take_photo() -> dict[str, Any]:
    """Take a photo with the Meta glasses paired to the phone."""
    return sent_to_client("meta_take_photo")


@tool(name="meta_record_video")
def meta_record_video(seconds: int = 10) -> dict[str, Any]:
    """Record a short video with the Meta glasses paired to the phone.

    Args:
        seconds: length of the video, 1 to 60.
    """
    if not 1 <= seconds <= 60:
        return failed("seconds must be between 1 and 60")
    return sent_to_client("meta_record_video", seconds=seconds)


@tool(name="meta_listen")
def meta_listen(seconds: int = 10) -> dict[str, Any]:
    """Record audio through the Meta glasses' microphones and transcribe it.

    Args:
        seconds: how long to listen, 1 to 120.
    """
    if not 1 <= seconds <= 120:
        return failed("seconds must be between 1 and 120")
    return sent_to_client("meta_listen", seconds=seconds)


@tool(name="meta_glasses_status")
def meta_glasses_status() -> dict[str, Any]:
    """Whether the Meta glasses are connected to the phone, and their battery."""
    return sent_to_client("meta_glasses_status")


@tool(name="generate_image")
def generate_image(prompt: str) -> dict[str, Any]:
    """Generate an image on the iPhone from a text description.

    Args:
        prompt: what the image should show.
    """
    if not prompt.strip():
        return failed("describe the image to generate")
    return sent_to_client("generate_image", prompt=prompt)


@tool(name="customize_page")
def customize_page(css: str = "", js: str = "", persist: bool = False) -> dict[str, Any]:
    """Inject CSS and/or JavaScript into this tiny's chat page (owner only).

    Args:
        css: a stylesheet, at most 8 KB.
        js: a script, at most 8 KB.
        persist: keep it for every visitor, not just this session.
    """
    for label, code in (("css", css), ("js", js)):
        if len(code.encode("utf-8")) > CUSTOMIZE_LIMIT_BYTES:
            return failed(f"{label} is over 8 KB")
    if not css and not js:
        return failed("give css, js or both")
    return sent_to_client("customize_page", css=css, js=js, persist=persist)


PHONE_TOOLS: list[AgentTool] = [
    screenshot,
    meta_take_photo,
    meta_record_video,
    meta_listen,
    meta_glasses_status,
]
IOS_TOOLS: list[AgentTool] = [generate_image]
TINY_OWNER_TOOLS: list[AgentTool] = [customize_page]


def tools(ctx: ToolContext) -> list[AgentTool]:
    mounted: list[AgentTool] = []
    if ctx.native_app:
        mounted += PHONE_TOOLS
    if ctx.ios:
        mounted += IOS_TOOLS
    if ctx.owns_tiny:
        mounted += TINY_OWNER_TOOLS
    return mounted
