"""The Flipper's radios from its shell: ``subghz`` (``subghz_cli.c``), ``ir``
(``infrared_cli.c``) and the three NFC command sets (dev ``nfc detect``, Momentum's one-shot
``nfc scanner``, the newest firmware's NFC sub-shell, ``applications/main/nfc/cli/``)."""

from __future__ import annotations

import time

from firmware_bridges.emulators.flipper_radio_text import (
    IR_BITS,
    SUBGHZ_FREQUENCY_RANGE_STR,
    SUBGHZ_RX_USAGE,
    SUBGHZ_TX_USAGE,
    frequency_valid,
    tuned_frequency,
)
from firmware_bridges.emulators.flipper_shell import (
    ANSI_FG_BR_BLUE,
    ANSI_FG_BR_WHITE,
    ANSI_FG_RED,
    ANSI_FG_YELLOW,
    ANSI_RESET,
    NFC_SHELL_PROMPT,
    read_word,
    scan,
    scan_uints,
    usage_text,
)
from firmware_bridges.emulators.flipper_state import pop_next
from firmware_bridges.emulators.flipper_storage import FsError, StoragePort

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


SUBGHZ_RAW_FILE_TYPE = "Flipper SubGhz RAW File"
_RED, _GREEN, _YELLOW, _OFF = "\033[0;31m", "\033[0;32m", "\033[0;33m", "\033[0m"


def _whole(args: str, count: int, *, first_base: int = 10) -> bool:
    """``strint_to_uint32`` over ``count`` numbers: each must be there, and be a number up to
    the next space (a trailing word after them is not looked at)."""
    words = args.split()
    if len(words) < count:
        return False
    bases = [first_base] + [10] * (count - 1)
    return all(
        len(scan_uints(word, 1, base=base)) == 1 and _digits(word, base)
        for word, base in zip(words, bases, strict=False)
    )


def _digits(word: str, base: int) -> bool:
    text = word[2:] if base == 16 and word[:2].lower() == "0x" else word
    allowed = "0123456789abcdefABCDEF" if base == 16 else "0123456789"
    return bool(text) and all(ch in allowed for ch in text)


def _flipper_format_header(data: bytes) -> tuple[str, int] | None:
    """``flipper_format_read_header``: the ``Filetype`` and ``Version`` a file starts with."""
    lines = data.decode("utf-8", "replace").splitlines()
    fields = dict(line.split(": ", 1) for line in lines[:2] if ": " in line)
    filetype, version = fields.get("Filetype"), fields.get("Version", "")
    if filetype is None or not version.isdigit():
        return None
    return filetype, int(version)


class RadioPort(StoragePort):
    """The shell with ``subghz``, ``ir`` and ``nfc`` (and storage: ``decode_raw`` reads a
    file)."""

    # --- Sub-GHz (subghz_cli.c) ---

    def cmd_subghz(self, args: str) -> None:
        sub, rest = read_word(args)
        if sub == "rx":
            self._subghz_rx(rest)
        elif sub == "tx":
            self._subghz_tx(args, rest)
        elif sub == "rx_raw":
            self._subghz_rx_raw(rest)
        elif sub == "decode_raw":
            self._subghz_decode_raw(rest)
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
            "<device: 0 - CC1101_INT, 1 - CC1101_EXT>\t - Transmitting from file\r\n"
        )
        if self.state.debug:
            text += (
                "\r\n  debug cmd:\r\n"
                "\ttx_carrier <frequency:in Hz>\t - Transmitting carrier\r\n"
                "\trx_carrier <frequency:in Hz>\t - Receive carrier\r\n"
                "\tencrypt_keeloq <path_decrypted_file> <path_encrypted_file> "
                "<IV:16 bytes in hex>\t - Encrypt keeloq manufacture keys\r\n"
                "\tencrypt_raw <path_decrypted_file> <path_encrypted_file> "
                "<IV:16 bytes in hex>\t - Encrypt RAW data\r\n"
            )
        self.out(text)

    def _device(self, index: int) -> int:
        return 1 if index == 1 and self.state.external_cc1101 else 0

    def _subghz_rx(self, args: str) -> None:
        frequency, device = 433920000, 0
        if args:
            values = scan_uints(args, 2)
            frequency = values[0] if values else frequency
            device = values[1] if len(values) > 1 else device
            if not _whole(args, 2):
                self.out(usage_text("subghz rx", SUBGHZ_RX_USAGE, args))
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
            packet = pop_next(self.state.subghz_packets)
            if packet is not None:
                received += packet != "."
                self.out(packet)
        self.out(f"\r\nPackets received {received}\r\n")

    def _frequency_refused(self, frequency: int) -> bool:
        """The firmware's own refusal of a frequency outside the radio's bands."""
        if frequency_valid(frequency):
            return False
        self.out(f"Frequency must be in {SUBGHZ_FREQUENCY_RANGE_STR} range, not {frequency}\r\n")
        return True

    def _subghz_rx_raw(self, args: str) -> None:
        frequency = 433920000
        if args:
            values = scan_uints(args, 1)
            if not _whole(args, 1):
                self.out(usage_text("subghz rx", "<Frequency: in Hz>", args))
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
            values = scan(args, (16, 10, 10, 10, 10))
            parsed = [key, frequency, te, repeat, device]
            parsed[: len(values)] = values
            key, frequency, te, repeat, device = parsed
            if not _whole(args, 5, first_base=16):
                self.out(usage_text("subghz tx", SUBGHZ_TX_USAGE, args))
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

    def _subghz_decode_raw(self, args: str) -> None:
        """``subghz_cli_command_decode_raw``: the file (``/ext/subghz/test.sub`` by default)
        must be a RAW capture (``Filetype: Flipper SubGhz RAW File``, ``Version: 1``). A RAW
        file is replayed through no decoder here: the emulator has none, so it finds nothing."""
        name = read_word(args)[0] if args else "/ext/subghz/test.sub"
        try:
            _, data = self._file(name)
        except FsError:
            self.out(f"subghz decode_raw {_RED}Error open file{_OFF} {name}\r\n")
            return
        header = _flipper_format_header(data)
        if header is None:
            self.out(f"subghz decode_raw {_RED}Missing or incorrect header{_OFF}\r\n")
            return
        if header != (SUBGHZ_RAW_FILE_TYPE, 1):
            self.out(f"subghz decode_raw {_RED}Type or version mismatch{_OFF}\r\n")
            return
        self.out(
            f"Load_keystore keeloq_mfcodes {_GREEN}OK{_OFF}\r\n"
            f"Load_keystore keeloq_mfcodes_user {_YELLOW}Absent{_OFF}\r\n"
            f"Listening at {_YELLOW}{name}{_OFF}.\r\n\r\nPress CTRL+C to stop\r\n\r\n"
            f"\r\nPackets received {_GREEN}0{_OFF}\r\n"
        )

    # --- Infrared (infrared_cli.c) ---

    def _ir_usage(self) -> None:
        self.out(
            "Usage:\r\n\tir rx [raw]\r\n\tir tx <protocol> <address> <command>\r\n"
            "\t<command> and <address> are hex-formatted\r\n"
            "\tAvailable protocols: " + " ".join(IR_BITS) + "\r\n"
            "\tRaw format:\r\n"
            "\tir tx RAW F:<frequency> DC:<duty_cycle> <sample0> <sample1>...\r\n"
            "\tFrequency (10000 - 56000), Duty cycle (0 - 100), max 512 samples\r\n"
            "\tir decode <input_file> [<output_file>]\r\n"
            "\tir universal <remote_name> <signal_name>\r\n"
            "\tir universal list <remote_name>\r\n"
            "\tAvailable universal remotes: tv audio ac projectors\r\n"
        )

    def cmd_ir(self, args: str) -> None:
        sub, rest = read_word(args)
        if sub.startswith("rx"):
            if rest and rest != "raw":
                self.out("Wrong arguments.\r\n")
                self._ir_usage()
                return
            kind = "RAW" if rest == "raw" else ""
            self.out(f"Receiving {kind} INFRARED...\r\nPress Ctrl+C to abort\r\n")
            while not self.wait_etx(self.emu.event_interval):
                signal_line = pop_next(self.state.ir_signals)
                if signal_line is not None:
                    self.out(signal_line + "\r\n")
        elif sub.startswith("tx"):
            words = rest.split()
            valid = (
                len(words) >= 3
                and words[0] in IR_BITS
                and all(len(scan_uints(w, 1, base=16)) == 1 for w in words[1:3])
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
        style = self.state.nfc_command_set()
        if style == "shell":
            self._nfc_shell()
            return
        if self.state.running_app is not None:  # these firmwares register nfc as not parallel safe
            self.out(
                f"{ANSI_FG_RED}this command cannot be run while an application is open{ANSI_RESET}"
            )
            return
        sub, _ = read_word(args)
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
        self.prompt, self.commands = NFC_SHELL_PROMPT, self.emu.NFC_SHELL_COMMANDS
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
            tag = pop_next(self.state.nfc_tags)
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
