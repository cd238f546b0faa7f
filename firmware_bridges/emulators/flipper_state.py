"""What the emulated Flipper knows: identity, battery, storage, queued radio events, and the
record of what its "hardware" did. Tests read and edit a ``FlipperState`` directly."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, TypeVar

from firmware_bridges.emulators.flipper_radio_text import princeton_packet

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


def parent_of(path: str) -> str:
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
    nfc_style: Literal["detect", "scanner", "shell"] | None = None
    """``detect``: dev firmware (``nfc detect``); ``scanner``: firmware with a one-shot
    ``nfc scanner`` (Momentum); ``shell``: the official firmware the identity names (1.4.x),
    where ``nfc`` opens an NFC sub-shell (prompt ``[nfc]>: ``) that has ``scanner`` and
    ``exit``. None: the set of the firmware this state claims (``nfc_command_set``)."""
    hci_version: tuple[int, int, int, int, int] = (11, 8485, 11, 48, 8485)
    """``bt hci_info`` (``furi_hal_bt_dump_state``): HCI version, HCI revision, LMP/PAL version,
    manufacturer (48 = STMicroelectronics), LMP/PAL subversion of the radio stack."""
    storage_stamps: dict[str, int] = field(default_factory=dict)
    """When each storage (``/int``, ``/ext``) last changed (``storage_data_timestamp``): set
    at boot and on every write, mkdir, remove, rename, copy and format on it."""
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

    def __post_init__(self) -> None:
        for storage in ("/int", "/ext"):
            self.storage_stamps.setdefault(storage, self.rtc())

    def hci_info(self) -> str:
        """What ``bt hci_info`` prints (no line end: the shell adds its prompt)."""
        hci, revision, lmp, maker, subversion = self.hci_version
        return (
            f"Ret: 0, HCI_Version: {hci}, HCI_Revision: {revision}, LMP_PAL_Version: {lmp}, "
            f"Manufacturer_Name: {maker}, LMP_PAL_Subversion: {subversion}"
        )

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

    def power_debug(self) -> list[tuple[str, str]]:
        """``furi_hal_power_debug_get``: the charger's and fuel gauge's registers (``info
        power_debug``, RPC property ``pwrdebug``). The values are plausible, not read from a
        unit."""
        voltage, current = self.battery_voltage, self.battery_current
        return [
            ("format.major", "1"),
            ("format.minor", "0"),
            ("charger.vbus", "0"),
            ("charger.vsys", str(voltage + 40)),
            ("charger.vbat", str(voltage)),
            ("charger.vreg", "4208"),
            ("charger.current", "0"),
            ("charger.ntc", "53400"),
            ("gauge.capacity.full", str(self.capacity_full)),
            ("gauge.capacity.design", str(self.capacity_design)),
            ("gauge.capacity.remain", str(self.capacity_remain)),
            ("gauge.state.charge", str(self.charge_level)),
            ("gauge.state.health", str(self.battery_health)),
            ("gauge.voltage", str(voltage)),
            ("gauge.current", str(current)),
            ("gauge.temperature", str(self.battery_temp)),
        ]

    def nfc_command_set(self) -> Literal["detect", "scanner", "shell"]:
        """The NFC commands of the firmware this state claims, unless ``nfc_style`` says: the
        official firmware (1.4.x) has the sub-shell, a fork (Momentum) the one-shot scanner."""
        if self.nfc_style is not None:
            return self.nfc_style
        return "shell" if self.firmware_origin_fork == "Official" else "scanner"

    # --- filesystem ---

    def put_file(self, path: str, data: bytes) -> None:
        """Create or replace a file, creating missing parent directories (a write: the
        storage's timestamp moves)."""
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            directory = "/" + "/".join(parts[:depth])
            self.files.setdefault(directory, None)
        self.files[path] = bytes(data)
        self.touch(path)

    def rtc(self) -> int:
        """The device clock as a Unix timestamp (``furi_hal_rtc_get_timestamp``)."""
        return int(time.time() + self.clock_offset.total_seconds())

    def stamp(self, storage: str) -> int:
        """``storage_data_get_timestamp`` of ``/int`` or ``/ext``: boot time until it changes."""
        return self.storage_stamps[storage]

    def touch(self, path: str) -> None:
        """A change on the storage holding ``path`` (an absolute ``/int`` or ``/ext`` path)."""
        storage = path[:4]
        if storage in ("/int", "/ext"):
            self.storage_stamps[storage] = self.rtc()

    def children(self, directory: str) -> list[str]:
        """Direct children of a directory, in listing order."""
        return [p for p in self.files if p != directory and parent_of(p) == directory]

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


_T = TypeVar("_T")


def pop_next(queue: deque[_T]) -> _T | None:
    try:
        return queue.popleft()
    except IndexError:
        return None
