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
The firmware files (flipperdevices/flipperzero-firmware) read for these modules (what a host
sees is summarised in ``docs/hardware.md``):

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
``firmware_bridges/emulators/usb_pty.py``, shared with the other USB boards' emulators; the
firmware is this module (``FlipperEmulator``, its fault knobs, ``rpc_responder`` for BLE) and
one module per job: ``flipper_state`` (what the device knows and did), ``flipper_shell`` (the
line editor, dispatch and core commands), ``flipper_storage`` (``storage``), ``flipper_rpc`` and
``flipper_pb`` (the protobuf RPC and its wire code), ``flipper_radios`` and
``flipper_radio_text`` (Sub-GHz, IR, NFC). The wire constants are the emulator's own copies, never
the drivers': a wrong constant in a driver cannot pass its own test.

Not emulated
------------
What the emulator still does not do is listed once, in ``docs/hardware.md`` ("What the Flipper
emulator does not do"); keep that list and this module in step.

What a pyserial client sees when the device vanishes (``unplug()``; checked on Linux):
``read()`` raises ``serial.SerialException("device reports readiness to read but returned no
data (device disconnected or multiple access on port?)")`` because the kernel reports the hung-up
slave readable and ``os.read`` returns ``b""`` (EOF; a raw ``os.read`` on the slave fd returns
``b""``), ``write()`` raises ``serial.SerialException("write failed: [Errno 5] Input/output
error")``, and the ``/dev/pts/N`` node disappears at once, so reopening the old path fails.
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Literal

from drivers.base import PortInfo
from firmware_bridges.emulators.flipper_radio_text import (
    ir_decoded,
    princeton_packet,
    tuned_frequency,
)
from firmware_bridges.emulators.flipper_radios import NFC_SHELL_MOTD, RadioPort
from firmware_bridges.emulators.flipper_rpc import RpcOverBle, RpcPort
from firmware_bridges.emulators.flipper_shell import (
    BACKSPACE_ECHO,
    NFC_SHELL_PROMPT,
    PROMPT,
    Handler,
    motd,
)
from firmware_bridges.emulators.flipper_state import FlipperState, pop_next
from firmware_bridges.emulators.usb_pty import PtyDevice

__all__ = [
    "BACKSPACE_ECHO",
    "NFC_SHELL_MOTD",
    "NFC_SHELL_PROMPT",
    "PROMPT",
    "FlipperEmulator",
    "FlipperState",
    "ir_decoded",
    "main",
    "motd",
    "princeton_packet",
    "tuned_frequency",
]


class _Port(RpcPort, RadioPort):
    """The whole shell on one plug-in of the USB cable: core commands, storage, the RPC
    and the radios (each in its own module)."""


class FlipperEmulator(PtyDevice[_Port]):
    """A Flipper Zero on a pty. ``start()`` returns the path a client opens with pyserial
    (plugging, unplugging and the link: ``usb_pty.PtyDevice``).

    ``sent`` lists every command line the host executed (trimmed, in order): the audit of what
    reached the "hardware". ``received`` holds every raw byte the host wrote.
    """

    COMMANDS: ClassVar[dict[str, tuple[Handler, bool]]] = {
        "!": (_Port.cmd_device_info, True),
        "?": (_Port.cmd_help, True),
        "bt": (_Port.cmd_bt, False),
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

    def usb_descriptor(self, path: str) -> PortInfo:
        """The firmware's USB CDC descriptor: ST's virtual COM port ids, the device's name."""
        name = self.state.name
        return PortInfo(
            device=path,
            vid=0x0483,
            pid=0x5740,
            serial_number=f"flip_{name}",
            manufacturer="Flipper Devices Inc.",
            product=f"Flipper {name}",
            description=f"Flipper {name}",
        )

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
            replaced = pop_next(self._replaced_requests)
        return body if replaced is None else replaced

    def _take_rpc_fault(self) -> Literal["truncate", "oversized"] | None:
        with self._lock:
            return pop_next(self._rpc_faults)

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
    return RpcOverBle(emulator).feed


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
        help="which NFC command set the firmware has (default: the official firmware's)",
    )
    options = parser.parse_args(argv)
    state = FlipperState(name=options.name, nfc_style=options.nfc_style)
    FlipperEmulator(state, link=options.link).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
