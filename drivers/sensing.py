"""The tools of every camera and microphone a driver runs: a photo, a clip, a recording.

One shape for all of them, a board's camera and the machine's own alike: only the hub's owner
may use them (they look into and listen to the owner's room); each finds the first device of
its driver family that can do the job, says what is missing when none is online, keeps what it
captured in the hub's media store (``DriverHost.seen``, ``filmed``, ``heard``: a recording is
transcribed too) and turns the driver's own failure into a sentence the model reads. A family
makes its tools here with its own names, words and limits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import Driver, DriverError, DriverHost, StillCamera, with_attached
from media.video import VideoError

Missing = Callable[[DriverHost], str]
"""Why there is no device to use, for the model (called only when none is online)."""
Device = TypeVar("Device")


@runtime_checkable
class VideoCamera(Protocol):
    """A driver whose device films (capability ``"video"``)."""

    async def clip(self, seconds: float) -> bytes:
        """An MP4 of about ``seconds``."""
        ...


@runtime_checkable
class Listener(Protocol):
    """A driver whose device records sound (capability ``"microphone"``)."""

    async def listen(self, seconds: float) -> bytes:
        """A WAV of about ``seconds``."""
        ...


def online_as(host: DriverHost, family: str, kind: type) -> Any:
    """The first running driver of ``family`` that is a ``kind`` (a class, or a runtime-checkable
    protocol such as :class:`VideoCamera`), or None."""
    return next((d for d in host.online(family) if isinstance(d, kind)), None)


async def _use(
    tool_context: StrandsToolContext,
    family: str,
    kind: type,
    what: str,
    missing: Missing,
    action: Callable[[DriverHost, Device], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    def found(host: DriverHost) -> Device | None:
        device: Device | None = online_as(host, family, kind)
        return device

    return await with_attached(
        tool_context, what, found, missing, action, (DriverError, VideoError)
    )


def _device_id(device: object) -> str | None:
    return device.device_id if isinstance(device, Driver) else None


def _args(description: str, default_s: float, max_s: float) -> str:
    return (
        f"{description}\n\nArgs:\n    seconds: how long, up to {max_s:g} (default {default_s:g}).\n"
    )


def photo_tool(name: str, description: str, family: str, what: str, missing: Missing) -> AgentTool:
    """``name``: a photo with the first camera of ``family`` online, shown to the model;
    ``what`` names the camera in the answer and in the owner-only refusal."""

    async def photo(tool_context: StrandsToolContext) -> dict[str, Any]:
        async def take(host: DriverHost, camera: StillCamera) -> dict[str, Any]:
            return host.seen(what, _device_id(camera), await camera.snapshot())

        return await _use(tool_context, family, StillCamera, what, missing, take)

    photo.__doc__ = description
    return tool(name=name, context=True)(photo)


def clip_tool(
    name: str,
    description: str,
    family: str,
    what: str,
    missing: Missing,
    *,
    default_s: float,
    max_s: float,
) -> AgentTool:
    """``name``: a short clip with the first camera of ``family`` online that films."""

    async def clip(tool_context: StrandsToolContext, seconds: float = default_s) -> dict[str, Any]:
        async def film(host: DriverHost, camera: VideoCamera) -> dict[str, Any]:
            return host.filmed(what, _device_id(camera), await camera.clip(seconds), seconds)

        return await _use(tool_context, family, VideoCamera, what, missing, film)

    clip.__doc__ = _args(description, default_s, max_s)
    return tool(name=name, context=True)(clip)


def listen_tool(
    name: str,
    description: str,
    family: str,
    what: str,
    source: str,
    missing: Missing,
    *,
    default_s: float,
    max_s: float,
) -> AgentTool:
    """``name``: a recording with the first microphone of ``family`` online, transcribed on
    the hub; ``source`` is the transcript's source."""

    async def listen(
        tool_context: StrandsToolContext, seconds: float = default_s
    ) -> dict[str, Any]:
        async def record(host: DriverHost, microphone: Listener) -> dict[str, Any]:
            wav = await microphone.listen(seconds)
            return await host.heard(source, _device_id(microphone), wav)

        return await _use(tool_context, family, Listener, what, missing, record)

    listen.__doc__ = _args(description, default_s, max_s)
    return tool(name=name, context=True)(listen)
