"""Reading the Flipper Zero's CLI output: pure parsers, apart from the port and the driver.

Formats from the firmware sources (summarised in ``docs/hardware.md``):
``%-30s: %s`` key/value lines, ``\\t[D] name`` / ``\\t[F] name 123b`` listings, ``Size: n``
before a file's bytes, ``Storage error: ...``, and the decoded lines Sub-GHz and IR print while
listening. Everything here takes bytes or text and returns data, so property tests can throw
anything at it; a line that does not fit is skipped or named, never a crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from drivers.base import DriverError

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z0-9_.]+)\s*: (?P<value>.*)$")
LISTING = re.compile(r"^\t\[(?P<kind>[DF])\] (?P<name>.+?)(?: (?P<size>\d+)b)?$")
STORAGE_ERROR = re.compile(r"Storage error: (?P<reason>.+)")
IR_LINE = re.compile(
    r"^(?P<protocol>[A-Za-z0-9_]+), A:0x(?P<address>[0-9A-Fa-f]+), C:0x(?P<command>[0-9A-Fa-f]+)"
    r"(?P<repeat> R)?$"
)
PACKETS = re.compile(r"Packets received (?P<count>\d+)")
UNKNOWN_COMMAND = re.compile(r"could not find command `(?P<command>[^`]*)`")
NFC_SHELL_PROMPT = re.compile(rb"\[(?:\x1b\[[0-9;]*m)?nfc(?:\x1b\[[0-9;]*m)?\]$")
"""The end of a command's output (its ``>: `` taken off) when it left the NFC sub-shell's
prompt ``[nfc]>: `` ("nfc" in colour) waiting: the newest firmware's ``nfc`` opened it."""


class CliError(DriverError):
    """The Flipper answered with an error line; the message is its own words."""


def clean_lines(output: bytes | str) -> list[str]:
    """Text lines without colour codes, CRs or blanks."""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
    text = ANSI.sub("", text)
    return [line.rstrip("\r") for line in text.split("\n") if line.strip("\r\n\t ")]


def raise_for_error(output: bytes | str) -> None:
    for line in clean_lines(output):
        storage = STORAGE_ERROR.search(line)
        if storage:
            raise CliError(f"Storage error: {storage.group('reason').strip()}")
        unknown = UNKNOWN_COMMAND.search(line)
        if unknown:
            raise CliError(f"this firmware has no command `{unknown.group('command')}`")
        if "illegal option" in line or line.strip().lower().startswith("usage:"):
            raise CliError(line.strip())


def opened_nfc_shell(output: bytes) -> bool:
    return NFC_SHELL_PROMPT.search(output) is not None


def key_values(output: bytes | str) -> dict[str, str]:
    """``device_info`` / ``info device`` / ``info power`` lines → {key: value}."""
    found: dict[str, str] = {}
    for line in clean_lines(output):
        match = KEY_VALUE.match(line.strip())
        if match:
            found[match.group("key")] = match.group("value").strip()
    return found


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    size: int | None = None


def storage_list(output: bytes | str) -> list[Entry]:
    raise_for_error(output)
    entries = []
    for line in clean_lines(output):
        match = LISTING.match(line)
        if match:
            size = match.group("size")
            entries.append(
                Entry(match.group("name"), match.group("kind") == "D", int(size) if size else None)
            )
    return entries


def storage_stat(output: bytes | str) -> dict[str, object]:
    raise_for_error(output)
    for line in clean_lines(output):
        text = line.strip()
        file = re.match(r"File, size: (\d+)b", text)
        if file:
            return {"type": "file", "size": int(file.group(1))}
        if text == "Directory":
            return {"type": "dir"}
        if text.startswith("Storage"):
            return {"type": "storage", "detail": text}
    raise CliError("unexpected answer to storage stat")


def storage_read(output: bytes) -> bytes:
    """``Size: n\\r\\n`` + exactly n bytes (+ ``\\r\\n``): the bytes, checked against n."""
    raise_for_error(output)
    match = re.search(rb"Size: (\d+)\r\n", output)
    if match is None:
        raise CliError("storage read answered without a Size line")
    size = int(match.group(1))
    data = output[match.end() : match.end() + size]
    if len(data) != size:
        raise CliError(f"storage read was cut short: {len(data)} of {size} bytes")
    return data


def ir_signals(output: bytes | str) -> list[dict[str, object]]:
    signals = []
    for line in clean_lines(output):
        match = IR_LINE.match(line.strip())
        if match:
            signals.append(
                {
                    "protocol": match.group("protocol"),
                    "address": int(match.group("address"), 16),
                    "command": int(match.group("command"), 16),
                    "repeat": bool(match.group("repeat")),
                }
            )
    return signals


SUBGHZ_NOISE = ("Listening at frequency", "Press CTRL+C", "Packets received")
PACKET_HEADER = re.compile(r"^\S+ \d+bit\b")


def subghz_packets(output: bytes | str) -> tuple[list[str], int | None]:
    """Decoded packets (each a protocol header line and its detail lines, joined with "; "),
    and the count the trailer reports (None if it is missing). "." lines are signal resets."""
    count = None
    packets: list[list[str]] = []
    for line in clean_lines(output):
        text = line.strip()
        trailer = PACKETS.search(text)
        if trailer:
            count = int(trailer.group("count"))
        elif text in (".", "") or text.startswith(SUBGHZ_NOISE):
            continue
        elif PACKET_HEADER.match(text) or not packets:
            packets.append([text])
        else:
            packets[-1].append(text)
    return ["; ".join(packet) for packet in packets], count


def nfc_protocols(output: bytes | str) -> list[str]:
    """Both firmware styles: ``Protocols detected: a, b`` (scanner) and ``Detected N
    protocols:`` followed by one name a line (detect)."""
    found: list[str] = []
    listing = False
    for line in clean_lines(output):
        text = line.strip()
        if text.lower().startswith("protocols detected:"):
            found += [p.strip() for p in text.split(":", 1)[1].split(",") if p.strip()]
            listing = False
        elif re.match(r"Detected \d+ protocols?:", text):
            listing = True
        elif listing and re.fullmatch(r"[A-Za-z0-9_\-]+", text):
            found.append(text)
        else:
            listing = False
    return list(dict.fromkeys(found))
