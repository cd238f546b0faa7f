"""The hub's status as the settings screen words it: address, version, LAN, the cloud link."""

from __future__ import annotations

import time
from typing import Any

from hub.client.http import HubError
from tui.settings.forms import Answer
from tui.settings.model import describe_default

NOT_YET = "not available on this hub yet"
CLOUD_OFF = "off (tiny-hub cloud join)"
NO_LAN = "not on a network (the hub listens on loopback only; set server.host / lan.url)"
PAIRING_HOW = "pairing: p shows a code and a QR for a phone (valid 5 minutes, once)"


def status_lines(health: Answer | HubError, url: str) -> list[str]:
    """The status section: version and model, where a phone on the LAN dials (and the loopback
    listener when TLS is on), the cloud link as far as /api/health tells, and how to pair."""
    if isinstance(health, HubError):
        return [str(health)]
    model = health.get("model", {})
    lines = [
        f"hub: {url} · version {health.get('version', '?')} · up {health.get('uptime', 0):.0f} s",
        f"model: {describe_default(model)}",
        f"LAN: {health.get('lanUrl') or NO_LAN}",
    ]
    if health.get("loopbackUrl"):
        lines.append(f"loopback: {health['loopbackUrl']}")
    lines += [f"cloud: {cloud_state(health.get('cloud'))}", PAIRING_HOW]
    return lines


def clock(seconds: object) -> str:
    """An epoch time as a local HH:MM ("" when the hub sent none)."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return ""
    return time.strftime("%H:%M", time.localtime(seconds))


def cloud_state(cloud: object) -> str:
    """The cloud link as /api/health's ``cloud`` tells it (hub/cloud/link.py ``status()``):
    off (and how to join), online, offline since when and why with what waits to be sent, or
    refused and why; then memory sync's state when it is on. A hub that predates the field
    says nothing about the cloud."""
    if not isinstance(cloud, dict):
        return NOT_YET
    memory = cloud.get("memory")
    line = _link_state(cloud)
    if isinstance(memory, dict) and memory.get("state") not in (None, "off"):
        synced = clock(memory.get("syncedAt"))
        said = f"in sync at {synced}" if memory.get("state") == "online" and synced else None
        line += f" · memory: {said or memory.get('state')}"
    return line


def _link_state(cloud: dict[str, Any]) -> str:
    state = str(cloud.get("state") or "off")
    if state == "off":
        return CLOUD_OFF
    detail = str(cloud.get("detail") or "")
    if state == "offline":
        since = clock(cloud.get("since"))
        line = f"offline since {since}" if since else "offline"
        if detail:
            line += f" — {detail}"
        pending = cloud.get("pending")
        if isinstance(pending, int) and not isinstance(pending, bool) and pending > 0:
            line += f" · {pending} waiting"
        return line
    if state == "refused":
        return f"refused — {detail}" if detail else "refused"
    return state  # online, starting
