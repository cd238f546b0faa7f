"""camera_photo, camera_clip, microphone_listen: the machine the hub runs on, as eyes and ears.

Only the hub's owner may use them (they look into and listen to the owner's room). Each is
mounted whether or not the machine has the hardware, and says why not when it has none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.machine.camera import Camera, CameraError
from drivers.machine.microphone import Microphone, MicrophoneError
from hub.agent.tools.context import ToolContext, failed, owner_turn
from hub.devices.registry import DeviceError
from hub.senses import Senses
from media.video import VideoError

MACHINE = "this machine"
T = TypeVar("T")


async def _use_sense(
    tool_context: StrandsToolContext,
    sense: str,
    pick: Callable[[Senses], T | None],
    status: Callable[[Senses], tuple[bool, str]],
    failures: tuple[type[Exception], ...],
    action: Callable[[T, ToolContext], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Run ``action`` with one of this machine's senses, for the owner only; a sense that is
    off says why, and a failure becomes text."""
    ctx, refused = owner_turn(tool_context, f"{MACHINE}'s {sense}")
    if refused is not None:
        return refused
    found = pick(ctx.hub.senses)
    if found is None:
        return failed(status(ctx.hub.senses)[1])
    try:
        return await action(found, ctx)
    except failures as exc:
        return failed(str(exc))


async def _use_camera(
    tool_context: StrandsToolContext,
    action: Callable[[Camera, ToolContext], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    return await _use_sense(
        tool_context,
        "camera",
        lambda senses: senses.camera,
        Senses.camera_status,
        (CameraError, VideoError, DeviceError),
        action,
    )


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

    async def listen(microphone: Microphone, ctx: ToolContext) -> dict[str, Any]:
        wav = await microphone.record(seconds)
        return await ctx.heard("microphone", None, wav)

    return await _use_sense(
        tool_context,
        "microphone",
        lambda senses: senses.microphone,
        Senses.microphone_status,
        (MicrophoneError,),
        listen,
    )


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [camera_photo, camera_clip, microphone_listen]
