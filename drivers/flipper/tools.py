"""flipper_status, flipper_listen, flipper_files, flipper_find.

Mounted for everyone, whether or not a Flipper is attached: with none, they say so at once
("Flipper is not connected") rather than vanish from the model's view or hang. The Flipper on
this hub is the owner's, like its camera and microphone: only the owner's turns may use it (a
guest on the LAN may not read its SD card or listen with its radio). The protocol is
``drivers/flipper/usb.py`` and ``ble.py``; this module only finds the attached Flipper (a
:class:`~drivers.flipper.rules.Flipper`, whichever way it is reached) and shapes the answers.
``FlipperDriver.agent_tools`` brings these tools to the hub, which knows no Flipper by name.
"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import DriverError, DriverHost, hinted, turn_host, with_attached
from drivers.flipper.rules import BLE_DRIVER, USB_DRIVER, Flipper

NOT_CONNECTED = "Flipper is not connected"
WHAT = "the Flipper attached to it"


def _attached(host: DriverHost) -> Flipper | None:
    """The attached Flipper: over USB when it is (the CLI can do more), else over BLE."""
    for family in (USB_DRIVER, BLE_DRIVER):
        for driver in host.online(family):
            if isinstance(driver, Flipper):
                return driver
    return None


def _bluetooth_problem(host: DriverHost) -> str:
    """Why a Flipper seen over Bluetooth is not usable (e.g. it needs pairing), or ""."""
    problems = [
        str(r["detail"])
        for r in host.driver_records()
        if r["driver"] == BLE_DRIVER and r["status"] == "error"
    ]
    return f"; over Bluetooth: {'; '.join(problems)}" if problems else ""


async def _use(tool_context: StrandsToolContext, action: Any) -> dict[str, Any]:
    def missing(host: DriverHost) -> str:
        return f"{NOT_CONNECTED} to this hub (plug it in over USB){_bluetooth_problem(host)}"

    return await with_attached(tool_context, WHAT, _attached, missing, action, (DriverError,))


@tool(name="flipper_status", context=True)
async def flipper_status(tool_context: StrandsToolContext) -> dict[str, Any]:
    """Read the Flipper Zero's status: its name, model, firmware version, battery level and
    connection."""

    async def status(host: DriverHost, flipper: Flipper) -> dict[str, Any]:
        summary = await flipper.summary()
        battery = summary["battery"]
        return host.ok(
            f"{summary['model']} '{summary['name']}', firmware {summary['firmware']}, battery "
            f"{battery['level']}% ({battery['state']}), {summary['connection']}.",
            **summary,
        )

    return await _use(tool_context, status)


@tool(name="flipper_listen", context=True)
async def flipper_listen(
    kind: str,
    tool_context: StrandsToolContext,
    seconds: int = 10,
    frequency: int = 433_920_000,
) -> dict[str, Any]:
    """Listen with the Flipper for a while and report what it decoded (receive only).

    Args:
        kind: subghz, ir or nfc.
        seconds: how long, 1-60 (default 10).
        frequency: for subghz, in Hz (default 433920000).
    """

    async def listen(host: DriverHost, flipper: Flipper) -> dict[str, Any]:
        heard = await flipper.listen(kind, seconds, frequency)
        return host.ok(heard_text(kind, heard), **heard)

    return await _use(tool_context, listen)


SHOWN_AT_MOST = 5


def heard_text(kind: str, heard: dict[str, Any]) -> str:
    """What a listen decoded, in words: the model answers from this sentence, so it names each
    signal (told only how many, a small model made up what they said)."""
    said = f"Listened {heard['seconds']} s for {kind}"
    if "found" in heard:  # the protocols of the NFC tag in reach
        found = ", ".join(str(name) for name in heard["found"])
        return f"{said}: found {found}." if found else f"{said}: no tag found."
    items = [_said(item) for item in heard.get("packets") or heard.get("signals") or []]
    if not items:
        return f"{said}: 0 decoded."
    more = f"; and {len(items) - SHOWN_AT_MOST} more" if len(items) > SHOWN_AT_MOST else ""
    return f"{said}: {len(items)} decoded: {'; '.join(items[:SHOWN_AT_MOST])}{more}."


def _said(item: object) -> str:
    if isinstance(item, dict):  # an infrared signal
        repeat = " (repeat)" if item.get("repeat") else ""
        return (
            f"{item.get('protocol')} address 0x{int(item.get('address', 0)):02X} "
            f"command 0x{int(item.get('command', 0)):02X}{repeat}"
        )
    return str(item)


@tool(name="flipper_files", context=True)
async def flipper_files(action: str, path: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """List, stat or read files on the Flipper (under /ext, the SD card, or /int).

    Args:
        action: list, stat or read (reads are limited to 64 KB).
        path: an absolute path such as /ext/subghz.
    """

    async def files(host: DriverHost, flipper: Flipper) -> dict[str, Any]:
        found = await flipper.files(action, path)
        if action == "list":
            names = ", ".join(e["name"] + ("/" if e["dir"] else "") for e in found["entries"])
            return host.ok(f"Files in {path}: {names}." if names else f"{path} is empty.", **found)
        if action == "read":
            return host.ok(found["text"], path=found["path"], size=found["size"])
        return host.ok(f"{path}: {found}", **found)

    return await _use(tool_context, files)


@tool(name="flipper_find", context=True)
async def flipper_find(tool_context: StrandsToolContext, signal: bool = False) -> dict[str, Any]:
    """Where the person's Flipper is: attached to this hub, or reported by one of their other
    devices. With signal, it beeps, blinks and vibrates so they can find it in the room.

    Args:
        signal: make it beep, blink and vibrate (when attached to this hub).
    """
    host = turn_host(tool_context)
    flipper = _attached(host) if host.owner_refusal(WHAT) is None else None
    if flipper is not None:
        if signal:
            try:
                await flipper.signal()
            except DriverError as exc:
                return host.failed(str(exc))
        # What the person asked for comes first, said to them: a small model writes its answer
        # from the first sentence, and read "It beeped" as advice on how to make it beep.
        said = "Your Flipper just beeped, blinked and vibrated where it is. " if signal else ""
        return host.ok(
            f"{said}Flipper '{flipper.device_name}' is attached to this hub over {flipper.over} "
            f"({flipper.port}).",
            where=flipper.link,
            port=flipper.port,
            signalled=signal,
        )
    elsewhere = host.devices_reporting("flipper")
    if elsewhere:
        return host.ok(
            f"{NOT_CONNECTED} to this hub; your device(s) {', '.join(elsewhere)} report "
            "a Flipper (ask them with use_device).",
            where="devices",
            devices=elsewhere,
        )
    return host.failed(f"{NOT_CONNECTED} to this hub, and none of your devices reports one")


TOOLS: tuple[AgentTool, ...] = (flipper_status, flipper_listen, flipper_files, flipper_find)

hinted("flipper", flipper_status, flipper_listen, flipper_files, flipper_find)
