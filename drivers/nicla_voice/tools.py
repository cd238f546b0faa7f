"""nicla_voice_status, nicla_voice_wakes, nicla_voice_record, nicla_voice_transcripts,
nicla_voice_transcript.

A Nicla Voice is paired either to this hub (``driver.py`` holds the BLE link) or to
one of the owner's phones. Status and wakes read the driver, the device registry and the event
ring; a recording is made here when the board is here, and otherwise rides the phone's relay
mailbox as a ``nicla_voice_record`` envelope; transcripts are rows in the hub's store. The hub
lends all of that through ``drivers.base.DriverHost``; ``NiclaVoiceDriver.agent_tools`` brings
these tools to it.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, runtime_checkable

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import DriverError, DriverHost, DriverHostError, ToolResult, hinted, turn_host
from drivers.nicla_voice.wire import WAKE_EVENT
from drivers.sensing import online_as

FAMILY = CAPABILITY = "nicla_voice"
RECORD_ENVELOPE = "nicla_voice_record"


@runtime_checkable
class Board(Protocol):
    """What the tools ask of a Nicla Voice attached to this hub."""

    device_id: str

    @property
    def device_name(self) -> str: ...

    def summary(self) -> dict[str, Any]: ...

    async def record(self, seconds: float) -> bytes: ...


def _attached(host: DriverHost) -> Board | None:
    board: Board | None = online_as(host, FAMILY, Board)
    return board


def _owner_turn(
    tool_context: StrandsToolContext, what: str
) -> tuple[DriverHost, ToolResult | None]:
    host = turn_host(tool_context)
    return host, host.owner_refusal(what)


def _ago(at: float) -> str:
    seconds = max(0, int(time.time() - at))
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"


@tool(name="nicla_voice_status", context=True)
async def nicla_voice_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The Nicla Voice recorder: connected or not, last seen, battery, last wake word."""
    host, refused = _owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    board = _attached(host)
    if board is not None:
        found = board.summary()
        wake = found.get("last_wake")
        parts = [f"Nicla Voice '{board.device_name}' is connected to this hub over Bluetooth LE"]
        if found.get("battery") is not None:
            parts.append(f"battery {found['battery']}%")
        if wake:
            parts.append(f"last wake '{wake['label']}' {_ago(wake['at'])}")
        return host.ok(", ".join(parts) + ".", where="hub", **found)
    phones = host.dial_in_devices(CAPABILITY)
    if phones:
        names = ", ".join(f"{d['name']} (online: {d['online']})" for d in phones)
        return host.ok(f"The Nicla Voice is paired to {names}.", where="phone", devices=phones)
    return host.failed(
        "No Nicla Voice is connected to this hub (is it powered and in range?) and none of "
        "your devices reports one"
    )


@tool(name="nicla_voice_wakes", context=True)
async def nicla_voice_wakes(tool_context: StrandsToolContext, limit: int = 10) -> dict[str, Any]:
    """Recent wake words the Nicla Voice heard, newest first.

    Args:
        limit: how many, 1-50 (default 10).
    """
    host, refused = _owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    limit = max(1, min(50, limit))
    events = host.recent_events(WAKE_EVENT)[-limit:][::-1]
    wakes = [
        {
            "label": (e["detail"] or {}).get("label"),
            "at": e["created_at"],
            "deviceId": e["deviceId"],
        }
        for e in events
    ]
    if not wakes:
        return host.ok("No wake words heard yet.", wakes=[])
    lines = [f"- '{w['label']}' {_ago(w['at'])}" for w in wakes]
    return host.ok("\n".join(lines), wakes=wakes)


@tool(name="nicla_voice_record", context=True)
async def nicla_voice_record(
    tool_context: StrandsToolContext, seconds: float = 5
) -> dict[str, Any]:
    """Record with the Nicla Voice now and say what was heard (speech-to-text on this hub).

    Args:
        seconds: how long, up to 30 (default 5).
    """
    host, refused = _owner_turn(tool_context, "the Nicla Voice")
    if refused is not None:
        return refused
    board = _attached(host)
    if board is not None:
        try:
            wav = await board.record(seconds)
        except DriverError as exc:
            return host.failed(str(exc))
        return await host.heard(FAMILY, board.device_id, wav)
    phones = host.dial_in_devices(CAPABILITY)
    if not phones:
        return host.failed(
            "No Nicla Voice is connected to this hub and none of your devices reports one"
        )
    return await host.ask_device(phones[0]["id"], {"type": RECORD_ENVELOPE, "seconds": seconds})


@tool(name="nicla_voice_transcripts", context=True)
async def nicla_voice_transcripts(
    tool_context: StrandsToolContext, limit: int = 10
) -> dict[str, Any]:
    """Transcripts of recordings (the Nicla Voice's and the hub's other microphones'), newest
    first, each with its id.

    Args:
        limit: how many, 1-50 (default 10).
    """
    host, refused = _owner_turn(tool_context, "the transcripts")
    if refused is not None:
        return refused
    found = host.transcripts(max(1, min(50, limit)))
    if not found:
        return host.ok("No transcripts yet.", transcripts=[])
    lines = [
        f"- {t['id']} ({t['source']}, {_ago(t['created_at'])}): {t['text'][:120] or '(no speech)'}"
        for t in found
    ]
    return host.ok("\n".join(lines), transcripts=found)


@tool(name="nicla_voice_transcript", context=True)
async def nicla_voice_transcript(tool_context: StrandsToolContext, id: str) -> dict[str, Any]:
    """One transcript in full, by its id (from nicla_voice_transcripts).

    Args:
        id: the transcript's id, e.g. tr_0123abcd.
    """
    host, refused = _owner_turn(tool_context, "the transcripts")
    if refused is not None:
        return refused
    try:
        found = host.transcript(id)
    except DriverHostError as exc:
        return host.failed(str(exc))
    return host.ok(found["text"] or "(no speech was heard)", transcript=found)


TOOLS: tuple[AgentTool, ...] = (
    nicla_voice_status,
    nicla_voice_wakes,
    nicla_voice_record,
    nicla_voice_transcripts,
    nicla_voice_transcript,
)


hinted(
    "nicla_voice",
    nicla_voice_status,
    nicla_voice_wakes,
    nicla_voice_record,
    nicla_voice_transcripts,
    nicla_voice_transcript,
)
