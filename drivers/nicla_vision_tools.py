"""nicla_take_photo, nicla_take_video, nicla_listen, nicla_status.

The protocol is ``drivers/nicla_vision.py``; this module finds the attached board, keeps what
it captured in the media store and shapes the answers. With no board attached each tool says
so at once, and names the owner's devices that report one (reachable with ``use_device``).
``NiclaVisionDriver.agent_tools`` brings these tools to the hub, which knows no board by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import DriverHost, first_online, with_attached
from drivers.nicla_vision import NiclaError, NiclaVisionDriver
from media.video import VideoError

BOARD = "the Nicla Vision"
NOT_CONNECTED = "Nicla Vision is not connected to this hub"
Action = Callable[[NiclaVisionDriver, DriverHost], Awaitable[dict[str, Any]]]


def _attached(host: DriverHost) -> NiclaVisionDriver | None:
    return first_online(host, NiclaVisionDriver)


def _elsewhere(host: DriverHost, capability: str) -> str:
    """Where else the owner has one: their enrolled devices that report ``capability``."""
    names = host.devices_reporting(capability)
    if not names:
        return " (plug it in over USB)"
    return f"; your device(s) {', '.join(names)} report one (ask them with use_device)"


async def _use(tool_context: StrandsToolContext, action: Action) -> dict[str, Any]:
    def missing(host: DriverHost) -> str:
        return NOT_CONNECTED + _elsewhere(host, "nicla_vision")

    async def act(host: DriverHost, board: NiclaVisionDriver) -> dict[str, Any]:
        return await action(board, host)

    return await with_attached(
        tool_context, BOARD, _attached, missing, act, (NiclaError, VideoError)
    )


@tool(name="nicla_take_photo", context=True)
async def nicla_take_photo(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Take a photo with the necklace camera (the Nicla Vision the user wears) and look at
    it."""

    async def photo(board: NiclaVisionDriver, host: DriverHost) -> dict[str, Any]:
        return host.seen(BOARD, board.device_id, await board.snapshot())

    return await _use(tool_context, photo)


@tool(name="nicla_take_video", context=True)
async def nicla_take_video(tool_context: StrandsToolContext, seconds: float = 3) -> dict[str, Any]:
    """Record a short video with the Nicla Vision.

    Args:
        seconds: how long, up to 10 (default 3).
    """

    async def video(board: NiclaVisionDriver, host: DriverHost) -> dict[str, Any]:
        return host.filmed(BOARD, board.device_id, await board.clip(seconds), seconds)

    return await _use(tool_context, video)


@tool(name="nicla_listen", context=True)
async def nicla_listen(tool_context: StrandsToolContext, seconds: float = 5) -> dict[str, Any]:
    """Listen with the Nicla Vision's microphone and say what was heard (speech-to-text on
    this hub).

    Args:
        seconds: how long, up to 30 (default 5).
    """

    async def listen(board: NiclaVisionDriver, host: DriverHost) -> dict[str, Any]:
        wav = await board.listen(seconds)
        return await host.heard(NiclaVisionDriver.name, board.device_id, wav)

    return await _use(tool_context, listen)


@tool(name="nicla_status", context=True)
async def nicla_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The Nicla Vision attached to this hub: firmware, uptime, battery, connection."""

    async def status(board: NiclaVisionDriver, host: DriverHost) -> dict[str, Any]:
        found = await board.board_status()
        battery = found.get("battery")
        said = f", battery {battery}%" if battery is not None else ""
        return host.ok(
            f"Nicla Vision '{board.device_name}' on {board.port}: firmware "
            f"{found.get('firmware', 'unknown')}, up {found.get('uptime_ms', 0) / 1000:.0f} s"
            f"{said}.",
            **found,
        )

    return await _use(tool_context, status)


TOOLS: tuple[AgentTool, ...] = (nicla_take_photo, nicla_take_video, nicla_listen, nicla_status)
