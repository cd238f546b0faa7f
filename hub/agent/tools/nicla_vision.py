"""nicla_take_photo, nicla_take_video, nicla_listen, nicla_status (seed 000).

The protocol is ``drivers/nicla_vision.py``; this module finds the attached board, keeps what
it captured in the media store and shapes the answers. With no board attached each tool says
so at once, and names the owner's devices that report one (reachable with ``use_device``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.nicla_vision import NiclaError, NiclaVisionDriver
from drivers.video import VideoError
from hub.agent.tools.context import ToolContext, failed, ok, owner_turn
from hub.agent.tools.senses import filmed, heard, seen
from hub.devices.registry import DeviceError

BOARD = "the Nicla Vision"
NOT_CONNECTED = "Nicla Vision is not connected to this hub"
Action = Callable[[NiclaVisionDriver, ToolContext], Awaitable[dict[str, Any]]]


def _attached(ctx: ToolContext) -> NiclaVisionDriver | None:
    for driver in ctx.hub.drivers.online(NiclaVisionDriver.name):
        if isinstance(driver, NiclaVisionDriver):
            return driver
    return None


def _elsewhere(ctx: ToolContext, capability: str) -> str:
    """Where else the owner has one: their enrolled devices that report ``capability``."""
    now = ctx.hub.devices.now()
    names = [
        d.name
        for d in ctx.hub.devices.registry.list(ctx.hub.owner.id)
        if capability in d.capabilities and d.online(now) is not False
    ]
    if not names:
        return " (plug it in over USB)"
    return f"; your device(s) {', '.join(names)} report one (ask them with use_device)"


async def _use(tool_context: StrandsToolContext, action: Action) -> dict[str, Any]:
    ctx, refused = owner_turn(tool_context, "the Nicla Vision")
    if refused is not None:
        return refused
    board = _attached(ctx)
    if board is None:
        return failed(NOT_CONNECTED + _elsewhere(ctx, "nicla_vision"))
    try:
        return await action(board, ctx)
    except (NiclaError, VideoError, DeviceError) as exc:
        return failed(str(exc))


@tool(name="nicla_take_photo", context=True)
async def nicla_take_photo(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Take a photo with the Nicla Vision (the camera worn as a necklace) and look at it."""

    async def photo(board: NiclaVisionDriver, ctx: ToolContext) -> dict[str, Any]:
        return seen(ctx, BOARD, board.device_id, await board.snapshot())

    return await _use(tool_context, photo)


@tool(name="nicla_take_video", context=True)
async def nicla_take_video(tool_context: StrandsToolContext, seconds: float = 3) -> dict[str, Any]:
    """Record a short video with the Nicla Vision.

    Args:
        seconds: how long, up to 10 (default 3).
    """

    async def video(board: NiclaVisionDriver, ctx: ToolContext) -> dict[str, Any]:
        return filmed(ctx, BOARD, board.device_id, await board.clip(seconds), seconds)

    return await _use(tool_context, video)


@tool(name="nicla_listen", context=True)
async def nicla_listen(tool_context: StrandsToolContext, seconds: float = 5) -> dict[str, Any]:
    """Listen with the Nicla Vision's microphone and say what was heard (speech-to-text on
    this hub).

    Args:
        seconds: how long, up to 30 (default 5).
    """

    async def listen(board: NiclaVisionDriver, ctx: ToolContext) -> dict[str, Any]:
        wav = await board.listen(seconds)
        return await heard(ctx, NiclaVisionDriver.name, board.device_id, wav)

    return await _use(tool_context, listen)


@tool(name="nicla_status", context=True)
async def nicla_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The Nicla Vision attached to this hub: firmware, uptime, battery, connection."""

    async def status(board: NiclaVisionDriver, ctx: ToolContext) -> dict[str, Any]:
        found = await board.board_status()
        battery = found.get("battery")
        said = f", battery {battery}%" if battery is not None else ""
        return ok(
            f"Nicla Vision '{board.device_name}' on {board.port}: firmware "
            f"{found.get('firmware', 'unknown')}, up {found.get('uptime_ms', 0) / 1000:.0f} s"
            f"{said}.",
            **found,
        )

    return await _use(tool_context, status)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [nicla_take_photo, nicla_take_video, nicla_listen, nicla_status]
