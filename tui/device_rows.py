"""What a row of the devices screen says, in words a person reads: each enrolled device and
driver record as cells, the name a board gives, the count on top, the machine's senses, and
each event of the ring. Pure functions of what the hub answered, so the wording is tested
without a terminal.

A device is listed by the name it gives: a driver whose port says nothing about the board (a
pseudo-terminal, a serial bridge without a product name) gets the hub's stand-in "flipper on
/dev/pts/5", and once the board answers, its status detail starts with its own name ("Flipper
Unyana, firmware 1.4.3"), which is then shown (Enter on the row shows the hub's name and port).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.text import Text

from hub.client.http import Event
from tui.table_layout import Column
from tui.tables import Cells, one_line

DEVICE_COLUMNS = ("name", "kind", "transport", "status", "capabilities", "detail")
"""The order the columns are shown in."""
DEVICE_LAYOUT = (  # in order of importance: what shows first when the screen is narrow
    Column("name", wraps=True, minimum=14),
    Column("status", wraps=True, minimum=12),
    Column("capabilities", wraps=True, minimum=14),
    Column("kind"),
    Column("transport"),
    Column("detail", wraps=True, minimum=20),
)
EVENT_COLUMNS = ("time", "kind", "device", "summary")
TRANSPORTS = {"usb": "USB", "serial": "serial", "ble": "BLE", "machine": "this machine"}
DIAL_IN_KINDS = ("daemon", "browser", "cli")
SUMMARY_KEYS = ("summary", "text", "label", "note", "message", "error", "title", "name")
CELL_CHARS = 300
"""A longer cell (a hub's pathological detail) is abbreviated: rows stay a few lines tall."""
SUMMARY_CHARS = 100
PORT_SUFFIX = re.compile(r" on \S+$")


def ago(seconds: float) -> str:
    """ "12 s ago", "3 min ago": how long since a device was heard, at a glance."""
    seconds = max(0.0, seconds)  # the hub's clock may run a little ahead of ours
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def status_cell(word: str, note: str = "") -> Text:
    """online green, error red, anything else dim: readable without reading."""
    style = {"online": "green", "error": "bold red"}.get(word, "dim")
    text = Text(word, style=style)
    if note:
        text.append(f" · {note}", style="dim")
    return text


def device_cells(device: Mapping[str, Any], now: float) -> Cells:
    """An enrolled device: dial-in ones come through the relay, endpoints are dialled."""
    kind = str(device.get("kind", ""))
    transport = "relay" if kind in DIAL_IN_KINDS else "endpoint"
    online, seen = device.get("online"), device.get("last_seen")
    heard = ago(now - float(seen)) if isinstance(seen, int | float) else ""
    if online is None:
        status = status_cell("per call", "reached when asked")
    elif online:
        status = status_cell("online", f"seen {heard}")
    else:
        status = status_cell("offline", f"last seen {heard}" if heard else "never seen")
    where = (device.get("platform"), device.get("url") or device.get("lanUrl"))
    detail = " ".join(str(part) for part in where if part)
    return (
        str(device.get("name", "?")),
        kind,
        transport,
        status,
        one_line(", ".join(device.get("capabilities") or []), CELL_CHARS),
        one_line(detail, CELL_CHARS),
    )


def reported_name(record: Mapping[str, Any]) -> str:
    """The name an online device gave: its driver's status detail starts with it ("Flipper
    Unyana, firmware 1.4.3"; "Nicla Vision on /dev/ttyACM0, firmware 4.5.2"); "" otherwise."""
    if record.get("status") != "online":
        return ""
    first = str(record.get("detail") or "").split(",")[0]
    return PORT_SUFFIX.sub("", first).strip()


def driver_name(record: Mapping[str, Any]) -> str:
    """How a driver record is listed: the hub's name for it, unless that is only the hub's
    stand-in for a port ("flipper on /dev/pts/5") and the device has said its own."""
    name = str(record.get("name") or record.get("device_id") or "?")
    stand_in = name.startswith(f"{record.get('driver')} on ")
    return (reported_name(record) or name) if stand_in else name


def driver_cells(record: Mapping[str, Any]) -> Cells:
    """A driver record: a physical device the hub reaches itself (over USB, serial or BLE, or
    the machine's own)."""
    transport = str(record.get("transport", ""))
    return (
        driver_name(record),
        str(record.get("driver", "")),
        TRANSPORTS.get(transport, transport),
        status_cell(str(record.get("status", "unknown"))),
        one_line(", ".join(record.get("capabilities") or []), CELL_CHARS),
        one_line(str(record.get("detail") or ""), CELL_CHARS),
    )


def counted(devices: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]) -> str:
    """What a person counts: every device in the table (enrolled or driven), and how many
    of them are online ("per call" endpoints are neither)."""
    total = len(devices) + len(records)
    if not total:
        return "no devices yet"
    online = sum(1 for d in devices if d.get("online")) + sum(
        1 for r in records if r.get("status") == "online"
    )
    return f"{total} device{'s' * (total != 1)}, {online} online"


def table_rows(
    devices: Sequence[Mapping[str, Any]], drivers: Sequence[Mapping[str, Any]], now: float
) -> dict[str, Cells]:
    """Row key → cells: enrolled devices first, then driver records, keyed so updates land
    on the same row (the cursor stays where the person left it)."""
    rows = {f"device:{d.get('id')}": device_cells(d, now) for d in devices}
    rows.update({f"driver:{r.get('device_id')}": driver_cells(r) for r in drivers})
    return rows


def machine_text(machine: Mapping[str, Any]) -> str:
    """The machine's camera, microphone and speech, one line each, in the hub's words."""
    lines = []
    for part in ("camera", "microphone"):
        state = machine.get(part) or {}
        said = state.get("detail") or ("available" if state.get("available") else "unavailable")
        lines.append(f"{part}: {str(said).removeprefix(part + ' ')}")
    speech = machine.get("speech") or {}
    if speech.get("available"):
        said = speech.get("detail") or (
            "loaded" if speech.get("loaded") else "ready (loads on first use)"
        )
        lines.append(f"speech: {speech.get('model')} — {said}")
    else:
        lines.append(f"speech: unavailable — {speech.get('detail') or 'unknown'}")
    return "\n".join(lines)


def summarize(detail: Any) -> str:
    """One line for an event's detail: its summary, text or label when it has one."""
    if detail is None:
        return ""
    if isinstance(detail, Mapping):
        for key in SUMMARY_KEYS:
            value = detail.get(key)
            if isinstance(value, str) and value.strip():
                return one_line(value, SUMMARY_CHARS)
        text = ", ".join(f"{k}={json.dumps(v)}" for k, v in detail.items())
    else:
        text = detail if isinstance(detail, str) else json.dumps(detail)
    return one_line(text, SUMMARY_CHARS)


def clock_time(stamp: Any, now: float) -> str:
    """HH:MM:SS today, the date too when older."""
    if not isinstance(stamp, int | float):
        return "?"
    when = datetime.fromtimestamp(stamp)
    same_day = when.date() == datetime.fromtimestamp(now).date()
    return when.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M")


def event_cells(event: Event, names: Mapping[str, str], now: float) -> Cells:
    device_id = event.get("deviceId")
    device = "hub" if device_id is None else names.get(str(device_id), str(device_id))
    return (
        clock_time(event.get("created_at"), now),
        str(event.get("kind", "?")),
        device,
        summarize(event.get("detail")),
    )


def record_text(record: Mapping[str, Any]) -> str:
    """Everything the hub said about one device or driver record, a field a line, uncut: what
    Enter on a row shows when the table has no room for it."""
    lines = []
    for key, value in record.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{key}: {shown}")
    return "\n".join(lines) or "(the hub sent nothing about it)"
