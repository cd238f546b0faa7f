"""Captures: what a real device answered to a fixed, read-only script, as a JSON file.

``tiny-hub capture DEVICE --port PATH --out FILE`` records one with the recorder a driver
package registers under the ``tiny_hub.captures`` entry-point group (``DEVICE`` is its name; this
repository's are ``flipper/capture.py`` and ``nicla_vision/capture.py``), called as
``record(port, redact=...)`` and answering the capture's JSON data; the tests replay the
committed ones (``tests/captures/``) against the drivers' parsers and compare the emulators'
answers with them. A capture is a list of steps in the order they ran, each with the bytes sent
and received (hex) and the received bytes as text for a person to read before sharing the file.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

CAPTURE_FORMAT = "tiny-hub-capture/1"
RECORDER_GROUP = "tiny_hub.captures"

Recorder = Callable[..., dict[str, Any]]
"""``record(port, *, redact)``: a device's answers to its family's read-only script."""


class CaptureError(Exception):
    """The device did not answer a step of the script; the message names the step."""


@dataclass
class Capture:
    """What a recording holds: the steps in order, each with its bytes both ways."""

    device: str
    source: str
    """"device" for real hardware, "emulator" for one recorded from an emulator."""
    steps: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, sent: bytes, received: bytes, *, kind: str = "cli") -> None:
        """``kind`` says how the bytes are framed: "cli" (text both ways), "rpc" (frames,
        perhaps then a prompt) or "call" (an RPC call's arguments and its result)."""
        self.steps.append(
            {"name": name, "kind": kind, "sent": sent.hex(), "received": received.hex()}
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "format": CAPTURE_FORMAT,
            "device": self.device,
            "source": self.source,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "notes": self.notes,
            "steps": [{**step, "text": _text(step)} for step in self.steps],
        }


def _text(step: dict[str, str]) -> str:
    """The received bytes for a person to read: text as it is, binary as its length."""
    data = bytes.fromhex(step["received"])
    if step["kind"] == "cli":
        return data.decode("utf-8", "replace")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes>"
    return text if text.isprintable() else f"<{len(data)} bytes>"


def write_capture(capture: dict[str, Any], out: Path) -> None:
    out.write_text(json.dumps(capture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_capture(path: Path) -> dict[str, Any]:
    capture: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if capture.get("format") != CAPTURE_FORMAT:
        raise ValueError(f"{path} is not a {CAPTURE_FORMAT} capture")
    return capture


def received(capture: dict[str, Any], name: str) -> bytes:
    """The bytes the step ``name`` received; KeyError when the capture has no such step."""
    for step in capture["steps"]:
        if step["name"] == name:
            return bytes.fromhex(step["received"])
    raise KeyError(name)


def recorders() -> dict[str, Recorder]:
    """Every installed capture recorder, by the device name ``tiny-hub capture`` takes."""
    return {ep.name: ep.load() for ep in entry_points(group=RECORDER_GROUP)}


def run_capture(device: str, port: str, out: Path, *, redact: bool = True) -> int:
    """``tiny-hub capture``: record, write, say where. A device nothing records, one that does
    not answer, or an ``out`` that exists already or has no folder, is a one-line error on
    stderr (exit status 2), and nothing is written."""
    found = recorders()
    refused = _unwritable(out)
    if device not in found:
        known = ", ".join(sorted(found)) or "none is installed"
        refused = f"no recorder for {device!r} (these record one: {known})"
    if refused:
        print(f"tiny-hub: capture not started: {refused}", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        capture = found[device](port, redact=redact)
        write_capture(capture, out)
    except (CaptureError, OSError) as exc:
        print(f"tiny-hub: capture failed: {exc}", file=sys.stderr)
        return 2
    took = time.monotonic() - started
    print(f"wrote {out}: {len(capture['steps'])} steps in {took:.1f} s")
    return 0


def _unwritable(out: Path) -> str | None:
    """Why ``out`` cannot take a new capture (checked before the device is touched)."""
    if out.exists():
        return f"{out} already exists (a capture is never overwritten; choose another --out)"
    if not out.parent.is_dir():
        return f"{out.parent} is not a folder"
    return None
