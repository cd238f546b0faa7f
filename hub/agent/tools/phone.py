"""The tools a paired phone runs: the Meta glasses on it (``meta_*``), its screen, its image
generator (docs/phone-apps.md).

In a native app's own session the app runs them itself, from the tool call it sees in the
stream (beforeToolCallEvent), so the result only tells the model the request went out. Anywhere
else (the web, the TUI, a device asking) they are mounted for a person whose paired phone
reports the capability, and the hub asks that phone through its mailbox: a photo comes back as
an image the model sees, a recording or a clip as media plus what was said in it, transcribed
on this hub.
"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import (
    ToolContext,
    failed,
    login_required,
    ok,
    sent_to_client,
    turn_context,
)
from hub.devices.phones import (
    GENERATE_IMAGE,
    GLASSES,
    SCREENSHOT,
    PhoneMedia,
    PhoneReply,
    ask_phone,
    capabilities_of_phones,
    phone_for,
)
from hub.devices.registry import DeviceError
from hub.devices.transcripts import transcribe_media
from hub.runtime.hub import Hub
from media.audio import AudioError
from media.soundtrack import has_sound
from media.speech import SpeechUnavailable


@tool(name="screenshot", context=True)
async def screenshot(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Capture the phone's screen. The user is asked first and a recording indicator shows."""
    return await through_phone(tool_context, SCREENSHOT, "screenshot")


@tool(name="meta_take_photo", context=True)
async def meta_take_photo(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Take a photo with the Meta glasses paired to the phone; you see the photo."""
    return await through_phone(tool_context, GLASSES, "meta_take_photo")


@tool(name="meta_record_video", context=True)
async def meta_record_video(tool_context: StrandsToolContext, seconds: int = 10) -> dict[str, Any]:
    """Record a short video with the Meta glasses paired to the phone; what is said in it is
    transcribed for you.

    Args:
        seconds: length of the video, 1 to 60.
    """
    return await _record(tool_context, "meta_record_video", seconds, most=60)


@tool(name="meta_listen", context=True)
async def meta_listen(tool_context: StrandsToolContext, seconds: int = 10) -> dict[str, Any]:
    """Record audio through the Meta glasses' microphones and transcribe it.

    Args:
        seconds: how long to listen, 1 to 120.
    """
    return await _record(tool_context, "meta_listen", seconds, most=120)


async def _record(
    tool_context: StrandsToolContext, action: str, seconds: int, most: int
) -> dict[str, Any]:
    """A recording on the glasses of 1 to ``most`` seconds, through the phone."""
    if not 1 <= seconds <= most:
        return failed(f"seconds must be between 1 and {most}")
    return await through_phone(tool_context, GLASSES, action, seconds=seconds)


@tool(name="meta_glasses_status", context=True)
async def meta_glasses_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Whether the Meta glasses are connected to the phone, and their battery."""
    return await through_phone(tool_context, GLASSES, "meta_glasses_status")


@tool(name="generate_image", context=True)
async def generate_image(tool_context: StrandsToolContext, prompt: str) -> dict[str, Any]:
    """Generate an image on the iPhone from a text description.

    Args:
        prompt: what the image should show.
    """
    if not prompt.strip():
        return failed("describe the image to generate")
    return await through_phone(tool_context, GENERATE_IMAGE, "generate_image", prompt=prompt)


GLASSES_TOOLS: list[AgentTool] = [
    meta_take_photo,
    meta_record_video,
    meta_listen,
    meta_glasses_status,
]
# The order they are mounted in: the contract's native-app tools, then iOS's.
IN_ORDER: list[tuple[AgentTool, str]] = [
    (screenshot, SCREENSHOT),
    *((t, GLASSES) for t in GLASSES_TOOLS),
    (generate_image, GENERATE_IMAGE),
]


def tools(ctx: ToolContext) -> list[AgentTool]:
    """A native app's session gets its platform's tools; anyone else the tools their paired
    phones report they can run."""
    able = capabilities_of_phones(ctx.hub.devices, ctx.caller.id) if ctx.caller else set()
    if ctx.native_app:
        able |= {SCREENSHOT, GLASSES}
    if ctx.ios:
        able.add(GENERATE_IMAGE)
    return [candidate for candidate, needs in IN_ORDER if needs in able]


async def through_phone(
    tool_context: StrandsToolContext, capability: str, action: str, **request: Any
) -> dict[str, Any]:
    """Run ``action`` where it belongs: in the native app that is asking (it acts on the call
    it sees in the stream), else on the caller's phone that reports ``capability``."""
    ctx = turn_context(tool_context)
    if ctx.native_app:
        return sent_to_client(action, **request)
    if ctx.caller is None:
        return login_required()
    devices = ctx.hub.devices
    try:
        phone = phone_for(devices, ctx.caller.id, capability)
    except DeviceError as exc:
        return failed(str(exc))
    extra_wait_s = float(request.get("seconds", 0))
    reply = await ask_phone(devices, phone, {"type": action, **request}, extra_wait_s)
    return await phone_result(ctx.hub, reply)


async def phone_result(hub: Hub, reply: PhoneReply) -> dict[str, Any]:
    """The phone's reply as a tool result: its words, its pictures as images the model sees,
    its recordings kept with what was said in them."""
    name = reply.device.name
    if reply.pending_id:
        return ok(
            f"{name} is still working on it. Ask again later with use_device action 'result' "
            f"and id {reply.pending_id}.",
            pending=True,
            id=reply.pending_id,
        )
    if reply.error is not None:
        return failed(f"{name}: {reply.error}")
    lines = [reply.text or f"{name} answered."]
    lines += [f"Picture kept as /media/{key}." for key in reply.image_keys]
    heard = [await _heard(hub, reply, media) for media in reply.media]
    lines += [line for line, _ in heard]
    if reply.refused:
        lines.append(f"(ignored {len(reply.refused)} item(s) not on this hub's media store)")
    data: dict[str, Any] = {"device": name, "media": [f"/media/{m.key}" for m in reply.media]}
    data["images"] = [f"/media/{key}" for key in reply.image_keys]
    data["transcripts"] = [record for _, record in heard if record is not None]
    content: list[dict[str, Any]] = [{"text": "\n".join(lines)}, {"json": data}]
    content += [{"image": {"format": fmt, "source": {"bytes": raw}}} for raw, fmt in reply.images]
    return {"status": "success", "content": content}


async def _heard(
    hub: Hub, reply: PhoneReply, media: PhoneMedia
) -> tuple[str, dict[str, Any] | None]:
    """A line about one recording or clip (and what was said in it), and its transcript."""
    kept = f"{media.content_type} kept as /media/{media.key}"
    if not has_sound(media.content_type):
        return f"{kept}.", None
    source = f"{reply.device.name} (phone)"
    try:
        transcript = await transcribe_media(
            hub.speech, media.data, media.content_type, source=source
        )
    except (AudioError, SpeechUnavailable) as exc:
        return f"{kept}; not transcribed: {exc}", None
    record = hub.transcripts.add(
        reply.device.owner,
        source,
        transcript.text,
        device_id=reply.device.id,
        language=transcript.language,
        audio_s=transcript.audio_s,
        media_key=media.key,
    )
    said = f'"{transcript.text}"' if transcript.text else "no speech"
    return f"{kept}; heard {transcript.audio_s:.1f} s: {said}.", record.as_json()


hinted("phone", screenshot, generate_image)
hinted("glasses", meta_take_photo, meta_record_video, meta_listen, meta_glasses_status)
