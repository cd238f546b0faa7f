"""camera_photo, camera_clip, microphone_listen: the machine the hub runs on, as eyes and ears.

Only the hub's owner may use them (they look into and listen to the owner's room). Each is
mounted whether or not the machine has the hardware, and says why not when it has none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.camera import Camera, CameraError
from drivers.microphone import MicrophoneError
from drivers.video import VideoError
from hub.agent.tools.context import ToolContext, failed, owner_turn
from hub.devices.registry import DeviceError

MACHINE = "this machine"
CameraAction = Callable[[Camera, ToolContext], Awaitable[dict[str, Any]]]


async def _use_camera(tool_context: StrandsToolContext, action: CameraAction) -> dict[str, Any]:
    """Run ``action`` with this machine's camera, for the owner only; failures become text."""
    ctx, refused = owner_turn(tool_context, "this machine's camera")
    if refused is not None:
        return refused
    camera = ctx.hub.senses.camera
    if camera is None:
        return failed(ctx.hub.senses.camera_status()[1])
    try:
        return await action(camera, ctx)
    except (CameraError, VideoError, DeviceError) as exc:
        return failed(str(exc))


@tool(name="camera_photo", context=True)
async def camera_photo(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Take a photo with the webcam of the machine the hub runs on, and look at it."""

    async def photo(camera: Camera, ctx: ToolContext) -> dict[str, Any]:
        return ctx.seen(f"{MACHINE}'s camera", None, await camera.snapshot())

    return await _use_camera(tool_context, photo)


@tool(name="camera_clip", context=True)
async def camera_clip(tool_context: StrandsToolContext, seconds: float = 5) -> dict[str, Any]:
    """Record a short video clip with the webcam of the machine the hub runs on.

    Args:
        seconds: how long, up to 10 (default 5).
    """

    async def clip(camera: Camera, ctx: ToolContext) -> dict[str, Any]:
        return ctx.filmed(f"{MACHINE}'s camera", None, await camera.clip(seconds), seconds)

    return await _use_camera(tool_context, clip)


@tool(name="microphone_listen", context=True)
async def microphone_listen(tool_context: StrandsToolContext, seconds: float = 5) -> dict[str, Any]:
    """Listen with the microphone of the machine the hub runs on and say what was heard
    (speech-to-text on this machine; nothing leaves it).

    Args:
        seconds: how long, up to 60 (default 5).
    """
    ctx, refused = owner_turn(tool_context, "this machine's microphone")
    if refused is not None:
        return refused
    microphone = ctx.hub.senses.microphone
    if microphone is None:
        return failed(ctx.hub.senses.microphone_status()[1])
    try:
        wav = await microphone.record(seconds)
    except MicrophoneError as exc:
        return failed(str(exc))
    return await ctx.heard("microphone", None, wav)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [camera_photo, camera_clip, microphone_listen]
