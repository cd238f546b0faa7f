"""The page and phone tools (docs/page-tools.md): the live map and the device actions.

Like the other client tools (``client.py``), the hub checks the input and the client acts on
the tool call it sees in the stream. The hub keeps no map: the markers live in the client that
draws them. When the client listed what it can do (``client_caps.py``) and this is not among
it, the result says so instead of sending a request nothing will act on.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub import contracts as c
from hub.agent.tools.context import ToolContext, failed, sent_to_client, turn_context

MARKER_ID_MAX = 64
TITLE_MAX = 120
NOTE_MAX = 500
LABEL_MAX = 120
ZOOM_MIN, ZOOM_MAX = 1.0, 20.0
TOUR_MAX = 50
DWELL_MIN_S, DWELL_MAX_S = 1.0, 60.0
VIBRATE_MIN_MS, VIBRATE_MAX_MS = 50, 5000


class BadInput(ValueError):
    """One argument out of bounds; its text is what the model reads."""


def _refused(tool_context: StrandsToolContext, capability: str) -> dict[str, Any] | None:
    refusal = turn_context(tool_context).client.refusal(capability)
    return failed(refusal) if refusal else None


def _send(
    tool_context: StrandsToolContext, capability: str, action: str, **request: Any
) -> dict[str, Any]:
    """The request for the client, or the refusal when it said it cannot do ``capability``."""
    return _refused(tool_context, capability) or sent_to_client(action, **request)


def _text(value: str, what: str, limit: int, *, required: bool = True) -> str:
    """Trimmed text without control characters, 1 (or 0) to ``limit`` characters."""
    text = value.strip()
    if required and not text:
        raise BadInput(f"{what} must not be empty")
    if len(text) > limit:
        raise BadInput(f"{what} is at most {limit} characters")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in text):
        raise BadInput(f"{what} must not contain control characters")
    return text


def _marker_id(value: str) -> str:
    marker_id = _text(value, "id", MARKER_ID_MAX)
    if any(ch.isspace() for ch in marker_id):
        raise BadInput("id must not contain spaces (use - or _)")
    return marker_id


def _number(value: float, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInput(f"{what} must be a finite number")
    if not low <= value <= high:
        raise BadInput(f"{what} must be between {low:g} and {high:g}")
    return float(value)


def _position(lat: float, lon: float) -> dict[str, float]:
    return {"lat": _number(lat, "lat", -90, 90), "lon": _number(lon, "lon", -180, 180)}


def _zoom(zoom: float | None) -> dict[str, float]:
    return {} if zoom is None else {"zoom": _number(zoom, "zoom", ZOOM_MIN, ZOOM_MAX)}


# --- the live map ---------------------------------------------------------------------------


@tool(name="add_map_marker", context=True)
def add_map_marker(
    id: str,
    lat: float,
    lon: float,
    title: str,
    tool_context: StrandsToolContext,
    note: str = "",
) -> dict[str, Any]:
    """Put a marker on the user's live map (a marker with the same id is replaced).

    Args:
        id: a short name for the marker, used to fly to or remove it (no spaces).
        lat: latitude in degrees, -90 to 90.
        lon: longitude in degrees, -180 to 180.
        title: what the marker is called on the map, at most 120 characters.
        note: a longer description, at most 500 characters.
    """
    try:
        marker = {
            "id": _marker_id(id),
            **_position(lat, lon),
            "title": _text(title, "title", TITLE_MAX),
            "note": _text(note, "note", NOTE_MAX, required=False),
        }
    except BadInput as exc:
        return failed(f"add_map_marker: {exc}")
    return _send(tool_context, c.CAN_MAP, "add_map_marker", **marker)


@tool(name="remove_map_marker", context=True)
def remove_map_marker(id: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Remove one marker from the user's live map.

    Args:
        id: the marker's id, as given to add_map_marker.
    """
    try:
        marker_id = _marker_id(id)
    except BadInput as exc:
        return failed(f"remove_map_marker: {exc}")
    return _send(tool_context, c.CAN_MAP, "remove_map_marker", id=marker_id)


@tool(name="fly_to_marker", context=True)
def fly_to_marker(
    id: str, tool_context: StrandsToolContext, zoom: float | None = None
) -> dict[str, Any]:
    """Centre the user's live map on one of its markers.

    Args:
        id: the marker's id, as given to add_map_marker.
        zoom: how close, 1 (the whole world) to 20 (a street); leave out to keep the zoom.
    """
    try:
        request = {"id": _marker_id(id), **_zoom(zoom)}
    except BadInput as exc:
        return failed(f"fly_to_marker: {exc}")
    return _send(tool_context, c.CAN_MAP, "fly_to_marker", **request)


@tool(name="fly_to_location", context=True)
def fly_to_location(
    lat: float,
    lon: float,
    tool_context: StrandsToolContext,
    zoom: float | None = None,
    label: str = "",
) -> dict[str, Any]:
    """Centre the user's live map on a place, without adding a marker.

    Args:
        lat: latitude in degrees, -90 to 90.
        lon: longitude in degrees, -180 to 180.
        zoom: how close, 1 (the whole world) to 20 (a street); leave out to keep the zoom.
        label: what the place is called, at most 120 characters.
    """
    try:
        request = {
            **_position(lat, lon),
            **_zoom(zoom),
            "label": _text(label, "label", LABEL_MAX, required=False),
        }
    except BadInput as exc:
        return failed(f"fly_to_location: {exc}")
    return _send(tool_context, c.CAN_MAP, "fly_to_location", **request)


@tool(name="clear_map_markers", context=True)
def clear_map_markers(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Remove every marker from the user's live map."""
    return _send(tool_context, c.CAN_MAP, "clear_map_markers")


@tool(name="tour_markers", context=True)
def tour_markers(
    tool_context: StrandsToolContext,
    ids: list[str] | None = None,
    dwell_seconds: float = 4.0,
) -> dict[str, Any]:
    """Fly the user's live map from marker to marker, pausing at each.

    Args:
        ids: the markers to visit, in order (at most 50); leave out to visit them all.
        dwell_seconds: how long to stay at each, 1 to 60 seconds.
    """
    try:
        dwell = _number(dwell_seconds, "dwell_seconds", DWELL_MIN_S, DWELL_MAX_S)
        request: dict[str, Any] = {"dwellSeconds": dwell}
        if ids is not None:
            request["ids"] = _tour_ids(ids)
    except BadInput as exc:
        return failed(f"tour_markers: {exc}")
    return _send(tool_context, c.CAN_MAP, "tour_markers", **request)


def _tour_ids(ids: list[str]) -> list[str]:
    if not 1 <= len(ids) <= TOUR_MAX:
        raise BadInput(f"ids lists 1 to {TOUR_MAX} markers (leave it out to visit them all)")
    checked = [_marker_id(i) if isinstance(i, str) else "" for i in ids]
    if "" in checked:
        raise BadInput("ids must be marker ids (strings)")
    return checked


# --- device actions -------------------------------------------------------------------------


@tool(name="vibrate", context=True)
def vibrate(tool_context: StrandsToolContext, duration_ms: int = 300) -> dict[str, Any]:
    """Vibrate the user's phone.

    Args:
        duration_ms: how long, 50 to 5000 milliseconds.
    """
    if isinstance(duration_ms, bool) or not VIBRATE_MIN_MS <= duration_ms <= VIBRATE_MAX_MS:
        return failed(f"vibrate: duration_ms must be between {VIBRATE_MIN_MS} and {VIBRATE_MAX_MS}")
    return _send(tool_context, c.CAN_VIBRATE, "vibrate", durationMs=int(duration_ms))


@tool(name="flashlight", context=True)
def flashlight(on: bool, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Turn the phone's flashlight (the camera's torch) on or off.

    Args:
        on: true to turn it on, false to turn it off.
    """
    if not isinstance(on, bool):
        return failed("flashlight: on must be true or false")
    return _send(tool_context, c.CAN_FLASHLIGHT, "flashlight", on=on)


@tool(name="set_brightness", context=True)
def set_brightness(level: float, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Set the screen brightness of the user's device.

    Args:
        level: 0 (darkest) to 1 (brightest).
    """
    try:
        checked = _number(level, "level", 0, 1)
    except BadInput as exc:
        return failed(f"set_brightness: {exc}")
    return _send(tool_context, c.CAN_BRIGHTNESS, "set_brightness", level=checked)


@tool(name="play_sound", context=True)
def play_sound(sound: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Play a short sound on the user's device.

    Args:
        sound: beep, chime, success, error or alert.
    """
    if sound not in c.SOUNDS:
        return failed(f"play_sound: sound must be one of {', '.join(c.SOUNDS)}")
    return _send(tool_context, c.CAN_SOUND, "play_sound", sound=sound)


MAP_TOOLS: list[AgentTool] = [
    add_map_marker,
    remove_map_marker,
    fly_to_marker,
    fly_to_location,
    clear_map_markers,
    tour_markers,
]
DEVICE_TOOLS: list[AgentTool] = [vibrate, flashlight, set_brightness, play_sound]


def tools(ctx: ToolContext) -> list[AgentTool]:
    """Every app gets them: the client answers for what it cannot do."""
    return MAP_TOOLS + DEVICE_TOOLS if ctx.client.app_tools else []


hinted("map", *MAP_TOOLS)
hinted("phone actions", *DEVICE_TOOLS)
