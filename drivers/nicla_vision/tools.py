"""nicla_take_photo, nicla_take_video, nicla_listen, nicla_status.

The protocol is ``driver.py``; the camera and the microphone are reached as every driver's are
(``drivers/sensing.py``), and the status is the board's own. With no board attached each tool
says so at once, and names the owner's devices that report one (reachable with
``use_device``). ``NiclaVisionDriver.agent_tools`` brings these tools to the hub, which knows no
board by name.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import DriverError, DriverHost, hinted, with_attached
from drivers.sensing import clip_tool, listen_tool, online_as, photo_tool

FAMILY = "nicla_vision"
BOARD = "the Nicla Vision"
NOT_CONNECTED = "Nicla Vision is not connected to this hub"


@runtime_checkable
class Board(Protocol):
    """What ``nicla_status`` asks of the attached board."""

    port: str

    @property
    def device_name(self) -> str: ...

    async def board_status(self) -> dict[str, Any]: ...


def _missing(host: DriverHost) -> str:
    """No board here; where else the owner has one: their enrolled devices that report one."""
    names = host.devices_reporting(FAMILY)
    if not names:
        return NOT_CONNECTED + " (plug it in over USB)"
    listed = ", ".join(names)
    return f"{NOT_CONNECTED}; your device(s) {listed} report one (ask them with use_device)"


nicla_take_photo = photo_tool(
    "nicla_take_photo",
    "Take a photo with the necklace camera (the Nicla Vision the user wears) and look at\nit.",
    FAMILY,
    BOARD,
    _missing,
)
nicla_take_video = clip_tool(
    "nicla_take_video",
    "Record a short video with the Nicla Vision.",
    FAMILY,
    BOARD,
    _missing,
    default_s=3,
    max_s=10,
)
nicla_listen = listen_tool(
    "nicla_listen",
    "Listen with the Nicla Vision's microphone and say what was heard (speech-to-text on\n"
    "this hub).",
    FAMILY,
    BOARD,
    FAMILY,
    _missing,
    default_s=5,
    max_s=30,
)


def _board(host: DriverHost) -> Board | None:
    board: Board | None = online_as(host, FAMILY, Board)
    return board


@tool(name="nicla_status", context=True)
async def nicla_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The Nicla Vision attached to this hub: firmware, uptime, battery, connection."""

    async def status(host: DriverHost, board: Board) -> dict[str, Any]:
        found = await board.board_status()
        battery = found.get("battery")
        said = f", battery {battery}%" if battery is not None else ""
        return host.ok(
            f"Nicla Vision '{board.device_name}' on {board.port}: firmware "
            f"{found.get('firmware', 'unknown')}, up {found.get('uptime_ms', 0) / 1000:.0f} s"
            f"{said}.",
            **found,
        )

    return await with_attached(tool_context, BOARD, _board, _missing, status, (DriverError,))


TOOLS: tuple[AgentTool, ...] = (nicla_take_photo, nicla_take_video, nicla_listen, nicla_status)


hinted("nicla_vision", nicla_take_photo, nicla_take_video, nicla_listen, nicla_status)
