"""nicla_voice_status, nicla_voice_wakes, nicla_voice_record, nicla_voice_transcripts,
nicla_voice_transcript (seed 000).

A Nicla Voice is paired either to this hub (``drivers/nicla_voice.py`` holds the BLE link) or to
one of the owner's phones. Status and wakes read the driver, the device registry and the event
ring; a recording is made here when the board is here, and otherwise rides the phone's relay
mailbox as a ``nicla_voice_record`` envelope; transcripts are rows in the hub's store.
"""

from __future__ import annotations

import time
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.nicla_voice import NiclaVoiceDriver
from drivers.nicla_voice_wire import NiclaVoiceError
from hub.agent.tools.context import ToolContext, failed, ok, owner_turn
from hub.agent.tools.devices import answer_result
from hub.agent.tools.senses import heard
from hub.devices.registry import Device, DeviceError

CAPABILITY = "nicla_voice"
WAKE_EVENT = "nicla_wake"
RECORD_ENVELOPE = "nicla_voice_record"


def _attached(ctx: ToolContext) -> NiclaVoiceDriver | None:
    for driver in ctx.hub.drivers.online(NiclaVoiceDriver.name):
        if isinstance(driver, NiclaVoiceDriver):
            return driver
    return None


def _phones(ctx: ToolContext) -> list[Device]:
    """The owner's dial-in devices (phones) that report a Nicla Voice, online ones first."""
    now = ctx.hub.devices.now()
    found = [
        d
        for d in ctx.hub.devices.registry.list(ctx.hub.owner.id)
        if CAPABILITY in d.capabilities and d.dial_in
    ]
    return sorted(found, key=lambda d: d.online(now) is not True)


def _ago(at: float) -> str:
    seconds = max(0, int(time.time() - at))
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"


@tool(name="nicla_voice_status", context=True)
async def nicla_voice_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The Nicla Voice recorder: connected or not, last seen, battery, last wake word."""
    ctx, refused = owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    board = _attached(ctx)
    if board is not None:
        found = board.summary()
        wake = found.get("last_wake")
        parts = [f"Nicla Voice '{board.device_name}' is connected to this hub over Bluetooth LE"]
        if found.get("battery") is not None:
            parts.append(f"battery {found['battery']}%")
        if wake:
            parts.append(f"last wake '{wake['label']}' {_ago(wake['at'])}")
        return ok(", ".join(parts) + ".", where="hub", **found)
    phones = _phones(ctx)
    if phones:
        now = ctx.hub.devices.now()
        listed = [d.as_json(now) for d in phones]
        names = ", ".join(f"{d['name']} (online: {d['online']})" for d in listed)
        return ok(f"The Nicla Voice is paired to {names}.", where="phone", devices=listed)
    return failed(
        "No Nicla Voice is connected to this hub (is it powered and in range?) and none of "
        "your devices reports one"
    )


@tool(name="nicla_voice_wakes", context=True)
async def nicla_voice_wakes(tool_context: StrandsToolContext, limit: int = 10) -> dict[str, Any]:
    """Recent wake words the Nicla Voice heard, newest first.

    Args:
        limit: how many, 1-50 (default 10).
    """
    ctx, refused = owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    limit = max(1, min(50, limit))
    events = [
        e for e in ctx.hub.devices.events.recent(ctx.hub.owner.id, 1000) if e.kind == WAKE_EVENT
    ][-limit:][::-1]
    wakes = [
        {"label": (e.detail or {}).get("label"), "at": e.created_at, "deviceId": e.device_id}
        for e in events
    ]
    if not wakes:
        return ok("No wake words heard yet.", wakes=[])
    lines = [f"- '{w['label']}' {_ago(e.created_at)}" for w, e in zip(wakes, events, strict=True)]
    return ok("\n".join(lines), wakes=wakes)


@tool(name="nicla_voice_record", context=True)
async def nicla_voice_record(
    tool_context: StrandsToolContext, seconds: float = 5
) -> dict[str, Any]:
    """Record with the Nicla Voice now and say what was heard (speech-to-text on this hub).

    Args:
        seconds: how long, up to 30 (default 5).
    """
    ctx, refused = owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    board = _attached(ctx)
    if board is not None:
        try:
            wav = await board.record(seconds)
        except NiclaVoiceError as exc:
            return failed(str(exc))
        return await heard(ctx, NiclaVoiceDriver.name, board.device_id, wav)
    phones = _phones(ctx)
    if not phones:
        return failed(
            "No Nicla Voice is connected to this hub and none of your devices reports one"
        )
    try:
        answer = await ctx.hub.devices.request(
            phones[0], {"type": RECORD_ENVELOPE, "seconds": seconds}
        )
    except DeviceError as exc:
        return failed(str(exc))
    return answer_result(answer)


@tool(name="nicla_voice_transcripts", context=True)
async def nicla_voice_transcripts(
    tool_context: StrandsToolContext, limit: int = 10
) -> dict[str, Any]:
    """Transcripts of recordings (the Nicla Voice's and the hub's other microphones'), newest
    first, each with its id.

    Args:
        limit: how many, 1-50 (default 10).
    """
    ctx, refused = owner_turn(tool_context, "the transcripts")
    if refused is not None:
        return refused
    found = ctx.hub.transcripts.recent(ctx.hub.owner.id, max(1, min(50, limit)))
    if not found:
        return ok("No transcripts yet.", transcripts=[])
    lines = [
        f"- {t.id} ({t.source}, {_ago(t.created_at)}): {t.text[:120] or '(no speech)'}"
        for t in found
    ]
    return ok("\n".join(lines), transcripts=[t.as_json() for t in found])


@tool(name="nicla_voice_transcript", context=True)
async def nicla_voice_transcript(tool_context: StrandsToolContext, id: str) -> dict[str, Any]:
    """One transcript in full, by its id (from nicla_voice_transcripts).

    Args:
        id: the transcript's id, e.g. tr_0123abcd.
    """
    ctx, refused = owner_turn(tool_context, "the transcripts")
    if refused is not None:
        return refused
    try:
        found = ctx.hub.transcripts.get(ctx.hub.owner.id, id)
    except DeviceError as exc:
        return failed(str(exc))
    return ok(found.text or "(no speech was heard)", transcript=found.as_json())


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [
        nicla_voice_status,
        nicla_voice_wakes,
        nicla_voice_record,
        nicla_voice_transcripts,
        nicla_voice_transcript,
    ]
