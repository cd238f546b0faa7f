"""A Flipper Zero USB CLI on a pseudo-terminal, byte for byte.

Why
---
The hub reaches a Flipper Zero through its USB serial CLI. Tests and demos must run with no
Flipper plugged in, and a hand-written fake that answers what the driver author *expects* proves
nothing. This emulator plays the device side of a real pty (``os.openpty``), so the hub's driver
talks to it through real pyserial, exactly as it talks to ``/dev/ttyACM0``, and it prints the
bytes the firmware prints: the banner, the echo, ``\\r\\n>: ``, ``%-30s: %s`` tables, red
"could not find command" lines, streaming commands stopped by ETX (0x03) with their trailers.

Sources of the formats
----------------------
``/work/shared/research/hardware.md`` section 1 (1.1-1.9), and the firmware files it cites
(flipperdevices/flipperzero-firmware), read for this module:

* shell: ``applications/services/cli/shell/cli_shell.c``, ``cli_shell_line.c``, ``cli_ansi.h``,
  ``cli_main_shell.c`` (banner), ``cli.c`` (``cli_print_usage``);
* core commands: ``applications/services/cli/cli_main_commands.c``; device/power tables:
  ``targets/f7/furi_hal/furi_hal_info.c``, ``furi_hal_power.c``; a real ``device_info``
  transcript of firmware 1.4.3 (millsymills-com/flipperzero-mcp golden fixture) for the values;
* ``applications/services/storage/storage_cli.c`` and the storage error texts
  (``filesystem_api_defines.c``; the official ``scripts/flipper/storage.py`` matches the same
  lower-case strings, e.g. ``file/dir not exist``, ``invalid name/path``);
* ``applications/main/subghz/subghz_cli.c`` (rx, tx, usage, valid ranges; the printed frequency
  is the CC1101's tuned one: 433920000 -> 433919830), ``lib/subghz/protocols/princeton.c``;
* ``applications/main/infrared/infrared_cli.c`` (note the firmware's ``"Receiving %s
  INFRARED..."`` with an empty ``%s`` prints TWO spaces: ``Receiving  INFRARED...``);
* NFC: the dev ``nfc detect`` (``Detected N protocols:``) and the newer ``nfc scanner``
  (``Protocols detected: a, b``) under ``applications/main/nfc/``;
* ``applications/services/loader/loader_cli.c``, ``applications/services/power/power_cli.c``.

The session model follows the firmware's USB VCP: the shell starts when the host opens the port
(the firmware waits for DTR; a pty has no DTR, so the emulator watches the slave node being opened
and closed with inotify, or the master's POLLHUP where inotify is missing) and stops when it is
closed. Every open therefore prints the banner and a prompt; pyserial flushes its input buffer in
``open()``, so the emulator waits ``settle`` seconds first (the firmware waits 33 ms for the same
reason; a real host that opens and writes at once races the banner the same way). That cable
side (the pty, seeing opens and closes, unplug/replug, the stable link) is
``firmware_bridges/emulators/usb_pty.py``, shared with the other USB boards' emulators; this
module is the firmware.

Not emulated (yet)
------------------
* Most of the protobuf RPC: ``start_rpc_session`` switches the session to varint-framed PB.Main
  (hardware.md 1.6) and answers the read-only requests (``rpc_system.c``: ping, device info,
  power info, protobuf version, get datetime, the audiovisual alert; ``rpc_storage.c``: list,
  read, stat, info, md5sum, timestamp) and stop_session; every other request that decodes gets
  ``ERROR_NOT_IMPLEMENTED`` (writes, reboot, apps, GUI, GPIO...). A request that does not decode
  closes the session as the firmware does (``rpc.c``, see ``_Port._rpc_request``). The wire code
  is the emulator's own (``flipper_pb``, not ``drivers.flipper_rpc``); the tests check both
  against the official generated messages. Over BLE the firmware also drops the link after a
  decode error; ``rpc_responder`` only answers and keeps the link.
* NFC comes in three styles (``FlipperState.nfc_style``): the dev firmware's ``nfc detect``,
  Momentum's one-shot ``nfc scanner``, and the newest official firmware's sub-shell
  (``shell``: ``nfc`` ignores its arguments and opens a shell with the prompt ``[nfc]>: ``,
  ``scanner``, ``help`` and ``exit``; its ``dump``, ``raw``, ``apdu``, ``mfu``, ``field`` and
  ``emulate`` are not emulated and answer as unknown commands, and ``scanner`` ignores keys).
* History (arrow keys), tab completion, Ctrl-W, and commands outside the list in
  ``FlipperEmulator.COMMANDS`` (gpio, i2c, top, ps, bt, rfid, ikey...) which answer as unknown;
  ``ir decode|universal`` and ``subghz chat|decode_raw|tx_from_file`` print their usage.
* Approximations, not read from a source: the ``nfc emulate`` text (the dev firmware's), the
  loader's ``open`` error texts, ``info power_debug`` values, an NFC sub-command usage of the
  dev firmware without ``nfc_cli_protocol_support_print_usage``'s lines, and the help listing's
  command order (sorted).

What a pyserial client sees when the device vanishes (``unplug()``; checked on Linux):
``read()`` raises ``serial.SerialException("device reports readiness to read but returned no
data (device disconnected or multiple access on port?)")`` because the kernel reports the hung-up
slave readable and ``os.read`` returns ``b""`` (EOF; a raw ``os.read`` on the slave fd returns
``b""``), ``write()`` raises ``serial.SerialException("write failed: [Errno 5] Input/output
error")``, and the ``/dev/pts/N`` node disappears at once, so reopening the old path fails.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

from firmware_bridges.emulators.flipper_pb import (
    PbError,
    Request,
    decode_request,
    pb_bytes,
    pb_file,
    pb_main,
    pb_str,
    pb_uint,
)
from firmware_bridges.emulators.usb_pty import PowerDown, PtyDevice, PtyPort

__all__ = [
    "PROMPT",
    "FlipperEmulator",
    "FlipperState",
    "ir_decoded",
    "main",
    "motd",
    "princeton_packet",
    "tuned_frequency",
]

# --- bytes of the shell (cli_ansi.h, cli_shell_line.c) ---------------------------------------

ANSI_RESET = "\x1b[0m"
ANSI_FG_RED = "\x1b[31m"
ANSI_FG_GREEN = "\x1b[32m"
ANSI_FG_YELLOW = "\x1b[33m"
ANSI_FG_BR_BLUE = "\x1b[94m"
ANSI_FG_BR_WHITE = "\x1b[97m"
ANSI_FLIPPER_BRAND_ORANGE = "\x1b[38;2;255;130;0m"

PROMPT = b"\r\n>: "
"""What the shell prints after every command, an empty line or ^C (``cli_shell_line_prompt``)."""

NFC_SHELL_PROMPT = f"\r\n[{ANSI_FG_GREEN}nfc{ANSI_RESET}]>: ".encode()
"""The NFC sub-shell's prompt: ``cli_shell_line_prompt`` with the prompt text ``nfc_cli.c`` sets
(``"[" ANSI_FG_GREEN "nfc" ANSI_RESET "]"``) before ``>: ``."""

ETX = 0x03
BELL = b"\x07"
BACKSPACE_ECHO = b"\x1b[1D\x1b[0K"
"""The firmware's answer to backspace/DEL at the end of the line: cursor left 1, erase to end."""

SUBGHZ_FREQUENCY_RANGE_STR = (
    "299999755...348000000 or 386999938...464000000 or 778999847...928000000"
)
SUBGHZ_RANGES = ((299999755, 348000000), (386999938, 464000000), (778999847, 928000000))
SUBGHZ_RX_USAGE = "<Frequency: in Hz> <Device: 0 - CC1101_INT, 1 - CC1101_EXT>"
SUBGHZ_TX_USAGE = (
    "<3 Byte Key: in hex> <Frequency: in Hz> <Te us> <Repeat count> "
    "<Device: 0 - CC1101_INT, 1 - CC1101_EXT>"
)

# Storage error texts (storage_error_get_desc -> filesystem_api_error_get_desc).
FSE_NOT_READY = "filesystem not ready"
FSE_EXIST = "file/dir already exist"
FSE_NOT_EXIST = "file/dir not exist"
FSE_DENIED = "access denied"
FSE_INVALID_NAME = "invalid name/path"
FSE_NOT_IMPLEMENTED = "function not implemented"

_BANNER_ART = (
    "              _.-------.._                    -,\r\n"
    '          .-"```"--..,,_/ /`-,               -,  \\ \r\n'
    "       .:\"          /:/  /'\\  \\     ,_...,  `. |  |\r\n"
    '      /       ,----/:/  /`\\ _\\~`_-"`     _;\r\n'
    "     '      / /`\"\"\"'\\ \\ \\.~`_-'      ,-\"'/ \r\n"
    "    |      | |  0    | | .-'      ,/`  /\r\n"
    '   |    ,..\\ \\     ,.-"`       ,/`    /\r\n'
    '  ;    :    `/`""\\`           ,/--==,/-----,\r\n'
    "  |    `-...|        -.___-Z:_______J...---;\r\n"
    "  :         `                           _-'\r\n"
    ' _L_  _     ___  ___  ___  ___  ____--"`___  _     ___\r\n'
    "| __|| |   |_ _|| _ \\| _ \\| __|| _ \\   / __|| |   |_ _|\r\n"
    "| _| | |__  | | |  _/|  _/| _| |   /  | (__ | |__  | |\r\n"
    "|_|  |____||___||_|  |_|  |___||_|_\\   \\___||____||___|\r\n"
)

_NFC_LOGO = (
    "                                     0000      \r\n"
    "                                     0000      \r\n"
    "                             000      0000     \r\n"
    "                             0000     00000    \r\n"
    "                    000      00000     0000    \r\n"
    "     0              0000      0000     00000   \r\n"
    "   000000           0000      00000     0000   \r\n"
    "   00000000          0000      0000     0000   \r\n"
    "   0000000000        0000      00000    0000   \r\n"
    "   0000 00000000     00000     00000    0000   \r\n"
    "   0000    0000000   00000     00000    0000   \r\n"
    "   0000      000000000000      0000     0000   \r\n"
    "   00000        000000000     00000     0000   \r\n"
    "     00           000000      0000     00000   \r\n"
    "                     00      00000     0000    \r\n"
    "                             0000     00000    \r\n"
    "                             000      0000     \r\n"
    "                                     0000      \r\n"
    "                                     0005      \r\n"
)
NFC_SHELL_MOTD = (
    ANSI_FG_BR_BLUE
    + "\r\n"
    + _NFC_LOGO
    + "\r\n"
    + ANSI_FG_BR_WHITE
    + "Welcome to NFC Command Line Interface!\r\n"
    + "Run `help` or `?` to list available commands\r\n"
    + ANSI_RESET
)
"""What the NFC sub-shell prints when it starts (``nfc_cli_shell_motd``), before its prompt."""

# Infrared address/command lengths in bits (infrared protocol tables), for ir_decoded().
_IR_BITS: dict[str, tuple[int, int]] = {
    "NEC": (8, 8),
    "NECext": (16, 16),
    "NEC42": (13, 8),
    "NEC42ext": (26, 16),
    "Samsung32": (8, 8),
    "RC5": (5, 6),
    "RC5X": (5, 7),
    "RC6": (8, 8),
    "SIRC": (5, 7),
    "SIRC15": (8, 7),
    "SIRC20": (13, 7),
    "Kaseikyo": (26, 10),
    "RCA": (4, 8),
    "Pioneer": (8, 8),
}


# --- helpers that format radio events the way the firmware does ------------------------------


def princeton_packet(key: int, te: int = 400, bits: int = 24) -> str:
    """A decoded Princeton packet as ``subghz rx`` prints it (``princeton.c`` get_string)."""
    data = key & ((1 << bits) - 1)
    reverse = int(f"{data:0{bits}b}"[::-1], 2)
    return (
        f"Princeton {bits}bit\r\n"
        f"Key:0x{data & 0xFFFFFF:08X}\r\n"
        f"Yek:0x{reverse:08X}\r\n"
        f"Sn:0x{data >> 4:05X} Btn:{data & 0xF:01X}\r\n"
        f"Te:{te}us\r\n"
    )


def ir_decoded(protocol: str, address: int, command: int, repeat: bool = False) -> str:
    """A decoded IR line as ``ir rx`` prints it, without its CR LF: ``NEC, A:0x04, C:0x08``.

    Widths are ``ceil(bits / 4)`` hex digits of the protocol's address and command lengths.
    """
    address_bits, command_bits = _IR_BITS.get(protocol, (32, 32))
    aw, cw = math.ceil(address_bits / 4), math.ceil(command_bits / 4)
    return f"{protocol}, A:0x{address:0{aw}X}, C:0x{command:0{cw}X}{' R' if repeat else ''}"


def tuned_frequency(frequency: int) -> int:
    """The frequency the CC1101 really tunes to (26 MHz quartz, 2^16 divider): what rx prints."""
    return (frequency * 0x10000 // 26_000_000) * 26_000_000 // 0x10000


def _frequency_valid(frequency: int) -> bool:
    return any(low <= frequency <= high for low, high in SUBGHZ_RANGES)


# --- the device's data -------------------------------------------------------------------------

_GARAGE_SUB = (
    b"Filetype: Flipper SubGhz Key File\n"
    b"Version: 1\n"
    b"Frequency: 433920000\n"
    b"Preset: FuriHalSubGhzPresetOok650Async\n"
    b"Protocol: Princeton\n"
    b"Bit: 24\n"
    b"Key: 00 00 00 00 00 35 F0 C8\n"
    b"TE: 400\n"
)
_TV_IR = (
    b"Filetype: IR signals file\n"
    b"Version: 1\n"
    b"# \n"
    b"name: Power\n"
    b"type: parsed\n"
    b"protocol: NEC\n"
    b"address: 04 00 00 00\n"
    b"command: 08 00 00 00\n"
    b"# \n"
    b"name: Vol_up\n"
    b"type: parsed\n"
    b"protocol: NEC\n"
    b"address: 04 00 00 00\n"
    b"command: 02 00 00 00\n"
)
_CARD_NFC = (
    b"Filetype: Flipper NFC device\n"
    b"Version: 4\n"
    b"# Device type can be ISO14443-3A, ISO14443-3B, ISO14443-4A, ISO14443-4B, ISO15693-3, "
    b"FeliCa, NTAG/Ultralight, Mifare Classic, Mifare DESFire, SLIX, ST25TB\n"
    b"Device type: NTAG/Ultralight\n"
    b"# UID is common for all formats\n"
    b"UID: 04 A2 3B 1C 5D 80 00\n"
    b"# ISO14443-3A specific data\n"
    b"ATQA: 00 44\n"
    b"SAK: 00\n"
)


def _default_files() -> dict[str, bytes | None]:
    """Internal flash and SD card as a Flipper ships them, plus a few captures (None = dir)."""
    return {
        "/int": None,
        "/int/.bt.settings": bytes(range(36)),
        "/int/.desktop.settings": bytes(68),
        "/int/.notification.settings": bytes.fromhex("0200000000000000cdcc4c3f0000803f01"),
        "/int/.region_data": bytes.fromhex("0a025553120a08a0d6d89101109cbab5"),
        "/ext": None,
        "/ext/subghz": None,
        "/ext/subghz/garage.sub": _GARAGE_SUB,
        "/ext/infrared": None,
        "/ext/infrared/tv.ir": _TV_IR,
        "/ext/nfc": None,
        "/ext/nfc/card.nfc": _CARD_NFC,
        "/ext/lfrfid": None,
        "/ext/badusb": None,
        "/ext/apps": None,
        "/ext/apps_data": None,
    }


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0]


@dataclass
class FlipperState:
    """Everything the emulated Flipper knows; a driver test reads and edits it directly.

    Values default to a real firmware-1.4.3 unit (the golden ``device_info`` transcript). The radio
    queues are consumed by the streaming commands, one entry per ``event_interval`` of the
    emulator; tests may append to them at any time, also while a command streams.
    """

    # identity (furi_hal_version / furi_hal_info)
    name: str = "Unyana"
    hardware_model: str = "Flipper Zero"
    hardware_uid: str = "3288010126E18000"
    hardware_otp_ver: int = 2
    hardware_timestamp: int = 1644810867
    hardware_ver: int = 12
    hardware_target: int = 7
    hardware_body: int = 9
    hardware_connect: int = 6
    hardware_display: int = 1
    hardware_color: int = 2
    hardware_region: int = 2
    hardware_region_provisioned: str = "US"
    radio_ble_mac: str = "32880126E180"
    # firmware
    firmware_version: str = "1.4.3"
    firmware_branch: str = "1.4.3"
    firmware_branch_num: str = "0"
    firmware_commit: str = "8622f1a2"
    firmware_dirty: bool = False
    firmware_build_date: str = "05-12-2025"
    firmware_target: int = 7
    firmware_api: tuple[int, int] = (87, 1)
    firmware_origin_fork: str = "Official"
    firmware_origin_git: str = "https://github.com/flipperdevices/flipperzero-firmware"
    protobuf_version: tuple[int, int] = (0, 25)
    # power (furi_hal_power_info_get): %, charging|charged|discharging, mV, mA, degC, %, mAh
    charge_level: int = 87
    charge_state: Literal["charging", "charged", "discharging"] = "discharging"
    charge_voltage_limit: int = 4208
    battery_voltage: int = 4021
    battery_current: int = -112
    battery_temp: int = 27
    battery_health: int = 100
    capacity_remain: int = 1826
    capacity_full: int = 2100
    capacity_design: int = 2100
    # system flags and heap (`free`)
    debug: bool = False
    stealth_mode: bool = False
    vibro_enabled: bool = True
    heap_free: int = 136248
    heap_total: int = 189536
    heap_minimum: int = 128040
    heap_max_block: int = 131072
    pool_free: int = 18432
    pool_max_block: int = 12288
    uptime_offset: float = 0.0
    """Seconds added to the emulator's own uptime (``uptime``)."""
    clock_offset: timedelta = field(default_factory=timedelta)
    """Added to the host's local time for ``date``; ``date <new>`` sets it."""
    # storage: absolute path -> bytes, or None for a directory; insertion order = listing order
    files: dict[str, bytes | None] = field(default_factory=_default_files)
    sd_card: bool = True
    int_total_bytes: int = 266240
    sd_total_kib: int = 62367744
    sd_label: str = "FLIPPER SD"
    sd_fs_type: str = "FAT32"
    sd_id: tuple[int, str, str, int, int, int, int, int] = (
        0x03,
        "SD",
        "SC64G",
        8,
        0,
        0x1A2B3C4D,
        7,
        2022,
    )
    """manufacturer id, OEM, product, revision major/minor, serial, month, year."""
    # loader
    apps: list[str] = field(
        default_factory=lambda: [
            "Sub-GHz",
            "125 kHz RFID",
            "NFC",
            "Infrared",
            "GPIO",
            "iButton",
            "Bad USB",
            "U2F",
        ]
    )
    settings_apps: list[str] = field(
        default_factory=lambda: [
            "Bluetooth",
            "LCD and Notifications",
            "Storage",
            "Power",
            "Desktop",
            "Passport",
            "System",
            "About",
        ]
    )
    running_app: str | None = None
    """An open application blocks Sub-GHz/IR/NFC/vibro/led like the real loader lock does."""
    # radios
    external_cc1101: bool = False
    nfc_style: Literal["detect", "scanner", "shell"] = "scanner"
    """``detect``: dev firmware (``nfc detect``); ``scanner``: firmware with a one-shot
    ``nfc scanner`` (Momentum); ``shell``: the newest official firmware, where ``nfc`` opens an
    NFC sub-shell (prompt ``[nfc]>: ``) that has ``scanner`` and ``exit``."""
    subghz_packets: deque[str] = field(
        default_factory=lambda: deque([princeton_packet(0x35F0C8), princeton_packet(0x35F0C8)])
    )
    """Decoded packet texts printed verbatim by ``subghz rx``; an entry ``"."`` is a signal reset
    (printed, not counted)."""
    ir_signals: deque[str] = field(
        default_factory=lambda: deque(["NEC, A:0x04, C:0x08", "NEC, A:0x04, C:0x08 R"])
    )
    """Lines printed by ``ir rx``; the emulator adds the CR LF."""
    nfc_tags: deque[list[str]] = field(default_factory=lambda: deque([["iso14443-3a", "mfu"]]))
    """Each entry is one detection: the protocol names the scanner reports."""
    # what the "hardware" did
    vibro: bool = False
    vibro_log: list[bool] = field(default_factory=list)
    alerts: int = 0  # RPC audiovisual alerts played (beep, blink, vibrate)
    """Every ``vibro 0|1`` that reached the motor (True = on): assert "find my flipper" here."""
    leds: dict[str, int] = field(default_factory=lambda: {"r": 0, "g": 0, "b": 0, "bl": 0})
    led_log: list[tuple[str, int]] = field(default_factory=list)
    transmit_log: list[str] = field(default_factory=list)
    """Every command that made the device TRANSMIT (subghz tx, ir tx, nfc emulate)."""
    power_log: list[str] = field(default_factory=list)
    """``off``, ``reboot``, ``reboot2dfu``, ``5v 0|1``."""
    otg_5v: bool = False

    # --- tables ---

    def device_info(self, sep: str = "_") -> list[tuple[str, str]]:
        """``furi_hal_info_get``: ``_`` keys (``device_info``, ``!``) or ``.`` (``info device``)."""
        dot = sep == "."
        rows: list[tuple[tuple[str, ...], object]] = []

        def add(value: object, *parts: str) -> None:
            rows.append((parts, value))

        def flag(value: bool) -> str:
            return "true" if value else "false"

        if dot:
            add(3, "format", "major")
            add(3, "format", "minor")
        else:
            add(2, "device", "info", "major")
            add(4, "device", "info", "minor")
        add(self.hardware_model, "hardware", "model")
        add(self.hardware_uid, "hardware", "uid")
        add(self.hardware_otp_ver, "hardware", "otp", "ver")
        add(self.hardware_timestamp, "hardware", "timestamp")
        add(self.hardware_ver, "hardware", "ver")
        add(self.hardware_target, "hardware", "target")
        add(self.hardware_body, "hardware", "body")
        add(self.hardware_connect, "hardware", "connect")
        add(self.hardware_display, "hardware", "display")
        add(self.hardware_color, "hardware", "color")
        if dot:
            add(self.hardware_region, "hardware", "region", "builtin")
        else:
            add(self.hardware_region, "hardware", "region")
        add(self.hardware_region_provisioned, "hardware", "region", "provisioned")
        add(self.name, "hardware", "name")
        add(self.firmware_commit, "firmware", "commit", *(("hash",) if dot else ()))
        add(flag(self.firmware_dirty), "firmware", "commit", "dirty")
        add(self.firmware_branch, "firmware", "branch", *(("name",) if dot else ()))
        add(self.firmware_branch_num, "firmware", "branch", "num")
        add(self.firmware_version, "firmware", "version")
        add(self.firmware_build_date, "firmware", "build", "date")
        add(self.firmware_target, "firmware", "target")
        add(self.firmware_api[0], "firmware", "api", "major")
        add(self.firmware_api[1], "firmware", "api", "minor")
        add(self.firmware_origin_fork, "firmware", "origin", "fork")
        add(self.firmware_origin_git, "firmware", "origin", "git")
        add("true", "radio", "alive")
        add("Stack", "radio", "mode")
        fus: tuple[tuple[str, object], ...] = (
            ("major", 1),
            ("minor", 2),
            ("sub", 0),
            ("sram2b", "16K"),
            ("sram2a", "0K"),
            ("flash", "24K"),
        )
        for part, value in fus:
            add(value, "radio", "fus", part)
        stack: tuple[tuple[str, object], ...] = (
            ("type", 3),
            ("major", 1),
            ("minor", 20),
            ("sub", 0),
            ("branch", 0),
            ("release", 2),
            ("sram2b", "19K"),
            ("sram2a", "14K"),
            ("sram1", "0K"),
            ("flash", "116K"),
        )
        for part, value in stack:
            add(value, "radio", "stack", part)
        add(self.radio_ble_mac, "radio", "ble", "mac")
        if dot:
            add(10, "enclave", "keys", "valid")
        else:
            add(10, "enclave", "valid", "keys")
        add("true", "enclave", "valid")
        add(int(self.debug), "system", "debug")
        add(0, "system", "lock")
        add(0, "system", "orient")
        add(0, "system", "sleep", "legacy")
        add(int(self.stealth_mode), "system", "stealth")
        add(0, "system", "heap", "track")
        add(0, "system", "boot")
        add(0, "system", "locale", "time")
        add(0, "system", "locale", "date")
        add(0, "system", "locale", "unit")
        add(0, "system", "log", "level")
        add(self.protobuf_version[0], "protobuf", "version", "major")
        add(self.protobuf_version[1], "protobuf", "version", "minor")
        return [(sep.join(parts), str(value)) for parts, value in rows]

    def power_info(self, sep: str = ".") -> list[tuple[str, str]]:
        """``furi_hal_power_info_get``: what ``info power`` prints (with ``.`` keys)."""
        head = ("format",) if sep == "." else ("power", "info")
        rows: list[tuple[tuple[str, ...], object]] = [
            ((*head, "major"), 2),
            ((*head, "minor"), 1),
            (("charge", "level"), self.charge_level),
            (("charge", "state"), self.charge_state),
            (("charge", "voltage", "limit"), self.charge_voltage_limit),
            (("battery", "voltage"), self.battery_voltage),
            (("battery", "current"), self.battery_current),
            (("battery", "temp"), self.battery_temp),
            (("battery", "health"), self.battery_health),
            (("capacity", "remain"), self.capacity_remain),
            (("capacity", "full"), self.capacity_full),
            (("capacity", "design"), self.capacity_design),
        ]
        return [(sep.join(parts), str(value)) for parts, value in rows]

    # --- filesystem ---

    def put_file(self, path: str, data: bytes) -> None:
        """Create or replace a file, creating missing parent directories."""
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            directory = "/" + "/".join(parts[:depth])
            self.files.setdefault(directory, None)
        self.files[path] = bytes(data)

    def children(self, directory: str) -> list[str]:
        """Direct children of a directory, in listing order."""
        return [p for p in self.files if p != directory and _parent(p) == directory]

    def used_bytes(self, root: str) -> int:
        return sum(len(d) for p, d in self.files.items() if d is not None and p.startswith(root))

    def int_free_bytes(self) -> int:
        """LittleFS: 4 KiB blocks, one at least per entry, two for the superblock."""
        blocks = sum(
            max(1, math.ceil(len(d or b"") / 4096))
            for p, d in self.files.items()
            if p.startswith("/int/")
        )
        return max(0, self.int_total_bytes - (blocks + 2) * 4096)

    def sd_free_kib(self) -> int:
        """FAT32 with 32 KiB clusters, one at least per entry."""
        clusters = sum(
            max(1, math.ceil(len(d or b"") / 32768))
            for p, d in self.files.items()
            if p.startswith("/ext/")
        )
        return max(0, self.sd_total_kib - clusters * 32)


# --- the emulator ------------------------------------------------------------------------------


class _FsError(Exception):
    def __init__(self, desc: str) -> None:
        super().__init__(desc)
        self.desc = desc


def motd(state: FlipperState) -> bytes:
    """The banner a new session prints before its first prompt (``cli_main_motd``)."""
    text = (
        ANSI_FLIPPER_BRAND_ORANGE
        + "\r\n"
        + _BANNER_ART
        + "\r\n"
        + ANSI_FG_BR_WHITE
        + "Welcome to Flipper Zero Command Line Interface!\r\n"
        "Read the manual: https://docs.flipper.net/development/cli\r\n"
        "Run `help` or `?` to list available commands\r\n"
        "\r\n" + ANSI_RESET
    )
    dirty = "-dirty" if state.firmware_dirty else ""
    text += (
        f"Firmware version: {state.firmware_branch} {state.firmware_version} "
        f"({state.firmware_commit}{dirty} built on {state.firmware_build_date})\r\n"
    )
    return text.encode()


def _read_word(args: str) -> tuple[str, str]:
    """``args_read_string_and_trim``: first space-separated word, and the trimmed rest."""
    space = args.find(" ")
    if space < 0:
        return args, ""
    return args[:space], args[space + 1 :].strip(" \r\n\t")


def _read_quoted(args: str) -> tuple[str, str]:
    """``args_read_probably_quoted_string_and_trim``."""
    if args.startswith('"'):
        end = args.find('"', 1)
        if end > 0:
            return args[1:end], args[end + 1 :].strip(" \r\n\t")
    return _read_word(args)


def _scan_uints(text: str, count: int, base: int = 10) -> list[int]:
    """Like ``sscanf("%lu %lu ...")``: the values parsed before the first failure."""
    return _scan(text, (base,) * count)


def _scan(text: str, bases: Sequence[int]) -> list[int]:
    """``sscanf`` with ``%lu`` (base 10) / ``%lx`` (base 16) conversions: the values parsed
    before the first failure (their count is sscanf's return value)."""
    values: list[int] = []
    rest = text
    for base in bases:
        digits = "0123456789abcdefABCDEF" if base == 16 else "0123456789"
        rest = rest.lstrip(" \t\r\n")
        if base == 16 and rest[:2].lower() == "0x":
            rest = rest[2:]
        end = 0
        while end < len(rest) and rest[end] in digits:
            end += 1
        if end == 0:
            break
        values.append(int(rest[:end], base) & 0xFFFFFFFF)
        rest = rest[end:]
    return values


def _usage(cmd: str, usage: str, arg: str) -> str:
    """``cli_print_usage``."""
    return f"{cmd}: illegal option -- {arg}\r\nusage: {cmd} {usage}"


# --- protobuf RPC (flipper.proto, system.proto, storage.proto; hardware.md 1.6) ---------------
# The wire code is the emulator's own (``flipper_pb``), deliberately NOT the driver's, so a bug in
# one is not hidden by the same bug in the other.

RPC_READ_CHUNK = 512
"""storage.options: File.data max_size."""
RPC_LIST_CHUNK = 8
"""storage.options: ListResponse.file max_count."""
RPC_OK = 0
RPC_ERROR_DECODE = 2
RPC_ERROR_NOT_IMPLEMENTED = 3
RPC_ERROR_INVALID_PARAMETERS = 15
_RPC_FS_STATUS = {
    FSE_NOT_READY: 5,
    FSE_EXIST: 6,
    FSE_NOT_EXIST: 7,
    FSE_DENIED: 9,
    FSE_INVALID_NAME: 10,
    FSE_NOT_IMPLEMENTED: 12,
}
# PB.Main content fields used here
_PB_EMPTY, _PB_STOP = 4, 19
_PB_PING_REQ, _PB_PING_RESP = 5, 6
_PB_LIST_REQ, _PB_LIST_RESP = 7, 8
_PB_READ_REQ, _PB_READ_RESP = 9, 10
_PB_MD5_REQ, _PB_MD5_RESP = 14, 15
_PB_STAT_REQ, _PB_STAT_RESP = 24, 25
_PB_FS_INFO_REQ, _PB_FS_INFO_RESP = 28, 29
_PB_INFO_REQ, _PB_INFO_RESP = 32, 33
_PB_DATETIME_REQ, _PB_DATETIME_RESP = 35, 36
_PB_ALERT_REQ = 38
_PB_VERSION_REQ, _PB_VERSION_RESP = 39, 40
_PB_POWER_REQ, _PB_POWER_RESP = 44, 45
_PB_TIMESTAMP_REQ, _PB_TIMESTAMP_RESP = 59, 60


Handler = Callable[["_Port", str], None]


class _Port(PtyPort):
    """The Flipper's shell on one plug-in of the USB cable (the pty, the host's open and close,
    unplugging and the bytes in and out are ``usb_pty.PtyPort``'s, shared with other boards)."""

    NAME = "flipper-emulator"

    def __init__(self, emulator: FlipperEmulator) -> None:
        super().__init__(emulator)
        self.emu = emulator
        self.state = emulator.state
        self.line = ""
        self.prompt = PROMPT
        """The prompt of the shell reading lines now (the main one or the NFC sub-shell)."""
        self.commands: dict[str, tuple[Handler, bool]] = FlipperEmulator.COMMANDS
        self.leaving = False
        """Set by a sub-shell's ``exit``: the shell stops without printing its prompt."""

    def wait_etx(self, seconds: float) -> bool:
        """What streaming commands do between events: True if the host sent ETX (0x03).

        Like ``cli_is_pipe_broken_or_is_etx_next_char``, every other byte is consumed and lost;
        bytes after the ETX stay for the shell.
        """
        deadline = time.monotonic() + seconds
        while True:
            byte = self.getc(max(0.0, deadline - time.monotonic()))
            if byte is None:
                return False
            if byte == ETX:
                return True

    # --- the shell ---

    def _session(self) -> None:
        self.line = ""
        self.out(motd(self.state) + PROMPT)
        while True:
            byte = self.getc(None)
            if byte is None:  # pragma: no cover - getc(None) always returns a byte
                continue
            self._key(byte)

    def _key(self, byte: int) -> None:
        if byte == ETX:
            self.line = ""
            self.out(b"^C" + self.prompt)
        elif byte == 0x0D:
            self._enter()
        elif byte in (0x08, 0x7F):
            if not self.line:
                self.out(BELL)
            else:
                self.line = self.line[:-1]
                self.out(BACKSPACE_ECHO)
        elif byte == 0x0C:
            column = len(">: ") + len(self.line) + 1
            self.out(f"\x1b[2J\x1b[3J\x1b[1;1H>: {self.line}\x1b[{column}G")
        elif byte == 0x1B:
            self._skip_escape()
        elif 0x20 <= byte < 0x7F:
            self.line += chr(byte)
            self.out(bytes([byte]))
        # LF, TAB, other controls and bytes >= 0x80: no binding in the line editor, ignored.

    def _skip_escape(self) -> None:
        """ANSI sequences (arrows, Home/End) are parsed and, here, ignored (no history)."""
        byte = self.getc(0.01)
        if byte in (ord("["), ord("O")):
            while True:
                byte = self.getc(0.01)
                if byte is None or 0x40 <= byte <= 0x7E:
                    return

    def _enter(self) -> None:
        command = self.line.strip(" \r\n\t")
        self.line = ""
        if not command:
            self.out(self.prompt)
            return
        garbage, mute, stall = self.emu._take_faults()
        self.out(b"\r\n")
        self.emu._record_sent(command)
        if garbage:
            self.out(garbage)
        if stall is not None:
            self._stall(recover_on_etx=stall)
        else:
            self.execute(command)
        if not mute and not self.leaving:
            self.out(self.prompt)

    def _stall(self, recover_on_etx: bool) -> None:
        while True:
            byte = self.getc(None)
            if recover_on_etx and byte == ETX:
                return

    def execute(self, command: str) -> None:
        space = command.find(" ")
        name = command if space < 0 else command[:space]
        args = "" if space < 0 else command[space + 1 :]
        entry = self.commands.get(name)
        if entry is None:
            self.out(f"{ANSI_FG_RED}could not find command `{name}`, try `help`{ANSI_RESET}")
            return
        handler, parallel_safe = entry
        if not parallel_safe and self.state.running_app is not None:
            self.out(
                f"{ANSI_FG_RED}this command cannot be run while an application is open{ANSI_RESET}"
            )
            return
        handler(self, args)

    # --- core commands (cli_main_commands.c, cli_shell.c) ---

    def cmd_help(self, args: str) -> None:
        text = "Available commands:\r\n" + ANSI_FG_GREEN
        for index, name in enumerate(sorted(self.commands)):
            text += f"{name:<30}"
            if index % 3 == 2:
                text += "\r\n"
        text += ANSI_RESET + "\r\nFind out more: https://docs.flipper.net/development/cli"
        self.out(text)

    def _table(self, rows: list[tuple[str, str]]) -> None:
        self.out("".join(f"{key:<30}: {value}\r\n" for key, value in rows))

    def cmd_device_info(self, args: str) -> None:
        self._table(self.state.device_info("_"))

    def cmd_info(self, args: str) -> None:
        if args == "device":
            self._table(self.state.device_info("."))
        elif args == "power":
            self._table(self.state.power_info("."))
        elif args == "power_debug":
            voltage, current = self.state.battery_voltage, self.state.battery_current
            rows = [
                ("format.major", "1"),
                ("format.minor", "0"),
                ("charger.vbus", "0"),
                ("charger.vsys", str(voltage + 40)),
                ("charger.vbat", str(voltage)),
                ("charger.vreg", "4208"),
                ("charger.current", "0"),
                ("charger.ntc", "53400"),
                ("gauge.capacity.full", str(self.state.capacity_full)),
                ("gauge.capacity.design", str(self.state.capacity_design)),
                ("gauge.capacity.remain", str(self.state.capacity_remain)),
                ("gauge.state.charge", str(self.state.charge_level)),
                ("gauge.state.health", str(self.state.battery_health)),
                ("gauge.voltage", str(voltage)),
                ("gauge.current", str(current)),
                ("gauge.temperature", str(self.state.battery_temp)),
            ]
            self._table(rows)
        else:
            self.out(_usage("info", "<device|power|power_debug>", args))

    def cmd_uptime(self, args: str) -> None:
        seconds = int(self.emu.uptime())
        self.out(f"Uptime: {seconds // 3600}h{seconds // 60 % 60}m{seconds % 60}s")

    def cmd_date(self, args: str) -> None:
        if args:
            values = _scan_uints(args.replace("-", " ").replace(":", " "), 7)
            if len(values) != 7:
                self.out(
                    "Invalid datetime format, use `%Y-%m-%d %H:%M:%S %u`. "
                    f"sscanf {len(values)} {args}"
                )
                return
            year, month, day, hour, minute, second, weekday = values
            try:
                wanted = datetime(year, month, day, hour, minute, second)
            except ValueError:
                self.out("Invalid datetime data")
                return
            if not 1 <= weekday <= 7:
                self.out("Invalid datetime data")
                return
            self.state.clock_offset = wanted - datetime.now()
            self.out("New datetime is: " + self._now(weekday))
        else:
            self.out(self._now(None))

    def _now(self, weekday: int | None) -> str:
        now = datetime.now() + self.state.clock_offset
        day = now.isoweekday() if weekday is None else weekday
        return now.strftime("%Y-%m-%d %H:%M:%S") + f" {day}"

    def cmd_free(self, args: str) -> None:
        s = self.state
        self.out(
            f"Free heap size: {s.heap_free}\r\n"
            f"Total heap size: {s.heap_total}\r\n"
            f"Minimum heap size: {s.heap_minimum}\r\n"
            f"Maximum heap block: {s.heap_max_block}\r\n"
            f"Pool free: {s.pool_free}\r\n"
            f"Maximum pool block: {s.pool_max_block}\r\n"
        )

    def cmd_echo(self, args: str) -> None:
        while True:
            byte = self.getc(None)
            if byte is None or byte == ETX:
                return
            self.out(bytes([byte]))

    def cmd_log(self, args: str) -> None:
        levels = ("default", "none", "error", "warn", "info", "debug", "trace")
        if args and args not in levels:
            self.out(
                "<log> — start logging using the current level from the system settings\r\n"
                "<log error> — only critical errors and other important messages\r\n"
                "<log warn> — non-critical errors and warnings including <log error>\r\n"
                "<log info> — non-critical information including <log warn>\r\n"
                "<log default> — the default system log level (equivalent to <log info>)\r\n"
                "<log debug> — debug information including <log info> "
                "(may impact system performance)\r\n"
                "<log trace> — system traces including <log debug> "
                "(may impact system performance)\r\n"
            )
            return
        self.out(f"Current log level: {args or 'default'}\r\n")
        self.out("Use <log ?> to list available log levels\r\nPress CTRL+C to stop...\r\n")
        while not self.wait_etx(0.1):
            pass

    def cmd_vibro(self, args: str) -> None:
        if args == "0":
            self.state.vibro = False
            self.state.vibro_log.append(False)
        elif args == "1":
            if self.state.stealth_mode:
                self.out("Flipper is in stealth mode. Unmute the device to control vibration.")
            elif not self.state.vibro_enabled:
                self.out("Vibro is disabled in settings. Enable it to control vibration.")
            else:
                self.state.vibro = True
                self.state.vibro_log.append(True)
        else:
            self.out(_usage("vibro", "<1|0>", args))

    def cmd_led(self, args: str) -> None:
        usage = "<r|g|b|bl> <0-255>"
        space = args.find(" ")
        if space < 0:
            self.out(_usage("led", usage, args))
            return
        light, value_text = args[:space], args[space:].strip(" \r\n\t")
        if light not in ("r", "g", "b", "bl"):
            self.out(_usage("led", usage, value_text))
            return
        if not value_text.isdigit() or int(value_text) >= 256:
            self.out(_usage("led", usage, value_text))
            return
        self.state.leds[light] = int(value_text)
        self.state.led_log.append((light, int(value_text)))

    def cmd_power(self, args: str) -> None:
        sub, rest = _read_word(args)
        if sub == "off":
            self.state.power_log.append("off")
            self.out("It is now safe to disconnect USB from the flipper\r\n")
            self.closing.wait(0.666)  # furi_delay_ms(666), then the power goes
            raise PowerDown(replug=False)
        if sub in ("reboot", "reboot2dfu"):
            self.state.power_log.append(sub)
            raise PowerDown(replug=sub == "reboot")
        if sub == "5v":
            if rest in ("0", "1"):
                self.state.otg_5v = rest == "1"
                self.state.power_log.append(f"5v {rest}")
            else:
                self.out(_usage("power_otg", "<1|0>", rest))
            return
        if sub == "3v3" and self.state.debug:
            if rest not in ("0", "1"):
                self.out(_usage("power_ext", "<1|0>", rest))
            return
        text = (
            "Usage:\r\npower <cmd> <args>\r\nCmd list:\r\n"
            "\toff\t - shutdown power\r\n\treboot\t - reboot\r\n"
            "\treboot2dfu\t - reboot to dfu bootloader\r\n"
            "\t5v <0 or 1>\t - enable or disable 5v ext\r\n"
        )
        if self.state.debug:
            text += "\t3v3 <0 or 1>\t - enable or disable 3v3 ext\r\n"
        self.out(text)

    # --- loader (loader_cli.c) ---

    def cmd_loader(self, args: str) -> None:
        sub, rest = _read_word(args)
        state = self.state
        if sub == "list":
            text = "Apps:\r\n" + "".join(f"\t{a}\r\n" for a in state.apps)
            text += "Settings:\r\n" + "".join(f"\t{a}\r\n" for a in state.settings_apps)
            self.out(text)
        elif sub == "info":
            if state.running_app is None:
                self.out("No application is running\r\n")
            else:
                self.out(f'Application "{state.running_app}" is running\r\n')
        elif sub == "open":
            name, _ = _read_quoted(rest)
            if not name:
                self.out("No application provided\r\n")
            elif state.running_app is not None:
                self.out(f'Loader is locked, please close the "{state.running_app}" first\r\n')
            elif name not in state.apps and name not in state.settings_apps:
                self.out(f'Application "{name}" not found\r\n')
            else:
                state.running_app = name
        elif sub == "close":
            if state.running_app is None:
                self.out("No application is running\r\n")
            else:
                self.out(f'Application "{state.running_app}" was closed\r\n')
                state.running_app = None
        else:
            self.out(
                "Usage:\r\nloader <cmd> <args>\r\nCmd list:\r\n"
                "\tlist\t - List available applications\r\n"
                "\topen <Application Name:string>\t - Open application by name\r\n"
                "\tinfo\t - Show loader state\r\n"
                "\tclose\t - Close the current application\r\n"
                "\tsignal <signal:number> [arg:hex]\t - Send a signal with an optional argument"
                "\r\n"
            )

    # --- storage (storage_cli.c) ---

    def _storage_usage(self) -> None:
        self.out(
            "Usage:\r\nstorage <cmd> <path> <args>\r\n"
            "The path must start with /int or /ext\r\nCmd list:\r\n"
            "\tinfo\t - get FS info\r\n"
            "\tformat\t - format filesystem\r\n"
            "\tlist\t - list files and dirs\r\n"
            "\ttree\t - list files and dirs, recursive\r\n"
            "\tremove\t - delete the file or directory\r\n"
            "\tread\t - read text from file and print file size and content to cli\r\n"
            "\tread_chunks\t - read data from file and print file size and content to cli, "
            "<args> should contain how many bytes you want to read in block\r\n"
            "\twrite\t - read text from cli and append it to file, stops by ctrl+c\r\n"
            "\twrite_chunk\t - read data from cli and append it to file, "
            "<args> should contain how many bytes you want to write\r\n"
            "\tcopy\t - copy file to new file, <args> must contain new path\r\n"
            "\trename\t - move file to new file, <args> must contain new path\r\n"
            "\tmkdir\t - creates a new directory\r\n"
            "\tmd5\t - md5 hash of the file\r\n"
            "\tstat\t - info about file or dir\r\n"
            "\ttimestamp\t - last modification timestamp\r\n"
        )

    def _resolve(self, path: str) -> str:
        """Storage path check: /int, /ext or /any (-> /ext with an SD card), no trailing slash."""
        if len(path) > 1:
            path = path.rstrip("/")
        root = path[:4]
        if root not in ("/int", "/ext", "/any") or (len(path) > 4 and path[4] != "/"):
            raise _FsError(FSE_INVALID_NAME)
        if root == "/any":
            path = ("/ext" if self.state.sd_card else "/int") + path[4:]
        if path.startswith("/ext") and not self.state.sd_card:
            raise _FsError(FSE_NOT_READY)
        return path

    def _file(self, path: str) -> tuple[str, bytes]:
        resolved = self._resolve(path)
        if resolved not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        data = self.state.files[resolved]
        if data is None:
            raise _FsError(FSE_NOT_EXIST)
        return resolved, data

    def _error(self, exc: _FsError) -> None:
        self.out(f"Storage error: {exc.desc}\r\n")

    def cmd_storage(self, args: str) -> None:
        sub, rest = _read_word(args)
        if not sub:
            self._storage_usage()
            return
        path, rest = _read_quoted(rest)
        if not path:
            self._storage_usage()
            return
        handlers: dict[str, Callable[[str, str], None]] = {
            "info": self._storage_info,
            "format": self._storage_format,
            "list": self._storage_list,
            "tree": self._storage_tree,
            "read": self._storage_read,
            "read_chunks": self._storage_read_chunks,
            "write": self._storage_write,
            "write_chunk": self._storage_write_chunk,
            "copy": self._storage_copy,
            "remove": self._storage_remove,
            "rename": self._storage_rename,
            "mkdir": self._storage_mkdir,
            "md5": self._storage_md5,
            "stat": self._storage_stat,
            "timestamp": self._storage_timestamp,
        }
        handler = handlers.get(sub)
        if handler is None:
            self._storage_usage()
            return
        try:
            handler(path, rest)
        except _FsError as exc:
            self._error(exc)

    def _storage_info(self, path: str, rest: str) -> None:
        s = self.state
        if path == "/int":
            self.out(
                f"Label: {s.name}\r\nType: LittleFS\r\n{s.int_total_bytes // 1024}KiB total\r\n"
                f"{s.int_free_bytes() // 1024}KiB free\r\n"
            )
        elif path == "/ext":
            if not s.sd_card:
                raise _FsError(FSE_NOT_READY)
            mid, oem, product, major, minor, serial, month, year = s.sd_id
            self.out(
                f"Label: {s.sd_label}\r\nType: {s.sd_fs_type}\r\n{s.sd_total_kib}KiB total\r\n"
                f"{s.sd_free_kib()}KiB free\r\n{mid:02x}{oem} {product} v{major}.{minor}\r\n"
                f"SN:{serial:04x} {month:02d}/{year}\r\n"
            )
        else:
            self._storage_usage()

    def _storage_format(self, path: str, rest: str) -> None:
        if path == "/int":
            raise _FsError(FSE_NOT_IMPLEMENTED)
        if path != "/ext":
            self._storage_usage()
            return
        self.out("Formatting SD card, All data will be lost! Are you sure (y/n)?\r\n")
        answer = self.getc(None)
        if answer in (ord("y"), ord("Y")):
            self.out("Formatting, please wait...\r\n")
            for key in [p for p in self.state.files if p.startswith("/ext/")]:
                del self.state.files[key]
            self.out("SD card was successfully formatted.\r\n")
        else:
            self.out("Cancelled.\r\n")

    def _storage_list(self, path: str, rest: str) -> None:
        if path == "/":
            self.out("\t[D] int\r\n\t[D] ext\r\n\t[D] any\r\n")
            return
        directory = self._resolve(path)
        if directory not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        if self.state.files[directory] is not None:
            raise _FsError(FSE_NOT_EXIST)  # opening a file as a directory fails like a missing one
        entries = self.state.children(directory)
        if not entries:
            self.out("\tEmpty\r\n")
            return
        self.out("".join(self._entry(p, p.rsplit("/", 1)[1]) for p in entries))

    def _entry(self, path: str, shown: str) -> str:
        data = self.state.files[path]
        if data is None:
            return f"\t[D] {shown}\r\n"
        return f"\t[F] {shown} {len(data)}b\r\n"

    def _storage_tree(self, path: str, rest: str) -> None:
        roots = ["/int", "/ext"] if path == "/" else [path]
        for root in roots:
            try:
                directory = self._resolve(root)
                if self.state.files.get(directory, b"") is not None:
                    raise _FsError(FSE_NOT_EXIST)
            except _FsError as exc:
                self._error(exc)
                continue
            lines = self._walk(directory)
            self.out("".join(lines) if lines else "\tEmpty\r\n")

    def _walk(self, directory: str) -> list[str]:
        """``dir_walk``: depth first, full paths."""
        lines: list[str] = []
        for child in self.state.children(directory):
            lines.append(self._entry(child, child))
            if self.state.files[child] is None:
                lines += self._walk(child)
        return lines

    def _storage_read(self, path: str, rest: str) -> None:
        _, data = self._file(path)
        self.out(f"Size: {len(data)}\r\n".encode() + data + b"\r\n")

    def _storage_read_chunks(self, path: str, rest: str) -> None:
        sizes = _scan_uints(rest, 1)
        if not sizes:
            self._storage_usage()
            return
        _, data = self._file(path)
        chunk = sizes[0]
        self.out(f"Size: {len(data)}\r\n")
        if chunk:
            offset = 0
            while offset < len(data):
                self.out("\r\nReady?\r\n")
                self.getc(None)
                self.out(data[offset : offset + chunk])
                offset += chunk
        self.out("\r\n")

    def _writable(self, path: str) -> str:
        resolved = self._resolve(path)
        if self.state.files.get(_parent(resolved), b"") is not None:
            raise _FsError(FSE_NOT_EXIST)
        if resolved in self.state.files and self.state.files[resolved] is None:
            raise _FsError(FSE_DENIED)
        return resolved

    def _storage_write(self, path: str, rest: str) -> None:
        resolved = self._writable(path)
        self.out("Just write your text data. New line by Ctrl+Enter, exit by Ctrl+C.\r\n")
        typed = bytearray()
        while True:
            byte = self.getc(None)
            if byte is None or byte == ETX:
                break
            typed.append(byte)
            self.out(bytes([byte]))
        self.state.files[resolved] = (self.state.files.get(resolved) or b"") + bytes(typed)
        self.out("\r\n")

    def _storage_write_chunk(self, path: str, rest: str) -> None:
        sizes = _scan_uints(rest, 1)
        if not sizes:
            self._storage_usage()
            return
        resolved = self._writable(path)
        self.out("Ready\r\n")
        received = bytearray()
        while len(received) < sizes[0]:
            byte = self.getc(None)
            if byte is not None:
                received.append(byte)
        self.state.files[resolved] = (self.state.files.get(resolved) or b"") + bytes(received)

    def _storage_copy(self, path: str, rest: str) -> None:
        target, _ = _read_quoted(rest)
        if not target:
            self._storage_usage()
            return
        _, data = self._file(path)
        destination = self._writable(target)
        if destination in self.state.files:
            raise _FsError(FSE_EXIST)
        self.state.files[destination] = data

    def _storage_rename(self, path: str, rest: str) -> None:
        target, _ = _read_quoted(rest)
        if not target:
            self._storage_usage()
            return
        source = self._resolve(path)
        if source not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        destination = self._writable(target)
        if destination in self.state.files:
            raise _FsError(FSE_EXIST)
        moved = {
            p: d for p, d in self.state.files.items() if p == source or p.startswith(source + "/")
        }
        for old, data in moved.items():
            del self.state.files[old]
            self.state.files[destination + old[len(source) :]] = data

    def _storage_remove(self, path: str, rest: str) -> None:
        resolved = self._resolve(path)
        if resolved in ("/int", "/ext"):
            raise _FsError(FSE_DENIED)
        if resolved not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        if self.state.files[resolved] is None and self.state.children(resolved):
            raise _FsError(FSE_DENIED)
        del self.state.files[resolved]

    def _storage_mkdir(self, path: str, rest: str) -> None:
        resolved = self._resolve(path)
        if resolved in self.state.files:
            raise _FsError(FSE_EXIST)
        if self.state.files.get(_parent(resolved), b"") is not None:
            raise _FsError(FSE_NOT_EXIST)
        self.state.files[resolved] = None

    def _storage_md5(self, path: str, rest: str) -> None:
        _, data = self._file(path)
        self.out(hashlib.md5(data).hexdigest() + "\r\n")

    def _storage_stat(self, path: str, rest: str) -> None:
        if path == "/":
            self.out("Storage\r\n")
            return
        resolved = self._resolve(path)
        if resolved == "/int":
            total, free = self.state.int_total_bytes // 1024, self.state.int_free_bytes() // 1024
            self.out(f"Storage, {total}KiB total, {free}KiB free\r\n")
        elif resolved == "/ext":
            total, free = self.state.sd_total_kib, self.state.sd_free_kib()
            self.out(f"Storage, {total}KiB total, {free}KiB free\r\n")
        elif resolved not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        elif (data := self.state.files[resolved]) is None:
            self.out("Directory\r\n")
        else:
            self.out(f"File, size: {len(data)}b\r\n")

    def _storage_timestamp(self, path: str, rest: str) -> None:
        try:
            resolved = self._resolve(path)
        except _FsError:
            resolved = ""
        if resolved not in self.state.files:
            self.out("Invalid arguments\r\n")
            return
        self.out(f"Timestamp {int(self.emu.boot_epoch)}\r\n")

    # --- Sub-GHz (subghz_cli.c) ---

    # --- protobuf RPC (rpc_cli.c, rpc.c, rpc_system.c, rpc_storage.c) ---

    def cmd_start_rpc_session(self, args: str) -> None:
        """Speak varint-framed PB.Main until the session ends (``stop_session``, or a frame that
        does not decode); the shell then prints its prompt."""
        while self._rpc_request(self._rpc_frame()):
            pass

    def _rpc_request(self, body: bytes) -> bool:
        """Answer one request (a PB.Main without its length); False when the session ends.

        A frame that does not decode (an empty one included) ends the session as
        ``rpc_session_worker`` in ``applications/services/rpc/rpc.c`` does: the stream position
        is lost, so it answers ``Empty`` with ``command_id`` 0 and ``ERROR_DECODE`` and closes
        the session (USB: back to the text shell).
        """
        body = self.emu._take_replaced_request(body)
        try:
            request = decode_request(body)
        except PbError:
            self.emu._record_rpc("decode_error")
            self._rpc_try_send([pb_main(0, _PB_EMPTY, b"", status=RPC_ERROR_DECODE)])
            return False
        if request.content == _PB_STOP:
            self.emu._record_rpc("stop_session")
            self.out(pb_main(request.command_id, _PB_EMPTY, b""))
            return False
        self._rpc_try_send(self._rpc_answer(request))
        return True

    def _rpc_frame(self) -> bytes:
        """The next request's bytes (a length prefix over 5 bytes: the rest is dropped)."""
        length = shift = 0
        for _ in range(5):
            byte = self.getc(None)
            if byte is None:  # pragma: no cover - getc(None) always returns a byte
                continue
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        data = bytearray()
        while len(data) < length:
            byte = self.getc(None)
            if byte is not None:
                data.append(byte)
        return bytes(data)

    def _rpc_try_send(self, frames: list[bytes]) -> None:
        """Send the frames; a fault knob may cut them short (the rest is never sent)."""
        for frame in frames:
            fault = self.emu._take_rpc_fault()
            if fault == "truncate":
                self.out(frame[: max(1, len(frame) // 2)])
                return
            if fault == "oversized":
                self.out(b"\xff" * 9 + b"\x01" + frame)
                return
            self.out(frame)

    def _rpc_parts(self, command_id: int, content: int, bodies: list[bytes]) -> list[bytes]:
        """One frame per body, ``has_next`` on all but the last."""
        last = len(bodies) - 1
        return [
            pb_main(command_id, content, body, has_next=index < last)
            for index, body in enumerate(bodies)
        ]

    def _rpc_answer(self, request: Request) -> list[bytes]:
        """The frames answering a decoded request."""
        command_id, kind = request.command_id, request.content
        system = self._rpc_system_answer(request)
        if system is not None:
            return system
        storage: dict[int, tuple[str, Callable[[int, str], list[bytes]]]] = {
            _PB_LIST_REQ: ("list", self._rpc_storage_list),
            _PB_READ_REQ: ("read", self._rpc_storage_read),
            _PB_STAT_REQ: ("stat", self._rpc_storage_stat),
            _PB_FS_INFO_REQ: ("info", self._rpc_storage_info),
            _PB_MD5_REQ: ("md5sum", self._rpc_storage_md5sum),
            _PB_TIMESTAMP_REQ: ("timestamp", self._rpc_storage_timestamp),
        }
        if kind in storage:
            name, answer = storage[kind]
            path = request.text(1)
            self.emu._record_rpc(f"storage_{name} {path}")
            try:
                return answer(command_id, path)
            except _FsError as exc:
                status = _RPC_FS_STATUS.get(exc.desc, 1)
                return [pb_main(command_id, _PB_EMPTY, b"", status=status)]
        # decoded, but no handler here (rpc.c: "decoded, but not implemented")
        self.emu._record_rpc(f"unknown {kind}")
        return [pb_main(command_id, _PB_EMPTY, b"", status=RPC_ERROR_NOT_IMPLEMENTED)]

    def _rpc_system_answer(self, request: Request) -> list[bytes] | None:
        """rpc_system.c's requests; None for any other."""
        command_id, kind, state = request.command_id, request.content, self.state
        if kind == _PB_PING_REQ:
            self.emu._record_rpc("ping")
            if request.has_next:
                return [pb_main(command_id, _PB_EMPTY, b"", status=RPC_ERROR_INVALID_PARAMETERS)]
            data = request.data(1)
            return [pb_main(command_id, _PB_PING_RESP, pb_bytes(1, data) if data else b"")]
        if kind in (_PB_INFO_REQ, _PB_POWER_REQ):
            info = kind == _PB_INFO_REQ
            self.emu._record_rpc("device_info" if info else "power_info")
            rows = state.device_info("_") if info else state.power_info("_")
            bodies = [pb_str(1, key) + pb_str(2, value) for key, value in rows]
            response = _PB_INFO_RESP if info else _PB_POWER_RESP
            return self._rpc_parts(command_id, response, bodies)
        if kind == _PB_ALERT_REQ:
            self.emu._record_rpc("play_audiovisual_alert")
            state.alerts += 1
            return [pb_main(command_id, _PB_EMPTY, b"")]
        if kind == _PB_VERSION_REQ:
            self.emu._record_rpc("protobuf_version")
            major, minor = state.protobuf_version
            return [pb_main(command_id, _PB_VERSION_RESP, pb_uint(1, major) + pb_uint(2, minor))]
        if kind == _PB_DATETIME_REQ:
            self.emu._record_rpc("get_datetime")
            now = datetime.now() + state.clock_offset
            parts = (now.hour, now.minute, now.second, now.day, now.month, now.year)
            fields = b"".join(pb_uint(n, v) for n, v in enumerate(parts, 1))
            fields += pb_uint(7, now.isoweekday())
            return [pb_main(command_id, _PB_DATETIME_RESP, pb_bytes(1, fields))]
        return None

    def _rpc_storage_list(self, command_id: int, path: str) -> list[bytes]:
        if path == "/":  # rpc_system_storage_list_root: "any", "int", "ext", in that order
            files = [pb_file(True, root) for root in ("any", "int", "ext")]
        else:
            directory = self._resolve(path)
            if self.state.files.get(directory, b"") is not None:
                raise _FsError(FSE_NOT_EXIST)
            files = []
            for child in self.state.children(directory):
                data = self.state.files[child]
                name = child.rsplit("/", 1)[1]
                if name.isascii():  # the firmware skips names that are not ASCII
                    files.append(pb_file(data is None, name, len(data or b"")))
        bodies = [
            b"".join(pb_bytes(1, f) for f in files[start : start + RPC_LIST_CHUNK])
            for start in range(0, len(files), RPC_LIST_CHUNK)
        ] or [b""]
        return self._rpc_parts(command_id, _PB_LIST_RESP, bodies)

    def _rpc_storage_read(self, command_id: int, path: str) -> list[bytes]:
        """rpc_system_storage_read_process sets only ``file.data`` (no size) in each part."""
        _, data = self._file(path)
        chunks = [data[i : i + RPC_READ_CHUNK] for i in range(0, len(data), RPC_READ_CHUNK)]
        bodies = [pb_bytes(1, pb_file(False, data=c)) for c in chunks or [b""]]
        return self._rpc_parts(command_id, _PB_READ_RESP, bodies)

    def _rpc_storage_stat(self, command_id: int, path: str) -> list[bytes]:
        if path == "/":
            file = pb_file(True)
        else:
            resolved = self._resolve(path)
            if resolved not in self.state.files:
                raise _FsError(FSE_NOT_EXIST)
            data = self.state.files[resolved]
            file = pb_file(data is None, size=len(data or b""))
        return [pb_main(command_id, _PB_STAT_RESP, pb_bytes(1, file))]

    def _rpc_storage_info(self, command_id: int, path: str) -> list[bytes]:
        """storage_common_fs_info: total and free bytes of the filesystem holding ``path``."""
        resolved = self._resolve(path)
        if resolved.startswith("/int"):
            total, free = self.state.int_total_bytes, self.state.int_free_bytes()
        else:
            total, free = self.state.sd_total_kib * 1024, self.state.sd_free_kib() * 1024
        return [pb_main(command_id, _PB_FS_INFO_RESP, pb_uint(1, total) + pb_uint(2, free))]

    def _rpc_storage_md5sum(self, command_id: int, path: str) -> list[bytes]:
        _, data = self._file(path)
        digest = hashlib.md5(data).hexdigest()
        return [pb_main(command_id, _PB_MD5_RESP, pb_str(1, digest))]

    def _rpc_storage_timestamp(self, command_id: int, path: str) -> list[bytes]:
        """The same time as the CLI's ``storage timestamp``."""
        resolved = self._resolve(path)
        if resolved not in self.state.files:
            raise _FsError(FSE_NOT_EXIST)
        timestamp = int(self.emu.boot_epoch)
        return [pb_main(command_id, _PB_TIMESTAMP_RESP, pb_uint(1, timestamp))]

    def cmd_subghz(self, args: str) -> None:
        sub, rest = _read_word(args)
        if sub == "rx":
            self._subghz_rx(rest)
        elif sub == "tx":
            self._subghz_tx(args, rest)
        elif sub == "rx_raw":
            self._subghz_rx_raw(rest)
        else:
            self._subghz_usage()

    def _subghz_usage(self) -> None:
        text = (
            "Usage:\r\nsubghz <cmd> <args>\r\nCmd list:\r\n"
            "\tchat <frequency:in Hz> <device: 0 - CC1101_INT, 1 - CC1101_EXT>\t"
            " - Chat with other Flippers\r\n"
            "\ttx <3 byte Key: in hex> <frequency: in Hz> <te: us> <repeat: count> "
            "<device: 0 - CC1101_INT, 1 - CC1101_EXT>\t - Transmitting key\r\n"
            "\trx <frequency:in Hz> <device: 0 - CC1101_INT, 1 - CC1101_EXT>\t - Receive\r\n"
            "\trx_raw <frequency:in Hz>\t - Receive RAW\r\n"
            "\tdecode_raw <file_name: path_RAW_file>\t - Testing\r\n"
            "\ttx_from_file <file_name: path_file> <repeat: count> "
            "<device: 0 - CC1101_INT, 1 - CC1101_EXT>\t - Transfer from file\r\n"
        )
        if self.state.debug:
            text += (
                "\r\n  debug cmd:\r\n"
                "\ttx_carrier <frequency:in Hz>\t - Transmit carrier\r\n"
                "\trx_carrier <frequency:in Hz>\t - Receive carrier\r\n"
            )
        self.out(text)

    def _device(self, index: int) -> int:
        return 1 if index == 1 and self.state.external_cc1101 else 0

    def _subghz_rx(self, args: str) -> None:
        frequency, device = 433920000, 0
        if args:
            values = _scan_uints(args, 2)
            frequency = values[0] if values else frequency
            device = values[1] if len(values) > 1 else device
            if len(values) != 2:
                self.out(
                    f"sscanf returned {len(values)}, frequency: {frequency} device: {device}\r\n"
                )
                self.out(_usage("subghz rx", SUBGHZ_RX_USAGE, args))
                return
        device = self._device(device)
        if self._frequency_refused(frequency):
            return
        self.out(
            f"Listening at frequency: {tuned_frequency(frequency)} device: {device}. "
            "Press CTRL+C to stop\r\n"
        )
        received = 0
        while not self.wait_etx(self.emu.event_interval):
            packet = _pop(self.state.subghz_packets)
            if packet is not None:
                received += packet != "."
                self.out(packet)
        self.out(f"\r\nPackets received {received}\r\n")

    def _frequency_refused(self, frequency: int) -> bool:
        """The firmware's own refusal of a frequency outside the radio's bands."""
        if _frequency_valid(frequency):
            return False
        self.out(f"Frequency must be in {SUBGHZ_FREQUENCY_RANGE_STR} range, not {frequency}\r\n")
        return True

    def _subghz_rx_raw(self, args: str) -> None:
        frequency = 433920000
        if args:
            values = _scan_uints(args, 1)
            if not values:
                self.out(f"sscanf returned 0, frequency: {frequency}\r\n")
                self.out(_usage("subghz rx", "<Frequency: in Hz>", args))
                return
            frequency = values[0]
            if self._frequency_refused(frequency):
                return
        self.out(f"Listening at {tuned_frequency(frequency)}. Press CTRL+C to stop\r\n")
        while not self.wait_etx(self.emu.event_interval):
            pass

    def _subghz_tx(self, command_args: str, args: str) -> None:
        key, frequency, te, repeat, device = 0x0074BADE, 433920000, 403, 10, 0
        if args:
            values = _scan(args, (16, 10, 10, 10, 10))
            parsed = [key, frequency, te, repeat, device]
            parsed[: len(values)] = values
            key, frequency, te, repeat, device = parsed
            if len(values) != 5:
                self.out(
                    f"sscanf returned {len(values)}, key: {key:x}, frequency: {frequency}, "
                    f"te: {te}, repeat: {repeat}, device: {device}\r\n "
                )
                self.out(_usage("subghz tx", SUBGHZ_TX_USAGE, args))
                return
        device = self._device(device)
        if self._frequency_refused(frequency):
            return
        self.state.transmit_log.append(f"subghz {command_args}")
        self.out(
            f"Transmitting at {frequency}, key {key:x}, te {te}, repeat {repeat} "
            f"device {device}. Press CTRL+C to stop\r\n"
        )
        # Princeton: 24 bits of 4 Te each plus a 30 Te guard, `repeat` times; a dot every 333 ms.
        deadline = time.monotonic() + repeat * te * (24 * 4 + 30) / 1_000_000
        while True:
            self.out(".")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.wait_etx(min(0.333, remaining)):
                break

    # --- Infrared (infrared_cli.c) ---

    def _ir_usage(self) -> None:
        self.out(
            "Usage:\r\n\tir rx [raw]\r\n\tir tx <protocol> <address> <command>\r\n"
            "\t<command> and <address> are hex-formatted\r\n"
            "\tAvailable protocols: " + " ".join(_IR_BITS) + "\r\n"
            "\tRaw format:\r\n"
            "\tir tx RAW F:<frequency> DC:<duty_cycle> <sample0> <sample1>...\r\n"
            "\tFrequency (10000 - 56000), Duty cycle (0 - 100), max 512 samples\r\n"
            "\tir decode <input_file> [<output_file>]\r\n"
            "\tir universal <remote_name> <signal_name>\r\n"
            "\tir universal list <remote_name>\r\n"
            "\tAvailable universal remotes: tv audio ac projectors\r\n"
        )

    def cmd_ir(self, args: str) -> None:
        sub, rest = _read_word(args)
        if sub.startswith("rx"):
            if rest and rest != "raw":
                self.out("Wrong arguments.\r\n")
                self._ir_usage()
                return
            kind = "RAW" if rest == "raw" else ""
            self.out(f"Receiving {kind} INFRARED...\r\nPress Ctrl+C to abort\r\n")
            while not self.wait_etx(self.emu.event_interval):
                signal_line = _pop(self.state.ir_signals)
                if signal_line is not None:
                    self.out(signal_line + "\r\n")
        elif sub.startswith("tx"):
            words = rest.split()
            valid = (
                len(words) >= 3
                and words[0] in _IR_BITS
                and all(len(_scan_uints(w, 1, base=16)) == 1 for w in words[1:3])
            ) or rest.startswith("RAW F:")
            if valid:
                self.state.transmit_log.append(f"ir {args}")
            else:
                self.out("Wrong arguments.\r\n")
                self._ir_usage()
        else:
            self._ir_usage()

    # --- NFC ---

    def cmd_nfc(self, args: str) -> None:
        style = self.state.nfc_style
        if style == "shell":
            self._nfc_shell()
            return
        if self.state.running_app is not None:  # these firmwares register nfc as not parallel safe
            self.out(
                f"{ANSI_FG_RED}this command cannot be run while an application is open{ANSI_RESET}"
            )
            return
        sub, _ = _read_word(args)
        if sub == "emulate":
            self._nfc_emulate(args)
        elif style == "detect" and sub == "detect":
            tag = self._nfc_scan()
            if tag:
                self.out(f"Detected {len(tag)} protocols:\r\n" + "".join(f"{p}\r\n" for p in tag))
        elif style == "scanner" and sub == "scanner":
            tag = self._nfc_scan()
            self.out("Protocols detected: " + ", ".join(tag or []))
        elif style == "detect":
            text = (
                "Usage:\r\nnfc <cmd>\r\nCmd list:\r\n"
                "\tdetect\t - detect nfc device\r\n"
                "\temulate\t - emulate predefined nfca card\r\n"
                "\tapdu\t - Send APDU and print response \r\n"
            )
            if self.state.debug:
                text += "\tfield\t - turn field on\r\n"
            self.out(text)
        else:
            self.out(f"{ANSI_FG_RED}could not find command `{sub}`, try `help`{ANSI_RESET}")

    def _nfc_shell(self) -> None:
        """The newest firmware's ``nfc`` (``applications/main/nfc/cli/nfc_cli.c``,
        ``nfc_cli_execute``): its arguments are ignored and it runs a sub-shell (``cli_shell.c``)
        with its own banner and prompt, ``scanner``, ``help``/``?`` and ``exit``. ``exit`` prints
        no prompt of its own; the main shell prints ``>: `` when the sub-shell is gone."""
        if self.state.running_app == "NFC":
            self.out(
                f"{ANSI_FG_YELLOW}NFC app is running, unable to run NFC CLI at the same time!"
                f"\r\n{ANSI_RESET}"
            )
            return
        outer = (self.prompt, self.commands)
        self.prompt, self.commands = NFC_SHELL_PROMPT, FlipperEmulator.NFC_SHELL_COMMANDS
        self.out(NFC_SHELL_MOTD.encode() + self.prompt)
        try:
            while not self.leaving:
                byte = self.getc(None)
                if byte is not None:
                    self._key(byte)
        finally:
            self.prompt, self.commands = outer
            self.leaving = False

    def cmd_exit(self, args: str) -> None:
        """``cli_command_exit``: stop this (sub-)shell."""
        self.leaving = True

    def cmd_nfc_scanner(self, args: str) -> None:
        """The sub-shell's ``scanner`` (``nfc_cli_command_scanner.c``, ``nfc_cli_scanner.c``)."""
        tag = self._nfc_scan()
        self.out("Protocols detected: " + ", ".join(tag or []))

    def _nfc_scan(self) -> list[str] | None:
        """Both NFC styles: wait for a detection (the next queued tag) or ETX."""
        self.out("Press Ctrl+C to abort\r\n\n")
        while not self.wait_etx(self.emu.event_interval):
            tag = _pop(self.state.nfc_tags)
            if tag is not None:
                return tag
        return None

    def _nfc_emulate(self, args: str) -> None:
        self.state.transmit_log.append(f"nfc {args}")
        self.out(
            "Emulating NFC-A Type: T2T UID: 36 9C E7 B1 0A C1 34 SAK: 00 ATQA: 00/44\r\n"
            "Press Ctrl+C to abort\r\n"
        )
        while not self.wait_etx(0.05):
            pass


_T = TypeVar("_T")


def _pop(queue: deque[_T]) -> _T | None:
    try:
        return queue.popleft()
    except IndexError:
        return None


class FlipperEmulator(PtyDevice[_Port]):
    """A Flipper Zero on a pty. ``start()`` returns the path a client opens with pyserial
    (plugging, unplugging and the link: ``usb_pty.PtyDevice``).

    ``sent`` lists every command line the host executed (trimmed, in order): the audit of what
    reached the "hardware". ``received`` holds every raw byte the host wrote.
    """

    COMMANDS: ClassVar[dict[str, tuple[Handler, bool]]] = {
        "!": (_Port.cmd_device_info, True),
        "?": (_Port.cmd_help, True),
        "date": (_Port.cmd_date, True),
        "device_info": (_Port.cmd_device_info, True),
        "echo": (_Port.cmd_echo, True),
        "free": (_Port.cmd_free, True),
        "help": (_Port.cmd_help, True),
        "info": (_Port.cmd_info, True),
        "ir": (_Port.cmd_ir, False),
        "led": (_Port.cmd_led, False),
        "loader": (_Port.cmd_loader, True),
        "log": (_Port.cmd_log, True),
        "nfc": (_Port.cmd_nfc, True),
        "power": (_Port.cmd_power, True),
        "storage": (_Port.cmd_storage, True),
        "subghz": (_Port.cmd_subghz, False),
        "uptime": (_Port.cmd_uptime, True),
        "start_rpc_session": (_Port.cmd_start_rpc_session, True),
        "vibro": (_Port.cmd_vibro, False),
    }
    """name -> (handler, parallel safe). Not parallel safe = refused while an app is open."""

    NFC_SHELL_COMMANDS: ClassVar[dict[str, tuple[Handler, bool]]] = {
        "?": (_Port.cmd_help, True),
        "exit": (_Port.cmd_exit, True),
        "help": (_Port.cmd_help, True),
        "scanner": (_Port.cmd_nfc_scanner, True),
    }
    """The NFC sub-shell's commands (``nfc_style="shell"``)."""

    def __init__(
        self,
        state: FlipperState | None = None,
        *,
        link: Path | None = None,
        event_interval: float = 0.05,
        settle: float = 0.05,
        reboot_delay: float = 0.5,
    ) -> None:
        """``link``: keep a symlink there pointing at the current pty (a stable path across
        replugs). ``event_interval``: seconds between streamed radio events. ``settle``: delay
        between the host opening the port and the banner. ``reboot_delay``: how long
        ``power reboot`` keeps the device away before it re-enumerates on a new pty."""
        super().__init__(link=link, settle=settle, reboot_delay=reboot_delay)
        self.state = state if state is not None else FlipperState()
        self.event_interval = event_interval
        self.sent: list[str] = []
        self.boot_epoch = time.time()
        self._garbage: bytes | None = None
        self._mute_next = False
        self._stall: bool | None = None
        self._rpc_faults: deque[Literal["truncate", "oversized"]] = deque()
        self._replaced_requests: deque[bytes] = deque()
        self.rpc_log: list[str] = []
        """Every RPC request the device answered, e.g. ``storage_read /ext/a`` or ``ping``."""

    def _new_port(self) -> _Port:
        """Each plug-in (start, replug, the re-enumeration after ``power reboot``) is a new shell
        on a new pty, over this one ``FlipperState``."""
        return _Port(self)

    def uptime(self) -> float:
        return time.monotonic() - self._boot + self.state.uptime_offset

    # --- fault knobs ---

    def garbage_next(self, data: bytes) -> None:
        """Emit ``data`` after the echo of the next command, before its answer."""
        with self._lock:
            self._garbage = bytes(data)

    def mute_prompt_next(self) -> None:
        """Finish the next command without printing the ``\\r\\n>: `` prompt."""
        with self._lock:
            self._mute_next = True

    def stall_next(self, *, ctrl_c_recovers: bool = False) -> None:
        """Never answer the next command (after its echo and CR LF). Only closing the port (a new
        session), ``unplug``/``replug`` or, with ``ctrl_c_recovers``, an ETX ends the hang."""
        with self._lock:
            self._stall = ctrl_c_recovers

    def truncate_next_rpc_frame(self) -> None:
        """Send only the first half of the next RPC frame, then nothing more of that answer."""
        with self._lock:
            self._rpc_faults.append("truncate")

    def oversized_varint_next_rpc_frame(self) -> None:
        """Put a 10-byte length varint (over 2^63) in front of the next RPC frame and drop the
        rest of that answer."""
        with self._lock:
            self._rpc_faults.append("oversized")

    def replace_next_rpc_request(self, body: bytes) -> None:
        """The next RPC request arrives as ``body`` (a PB.Main without its length) instead of
        what the host sent: line noise, e.g. ``b""`` (an empty request) or
        ``bytes.fromhex("0803ffffff")`` (a frame that does not decode)."""
        with self._lock:
            self._replaced_requests.append(bytes(body))

    def _take_replaced_request(self, body: bytes) -> bytes:
        with self._lock:
            replaced = _pop(self._replaced_requests)
        return body if replaced is None else replaced

    def _take_rpc_fault(self) -> Literal["truncate", "oversized"] | None:
        with self._lock:
            return _pop(self._rpc_faults)

    def _record_rpc(self, request: str) -> None:
        with self._lock:
            self.rpc_log.append(request)

    def _take_faults(self) -> tuple[bytes | None, bool, bool | None]:
        with self._lock:
            faults = (self._garbage, self._mute_next, self._stall)
            self._garbage, self._mute_next, self._stall = None, False, None
            return faults

    # --- radio events ---

    def push_subghz(self, packet: str) -> None:
        """Queue a decoded Sub-GHz packet text (see ``princeton_packet``)."""
        self.state.subghz_packets.append(packet)

    def push_ir(self, line: str) -> None:
        """Queue an ``ir rx`` line (see ``ir_decoded``), without CR LF."""
        self.state.ir_signals.append(line)

    def push_nfc(self, *protocols: str) -> None:
        """Queue one NFC detection reporting these protocol names."""
        self.state.nfc_tags.append(list(protocols))

    # --- audit ---

    def _record_sent(self, command: str) -> None:
        with self._lock:
            self.sent.append(command)


class _RpcOverBle(_Port):
    """The RPC half of a ``_Port`` with no pty under it: what the Flipper's BLE serial service
    carries (hardware.md §1.7: only RPC, the session open from the moment the host connects).

    It reuses the port's own RPC answers (``_rpc_request`` and what it calls), so USB and BLE
    answer from one codec and one ``FlipperState``. ``_Port.__init__`` (which opens a pty) is
    deliberately not called: only ``emu``, ``state`` and ``out`` are used on this path.
    """

    def __init__(self, emulator: FlipperEmulator) -> None:
        self.emu = emulator
        self.state = emulator.state
        self.inbuf = bytearray()
        self.answers = bytearray()

    def out(self, data: bytes | str) -> None:
        self.answers += data.encode() if isinstance(data, str) else data

    def feed(self, data: bytes) -> bytes | None:
        """Buffer ``data``; answer every complete frame in it; the rest waits for more."""
        self.inbuf += data
        while self.inbuf:
            length = shift = used = 0
            complete = False
            for byte in self.inbuf[:5]:
                used += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    complete = True
                    break
            if not complete and used < 5:
                break  # the length prefix itself is still arriving
            if len(self.inbuf) < used + length:
                break
            body = bytes(self.inbuf[used : used + length])
            del self.inbuf[: used + length]
            # stop_session over BLE: answered with Empty; the link keeps its RPC session
            self._rpc_request(body)
        answers, self.answers = bytes(self.answers), bytearray()
        return answers or None


def rpc_responder(
    state: FlipperState | None = None, *, emulator: FlipperEmulator | None = None
) -> Callable[[bytes], bytes | None]:
    """An ``on_receive`` for ``firmware_bridges.emulators.ble.EmulatedPeripheral``: the bytes the
    host wrote (any split) in, the framed RPC answers out (None while a frame is incomplete).

    ``state`` is the device's (e.g. the one a USB ``FlipperEmulator`` also serves); pass
    ``emulator`` instead to get its ``rpc_log`` and RPC fault knobs
    (``truncate_next_rpc_frame``...). A fresh one is made (never started: no pty) otherwise.
    """
    if emulator is None:
        emulator = FlipperEmulator(state)
    elif state is not None and state is not emulator.state:
        raise ValueError("give the state or an emulator, not two different states")
    return _RpcOverBle(emulator).feed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m firmware_bridges.emulators.flipper``: print the pty path, run until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m firmware_bridges.emulators.flipper",
        description="Emulate a Flipper Zero USB CLI on a pseudo-terminal.",
    )
    parser.add_argument("--link", type=Path, help="keep a symlink here to the current pty")
    parser.add_argument("--name", default="Unyana", help="the device name (hardware_name)")
    parser.add_argument(
        "--nfc-style",
        choices=("detect", "scanner", "shell"),
        default="scanner",
        help="which NFC command set the firmware has",
    )
    options = parser.parse_args(argv)
    state = FlipperState(name=options.name, nfc_style=options.nfc_style)
    FlipperEmulator(state, link=options.link).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
