"""The Flipper's text shell: its bytes (banner, prompt, echo, line editing), the command table's
dispatch and the core commands (``cli_shell.c``, ``cli_shell_line.c``, ``cli_main_commands.c``,
``power_cli.c``, ``loader_cli.c``, ``furi_hal_info.c``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol, cast

from firmware_bridges.emulators.flipper_state import FlipperState
from firmware_bridges.emulators.usb_pty import PowerDown, PtyDevice, PtyPort

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


def read_word(args: str) -> tuple[str, str]:
    """``args_read_string_and_trim``: first space-separated word, and the trimmed rest."""
    space = args.find(" ")
    if space < 0:
        return args, ""
    return args[:space], args[space + 1 :].strip(" \r\n\t")


def read_quoted(args: str) -> tuple[str, str]:
    """``args_read_probably_quoted_string_and_trim``."""
    if args.startswith('"'):
        end = args.find('"', 1)
        if end > 0:
            return args[1:end], args[end + 1 :].strip(" \r\n\t")
    return read_word(args)


def scan_uints(text: str, count: int, base: int = 10) -> list[int]:
    """Like ``sscanf("%lu %lu ...")``: the values parsed before the first failure."""
    return scan(text, (base,) * count)


def scan(text: str, bases: Sequence[int]) -> list[int]:
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


def usage_text(cmd: str, usage: str, arg: str) -> str:
    """``cli_print_usage``."""
    return f"{cmd}: illegal option -- {arg}\r\nusage: {cmd} {usage}"


Handler = Callable[[Any, str], None]
"""A command: the port it runs on, its arguments."""


class Board(Protocol):
    """What the ports (the shell, its radios, storage and RPC) ask of the emulated Flipper they
    run on (``flipper.FlipperEmulator``): its state, its commands, how fast it streams radio
    events, and the RPC faults a test asked for and the record of RPC requests."""

    state: FlipperState
    COMMANDS: ClassVar[dict[str, tuple[Handler, bool]]]
    NFC_SHELL_COMMANDS: ClassVar[dict[str, tuple[Handler, bool]]]
    event_interval: float

    def uptime(self) -> float: ...

    def _take_faults(self) -> tuple[bytes | None, bool, bool | None]: ...

    def _record_sent(self, command: str) -> None: ...

    def _take_replaced_request(self, body: bytes) -> bytes: ...

    def _take_rpc_fault(self) -> Literal["truncate", "oversized"] | None: ...

    def _record_rpc(self, request: str) -> None: ...


class ShellPort(PtyPort):
    """The Flipper's shell on one plug-in of the USB cable (the pty, the host's open and close,
    unplugging and the bytes in and out are ``usb_pty.PtyPort``'s, shared with other boards)."""

    NAME = "flipper-emulator"

    def __init__(self, emulator: Board) -> None:
        super().__init__(cast(PtyDevice[Any], emulator))  # the emulator is that pty's device too
        self.emu = emulator
        self.state = emulator.state
        self.line = ""
        self.prompt = PROMPT
        """The prompt of the shell reading lines now (the main one or the NFC sub-shell)."""
        self.commands: dict[str, tuple[Handler, bool]] = emulator.COMMANDS
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
            self._table(self.state.power_debug())
        else:
            self.out(usage_text("info", "<device|power|power_debug>", args))

    def cmd_uptime(self, args: str) -> None:
        seconds = int(self.emu.uptime())
        self.out(f"Uptime: {seconds // 3600}h{seconds // 60 % 60}m{seconds % 60}s")

    def cmd_date(self, args: str) -> None:
        if args:
            values = scan_uints(args.replace("-", " ").replace(":", " "), 7)
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
            self.out(usage_text("vibro", "<1|0>", args))

    def cmd_led(self, args: str) -> None:
        usage = "<r|g|b|bl> <0-255>"
        space = args.find(" ")
        if space < 0:
            self.out(usage_text("led", usage, args))
            return
        light, value_text = args[:space], args[space:].strip(" \r\n\t")
        if light not in ("r", "g", "b", "bl"):
            self.out(usage_text("led", usage, value_text))
            return
        if not value_text.isdigit() or int(value_text) >= 256:
            self.out(usage_text("led", usage, value_text))
            return
        self.state.leds[light] = int(value_text)
        self.state.led_log.append((light, int(value_text)))

    def cmd_power(self, args: str) -> None:
        sub, rest = read_word(args)
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
                self.out(usage_text("power_otg", "<1|0>", rest))
            return
        if sub == "3v3" and self.state.debug:
            if rest not in ("0", "1"):
                self.out(usage_text("power_ext", "<1|0>", rest))
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

    # --- bt (bt_cli.c) ---

    def cmd_bt(self, args: str) -> None:
        """``bt hci_info``; the radio tests (``tx_carrier``...) exist only in debug mode on a
        radio stack that supports them, and are not emulated: usage, as without them."""
        sub, _ = read_word(args)
        if sub == "hci_info":
            self.out(self.state.hci_info())
            return
        self.out("Usage:\r\nbt <cmd> <args>\r\nCmd list:\r\n\thci_info\t - HCI info\r\n")

    # --- loader (loader_cli.c) ---

    def cmd_loader(self, args: str) -> None:
        sub, rest = read_word(args)
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
            name, _ = read_quoted(rest)
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
