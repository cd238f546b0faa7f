"""The Flipper Zero CLI emulator, driven through REAL pyserial on its pseudo-terminal.

Every expectation here is a byte string taken from the firmware sources cited in the module's
docstring, so a driver tested against the emulator is tested against the
device's bytes. Timeouts are generous serial timeouts: nothing here races a clock.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from firmware_bridges.emulators.flipper import (
    BACKSPACE_ECHO,
    NFC_SHELL_MOTD,
    NFC_SHELL_PROMPT,
    PROMPT,
    FlipperEmulator,
    FlipperState,
    ir_decoded,
    motd,
    princeton_packet,
    tuned_frequency,
)
from harness.waits import until_sync

TIMEOUT = 5.0
# How long a process may take to exit on a busy machine: a deadline, not a timing claim.
EXIT_WAIT_S = 60.0
RED_UNKNOWN = b"\x1b[31mcould not find command `%s`, try `help`\x1b[0m"


@pytest.fixture
def emulator() -> Iterator[FlipperEmulator]:
    emu = FlipperEmulator()
    emu.start()
    yield emu
    emu.stop()


def connect(path: str | Path) -> serial.Serial:
    """Open the port like a driver does and read the banner up to the first prompt."""
    port = serial.Serial(str(path), baudrate=115200, timeout=TIMEOUT)
    banner = port.read_until(PROMPT)
    assert banner.endswith(PROMPT), banner
    return port


@pytest.fixture
def port(emulator: FlipperEmulator) -> Iterator[serial.Serial]:
    assert emulator.path is not None
    client = connect(emulator.path)
    yield client
    client.close()


def until(port: serial.Serial, expected: bytes) -> bytes:
    data: bytes = port.read_until(expected)
    assert data.endswith(expected), data
    return data


def run(port: serial.Serial, command: str) -> bytes:
    """Send a command line; return what came back between the echo's CR LF and the prompt."""
    port.write(command.encode() + b"\r")
    data = until(port, PROMPT)
    echo = command.encode() + b"\r\n"
    assert data.startswith(echo), data
    return data[len(echo) : -len(PROMPT)]


def table(output: bytes) -> dict[str, str]:
    """Parse ``%-30s: %s\\r\\n`` lines, checking the padding byte for byte."""
    rows: dict[str, str] = {}
    for line in output.decode().split("\r\n")[:-1]:
        key, value = line[:30], line[32:]
        assert line[30:32] == ": ", line
        assert key == key.rstrip().ljust(30), line
        rows[key.rstrip()] = value
    assert output.endswith(b"\r\n")
    return rows


# --- the shell -------------------------------------------------------------------------------


def test_banner_and_prompt_on_open(emulator: FlipperEmulator) -> None:
    assert emulator.path is not None
    with serial.Serial(emulator.path, timeout=TIMEOUT) as client:
        data = client.read_until(PROMPT)
    assert data == motd(emulator.state) + PROMPT
    assert data.startswith(b"\x1b[38;2;255;130;0m\r\n")
    assert b"\x1b[97mWelcome to Flipper Zero Command Line Interface!\r\n" in data
    assert b"\x1b[0mFirmware version: 1.4.3 1.4.3 (8622f1a2 built on 05-12-2025)\r\n" in data


def test_every_open_is_a_new_session_with_its_banner(emulator: FlipperEmulator) -> None:
    assert emulator.path is not None
    first = connect(emulator.path)
    first.write(b"uptim")  # a half-typed line dies with the session
    until(first, b"uptim")
    first.close()
    second = connect(emulator.path)
    assert run(second, "x") == RED_UNKNOWN % b"x"
    second.close()


def test_echo_and_carriage_return(port: serial.Serial) -> None:
    port.write(b"uptime\r")
    data = until(port, PROMPT)
    assert re.fullmatch(rb"uptime\r\nUptime: \d+h\d+m\d+s\r\n>: ", data), data


def test_line_feed_is_ignored(port: serial.Serial, emulator: FlipperEmulator) -> None:
    port.write(b"\n\n\r")
    assert until(port, PROMPT) == PROMPT  # an empty line: just a new prompt
    port.write(b"fr\nee\r\n")
    assert until(port, PROMPT).startswith(b"free\r\nFree heap size: ")
    port.write(b"\r")
    assert until(port, PROMPT) == PROMPT
    assert emulator.sent == ["free"]


def test_backspace_and_del_edit_the_line(port: serial.Serial, emulator: FlipperEmulator) -> None:
    port.write(b"\x7f")
    assert port.read(1) == b"\x07"  # nothing to erase: bell
    port.write(b"uptimX\x7fe\r")
    data = until(port, PROMPT)
    assert data.startswith(b"uptimX" + BACKSPACE_ECHO + b"e\r\nUptime: ")
    port.write(b"fre\x08\x08ree\r")
    assert until(port, PROMPT).startswith(b"fre" + BACKSPACE_ECHO * 2 + b"ree\r\nFree heap")
    assert emulator.sent == ["uptime", "free"]


def test_ctrl_c_at_the_prompt(port: serial.Serial, emulator: FlipperEmulator) -> None:
    port.write(b"\x03")
    assert until(port, PROMPT) == b"^C" + PROMPT
    port.write(b"abc\x03")
    assert until(port, PROMPT) == b"abc^C" + PROMPT
    port.write(b"\r")  # the line was reset: nothing runs
    assert until(port, PROMPT) == PROMPT
    assert emulator.sent == []


def test_unknown_command_is_the_red_line(port: serial.Serial) -> None:
    assert run(port, "frobnicate now") == RED_UNKNOWN % b"frobnicate"


def test_help_lists_commands_in_three_columns(port: serial.Serial) -> None:
    data = run(port, "help")
    assert data.startswith(b"Available commands:\r\n\x1b[32m")
    assert data.endswith(b"\x1b[0m\r\nFind out more: https://docs.flipper.net/development/cli")
    assert b"device_info" + b" " * 19 in data
    assert run(port, "?") == data


def test_sent_records_executed_lines(port: serial.Serial, emulator: FlipperEmulator) -> None:
    run(port, "  uptime  ")
    run(port, "nope")
    port.write(b"\r")
    until(port, PROMPT)
    assert emulator.sent == ["uptime", "nope"]
    assert bytes(emulator.received).endswith(b"nope\r\r")


# --- core commands ----------------------------------------------------------------------------


def test_device_info_is_a_padded_table(port: serial.Serial) -> None:
    data = run(port, "device_info")
    rows = table(data)
    assert list(rows)[:3] == ["device_info_major", "device_info_minor", "hardware_model"]
    assert rows["device_info_major"] == "2"
    assert rows["hardware_name"] == "Unyana"
    assert rows["firmware_version"] == "1.4.3"
    assert rows["firmware_commit"] == "8622f1a2"
    assert rows["radio_ble_mac"] == "32880126E180"
    assert rows["enclave_valid_keys"] == "10"
    assert (rows["protobuf_version_major"], rows["protobuf_version_minor"]) == ("0", "25")
    assert list(rows)[-1] == "protobuf_version_minor"
    assert run(port, "!") == data


def test_info_device_uses_dotted_keys(port: serial.Serial) -> None:
    rows = table(run(port, "info device"))
    assert rows["format.major"] == "3"
    assert rows["hardware.name"] == "Unyana"
    assert rows["hardware.region.builtin"] == "2"
    assert rows["firmware.commit.hash"] == "8622f1a2"
    assert rows["firmware.branch.name"] == "1.4.3"
    assert rows["enclave.keys.valid"] == "10"
    assert rows["protobuf.version.minor"] == "25"


def test_info_power(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.state.charge_level = 42
    emulator.state.charge_state = "charging"
    rows = table(run(port, "info power"))
    assert rows == {
        "format.major": "2",
        "format.minor": "1",
        "charge.level": "42",
        "charge.state": "charging",
        "charge.voltage.limit": "4208",
        "battery.voltage": "4021",
        "battery.current": "-112",
        "battery.temp": "27",
        "battery.health": "100",
        "capacity.remain": "1826",
        "capacity.full": "2100",
        "capacity.design": "2100",
    }
    assert run(port, "info bogus") == (
        b"info: illegal option -- bogus\r\nusage: info <device|power|power_debug>"
    )


def test_power_info_is_not_a_command_on_current_firmware(port: serial.Serial) -> None:
    data = run(port, "power info")
    assert data.startswith(b"Usage:\r\npower <cmd> <args>\r\nCmd list:\r\n\toff\t - shutdown")
    assert b"charge" not in data
    assert run(port, "power 5v 2") == b"power_otg: illegal option -- 2\r\nusage: power_otg <1|0>"


def test_uptime_date_free(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.state.uptime_offset = 3723
    assert re.fullmatch(rb"Uptime: 1h2m\d+s", run(port, "uptime"))
    assert re.fullmatch(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [1-7]", run(port, "date"))
    assert run(port, "date 2024-02-29 13:14:15 4") == b"New datetime is: 2024-02-29 13:14:15 4"
    assert run(port, "date").startswith(b"2024-02-29 13:14:")
    assert run(port, "free") == (
        b"Free heap size: 136248\r\nTotal heap size: 189536\r\nMinimum heap size: 128040\r\n"
        b"Maximum heap block: 131072\r\nPool free: 18432\r\nMaximum pool block: 12288\r\n"
    )


def test_vibro_and_led_reach_the_log(port: serial.Serial, emulator: FlipperEmulator) -> None:
    assert run(port, "vibro 1") == b""
    assert run(port, "vibro 0") == b""
    assert run(port, "led g 255") == b""
    assert run(port, "led bl 300") == b"led: illegal option -- 300\r\nusage: led <r|g|b|bl> <0-255>"
    assert run(port, "vibro 2") == b"vibro: illegal option -- 2\r\nusage: vibro <1|0>"
    assert emulator.state.vibro_log == [True, False]
    assert emulator.state.led_log == [("g", 255)]
    emulator.state.stealth_mode = True
    assert run(port, "vibro 1").startswith(b"Flipper is in stealth mode.")
    assert emulator.state.vibro_log == [True, False]


def test_loader_and_the_app_lock(port: serial.Serial, emulator: FlipperEmulator) -> None:
    listing = run(port, "loader list")
    assert listing.startswith(b"Apps:\r\n\tSub-GHz\r\n\t125 kHz RFID\r\n\tNFC\r\n")
    assert b"Settings:\r\n\tBluetooth\r\n" in listing
    assert run(port, "loader info") == b"No application is running\r\n"
    assert run(port, "loader open NFC") == b""
    assert run(port, "loader info") == b'Application "NFC" is running\r\n'
    assert run(port, "subghz rx") == (
        b"\x1b[31mthis command cannot be run while an application is open\x1b[0m"
    )
    assert run(port, "loader close") == b'Application "NFC" was closed\r\n'
    assert emulator.state.running_app is None


# --- storage ----------------------------------------------------------------------------------


def test_storage_list_formats(port: serial.Serial) -> None:
    assert run(port, "storage list /") == b"\t[D] int\r\n\t[D] ext\r\n\t[D] any\r\n"
    ext = run(port, "storage list /ext")
    assert ext.startswith(b"\t[D] subghz\r\n\t[D] infrared\r\n\t[D] nfc\r\n")
    size = len(FlipperState().files["/ext/subghz/garage.sub"] or b"")
    assert run(port, "storage list /ext/subghz") == b"\t[F] garage.sub %db\r\n" % size
    assert run(port, "storage list /any/subghz") == b"\t[F] garage.sub %db\r\n" % size
    assert run(port, "storage list /ext/lfrfid") == b"\tEmpty\r\n"
    assert run(port, "storage list /ext/nothing") == b"Storage error: file/dir not exist\r\n"
    assert run(port, "storage list /home") == b"Storage error: invalid name/path\r\n"
    assert run(port, "storage list").startswith(b"Usage:\r\nstorage <cmd> <path> <args>\r\n")


def test_storage_stat_read_and_info(port: serial.Serial, emulator: FlipperEmulator) -> None:
    content = emulator.state.files["/ext/infrared/tv.ir"]
    assert content is not None
    assert run(port, "storage stat /ext/infrared/tv.ir") == b"File, size: %db\r\n" % len(content)
    assert run(port, "storage stat /ext/infrared") == b"Directory\r\n"
    assert run(port, "storage stat /") == b"Storage\r\n"
    ext_stat = run(port, "storage stat /ext")
    assert re.fullmatch(rb"Storage, 62367744KiB total, \d+KiB free\r\n", ext_stat)
    assert re.fullmatch(rb"Storage, 260KiB total, \d+KiB free\r\n", run(port, "storage stat /int"))
    assert run(port, "storage read /ext/infrared/tv.ir") == (
        b"Size: %d\r\n" % len(content) + content + b"\r\n"
    )
    assert run(port, 'storage read "/ext/infrared/tv.ir"').startswith(b"Size: ")
    assert run(port, "storage read /ext/none.txt") == b"Storage error: file/dir not exist\r\n"
    info = run(port, "storage info /int")
    assert re.fullmatch(
        rb"Label: Unyana\r\nType: LittleFS\r\n260KiB total\r\n\d+KiB free\r\n", info
    )
    assert run(port, "storage info /ext").startswith(b"Label: FLIPPER SD\r\nType: FAT32\r\n")


def test_storage_mkdir_write_md5_remove(port: serial.Serial, emulator: FlipperEmulator) -> None:
    assert run(port, "storage mkdir /ext/hub") == b""
    assert run(port, "storage mkdir /ext/hub") == b"Storage error: file/dir already exist\r\n"
    assert run(port, "storage mkdir /ext/a/b") == b"Storage error: file/dir not exist\r\n"
    port.write(b"storage write_chunk /ext/hub/x.txt 5\r")
    assert until(port, b"Ready\r\n") == b"storage write_chunk /ext/hub/x.txt 5\r\nReady\r\n"
    port.write(b"hello")
    assert until(port, PROMPT) == PROMPT
    assert emulator.state.files["/ext/hub/x.txt"] == b"hello"
    assert run(port, "storage md5 /ext/hub/x.txt") == b"5d41402abc4b2a76b9719d911017c592\r\n"
    assert run(port, "storage remove /ext/hub") == b"Storage error: access denied\r\n"
    assert run(port, "storage remove /ext/hub/x.txt") == b""
    assert run(port, "storage remove /ext/hub") == b""
    assert run(port, "storage remove /ext/hub") == b"Storage error: file/dir not exist\r\n"
    assert "/ext/hub" not in emulator.state.files


def test_storage_read_chunks(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.state.put_file("/ext/data.bin", b"0123456789")
    port.write(b"storage read_chunks /ext/data.bin 4\r")
    until(port, b"Size: 10\r\n\r\nReady?\r\n")
    chunks = []
    for expected in (4, 4, 2):
        port.write(b"\n")
        chunks.append(port.read(expected))
        if expected == 4:
            until(port, b"\r\nReady?\r\n")
    assert until(port, PROMPT) == b"\r\n" + PROMPT
    assert b"".join(chunks) == b"0123456789"


# --- radios -----------------------------------------------------------------------------------


def test_subghz_rx_streams_packets_until_ctrl_c(
    port: serial.Serial, emulator: FlipperEmulator
) -> None:
    packet = princeton_packet(0x35F0C8)
    assert packet == (
        "Princeton 24bit\r\nKey:0x0035F0C8\r\nYek:0x00130FAC\r\nSn:0x35F0C Btn:8\r\nTe:400us\r\n"
    )
    port.write(b"subghz rx 433920000 0\r")
    assert until(port, b"Press CTRL+C to stop\r\n") == (
        b"subghz rx 433920000 0\r\n"
        b"Listening at frequency: 433919830 device: 0. Press CTRL+C to stop\r\n"
    )
    assert until(port, b"Te:400us\r\n") == packet.encode()
    assert until(port, b"Te:400us\r\n") == packet.encode()
    emulator.push_subghz(".")  # a signal reset: printed, not counted
    emulator.push_subghz(princeton_packet(0xABCDEF, te=350))
    assert until(port, b"Te:350us\r\n") == b"." + princeton_packet(0xABCDEF, te=350).encode()
    port.write(b"ignored\x03\r")  # bytes before the ETX are swallowed, the CR reaches the shell
    assert until(port, PROMPT) == b"\r\nPackets received 3\r\n" + PROMPT
    assert until(port, PROMPT) == PROMPT
    assert emulator.sent == ["subghz rx 433920000 0"]
    assert tuned_frequency(868350000) == 868349853


def test_subghz_rx_with_defaults_and_argument_errors(
    port: serial.Serial, emulator: FlipperEmulator
) -> None:
    assert run(port, "subghz rx 433920000") == (
        b"subghz rx: illegal option -- 433920000\r\n"
        b"usage: subghz rx <Frequency: in Hz> <Device: 0 - CC1101_INT, 1 - CC1101_EXT>"
    )
    assert run(port, "subghz rx 100000000 0") == (
        b"Frequency must be in 299999755...348000000 or 386999938...464000000 or "
        b"778999847...928000000 range, not 100000000\r\n"
    )
    emulator.state.subghz_packets.clear()  # nothing on the air
    port.write(b"subghz rx\r")  # no argument: 433.92 MHz on the internal CC1101
    until(port, b"Listening at frequency: 433919830 device: 0. Press CTRL+C to stop\r\n")
    port.write(b"\x03")
    assert until(port, PROMPT) == b"\r\nPackets received 0\r\n" + PROMPT
    port.write(b"subghz rx 315000000 1\r")  # no external CC1101: falls back to device 0
    until(port, b"Listening at frequency: 314999664 device: 0. Press CTRL+C to stop\r\n")
    port.write(b"\x03")
    assert until(port, PROMPT) == b"\r\nPackets received 0\r\n" + PROMPT
    assert run(port, "subghz").startswith(b"Usage:\r\nsubghz <cmd> <args>\r\nCmd list:\r\n")


def test_ir_rx_streams_decoded_signals(port: serial.Serial, emulator: FlipperEmulator) -> None:
    assert ir_decoded("NEC", 0x04, 0x08) == "NEC, A:0x04, C:0x08"
    assert ir_decoded("NECext", 0xFF00, 0x20DF, repeat=True) == "NECext, A:0xFF00, C:0x20DF R"
    port.write(b"ir rx\r")
    # The firmware formats "Receiving %s INFRARED..." with an empty %s: two spaces.
    header = until(port, b"abort\r\n")
    assert header == b"ir rx\r\nReceiving  INFRARED...\r\nPress Ctrl+C to abort\r\n"
    assert until(port, b"\r\n") == b"NEC, A:0x04, C:0x08\r\n"
    assert until(port, b"\r\n") == b"NEC, A:0x04, C:0x08 R\r\n"
    emulator.push_ir(ir_decoded("Samsung32", 0x07, 0x02))
    assert until(port, b"\r\n") == b"Samsung32, A:0x07, C:0x02\r\n"
    port.write(b"\x03")
    assert until(port, PROMPT) == PROMPT
    assert run(port, "ir rx nope").startswith(b"Wrong arguments.\r\nUsage:\r\n\tir rx [raw]\r\n")


@pytest.mark.parametrize("style", ["detect", "scanner"])
def test_nfc_command_set_depends_on_firmware(style: str) -> None:
    state = FlipperState(nfc_style="detect" if style == "detect" else "scanner")
    with FlipperEmulator(state) as emu:
        assert emu.path is not None
        client = connect(emu.path)
        other = "scanner" if style == "detect" else "detect"
        wrong = run(client, f"nfc {other}")
        if style == "detect":  # the dev firmware prints its usage for an unknown sub-command
            assert wrong.startswith(b"Usage:\r\nnfc <cmd>\r\nCmd list:\r\n\tdetect\t - detect")
            assert run(client, "nfc detect") == (
                b"Press Ctrl+C to abort\r\n\nDetected 2 protocols:\r\niso14443-3a\r\nmfu\r\n"
            )
        else:
            assert wrong == RED_UNKNOWN % b"detect"
            assert run(client, "nfc scanner") == (
                b"Press Ctrl+C to abort\r\n\nProtocols detected: iso14443-3a, mfu"
            )
        # Nothing on the reader: only Ctrl+C ends the scan.
        client.write(f"nfc {style}\r".encode())
        until(client, b"Press Ctrl+C to abort\r\n\n")
        client.write(b"\x03")
        tail = until(client, PROMPT)
        assert tail == (PROMPT if style == "detect" else b"Protocols detected: " + PROMPT)
        client.close()


def test_nfc_sub_shell_of_the_newest_firmware() -> None:
    """``nfc`` (arguments ignored) opens a shell with its own banner and ``[nfc]>: `` prompt;
    ``scanner`` scans, ``help`` lists, unknown lines are the red line, ``exit`` prints no prompt of
    its own and the main shell's ``>: `` follows."""
    with FlipperEmulator(FlipperState(nfc_style="shell")) as emu:
        assert emu.path is not None
        client = connect(emu.path)
        client.write(b"nfc scanner\r")
        opened = until(client, NFC_SHELL_PROMPT)
        assert opened == b"nfc scanner\r\n" + NFC_SHELL_MOTD.encode() + NFC_SHELL_PROMPT
        assert NFC_SHELL_PROMPT == b"\r\n[\x1b[32mnfc\x1b[0m]>: "
        client.write(b"scanner\r")
        scanned = until(client, NFC_SHELL_PROMPT)
        assert scanned == (
            b"scanner\r\nPress Ctrl+C to abort\r\n\nProtocols detected: iso14443-3a, mfu"
            + NFC_SHELL_PROMPT
        )
        client.write(b"help\r")
        listed = until(client, NFC_SHELL_PROMPT)
        assert b"scanner" in listed and b"exit" in listed and b"device_info" not in listed
        client.write(b"device_info\r")
        assert until(client, NFC_SHELL_PROMPT).endswith(
            RED_UNKNOWN % b"device_info" + NFC_SHELL_PROMPT
        )
        client.write(b"scanner\r")  # nothing on the reader: Ctrl+C ends it
        until(client, b"Press Ctrl+C to abort\r\n\n")
        client.write(b"\x03")
        assert until(client, NFC_SHELL_PROMPT) == b"Protocols detected: " + NFC_SHELL_PROMPT
        client.write(b"exit\r")
        assert until(client, PROMPT) == b"exit\r\n" + PROMPT
        assert b"Uptime" in run(client, "uptime")
        client.close()
        assert emu.sent == [
            "nfc scanner",
            "scanner",
            "help",
            "device_info",
            "scanner",
            "exit",
            "uptime",
        ]


def test_transmit_commands_exist_and_are_logged(
    port: serial.Serial, emulator: FlipperEmulator
) -> None:
    sent = run(port, "subghz tx 35F0C8 433920000 400 1 0")
    assert sent.startswith(
        b"Transmitting at 433920000, key 35f0c8, te 400, repeat 1 device 0. "
        b"Press CTRL+C to stop\r\n."
    )
    assert run(port, "ir tx NEC 04 08") == b""
    emulator.state.nfc_style = "scanner"  # a fork's one-shot NFC commands
    port.write(b"nfc emulate\r")
    until(port, b"Press Ctrl+C to abort\r\n")
    port.write(b"\x03")
    until(port, PROMPT)
    assert emulator.state.transmit_log == [
        "subghz tx 35F0C8 433920000 400 1 0",
        "ir tx NEC 04 08",
        "nfc emulate",
    ]


# --- unplug, replug, link, power --------------------------------------------------------------


def test_unplug_makes_the_client_fail_and_replug_brings_a_new_node(tmp_path: Path) -> None:
    link = tmp_path / "flipper"
    with FlipperEmulator(link=link) as emu:
        old = emu.path
        assert old is not None
        assert os.readlink(link) == old
        client = connect(link)
        assert run(client, "uptime").startswith(b"Uptime: ")

        emu.unplug()
        assert not emu.plugged and emu.path is None
        with pytest.raises(serial.SerialException, match="returned no data"):
            client.read(1)  # the hung-up slave reads EOF: pyserial raises
        with pytest.raises(serial.SerialException, match=r"write failed: \[Errno 5\]"):
            client.write(b"uptime\r")
        assert not os.path.exists(old)  # the node vanished
        assert not link.is_symlink()  # and so did the stable link

        new = emu.replug()  # the old client still holds its fd, so the number differs
        assert new != old and emu.path == new
        assert os.readlink(link) == new
        client.close()
        again = connect(link)  # a driver pinned to the link just reopens it
        assert run(again, "uptime").startswith(b"Uptime: ")
        again.close()
    assert not link.exists()


def test_unplug_seen_by_a_raw_file_descriptor(emulator: FlipperEmulator) -> None:
    assert emulator.path is not None
    fd = os.open(emulator.path, os.O_RDWR | os.O_NOCTTY)
    try:
        emulator.unplug()
        assert os.read(fd, 10) == b""  # EOF, not EIO, for reads
        with pytest.raises(OSError) as excinfo:
            os.write(fd, b"x")
        assert excinfo.value.errno == errno.EIO
    finally:
        os.close(fd)


def test_power_reboot_reenumerates_on_a_new_pty(tmp_path: Path) -> None:
    link = tmp_path / "flipper"
    with FlipperEmulator(link=link, reboot_delay=0.1) as emu:
        old = emu.path
        client = connect(link)
        client.write(b"power reboot\r")
        with pytest.raises(serial.SerialException):
            while True:
                client.read(1)
        until_sync(lambda: emu.path not in (None, old), TIMEOUT, "the device came back")
        client.close()
        assert os.readlink(link) == emu.path
        again = connect(link)
        assert re.fullmatch(rb"Uptime: 0h0m\ds", run(again, "uptime"))
        again.close()
        assert emu.state.power_log == ["reboot"]


# --- fault knobs ------------------------------------------------------------------------------


def test_garbage_next(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.garbage_next(b"\x00\xffJUNK")
    assert run(port, "uptime").startswith(b"\x00\xffJUNKUptime: ")
    assert run(port, "uptime").startswith(b"Uptime: ")


def test_mute_prompt_next(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.mute_prompt_next()
    port.write(b"uptime\r")
    port.write(b"free\r")
    data = until(port, PROMPT)
    assert data.count(PROMPT) == 1
    assert re.match(rb"uptime\r\nUptime: \d+h\d+m\d+sfree\r\nFree heap size", data), data


def test_stall_next_until_the_port_is_reopened(emulator: FlipperEmulator) -> None:
    assert emulator.path is not None
    client = connect(emulator.path)
    emulator.stall_next()
    client.write(b"uptime\r")
    assert until(client, b"uptime\r\n") == b"uptime\r\n"
    client.timeout = 0.3
    client.write(b"\x03\r")
    assert client.read(100) == b""  # no answer, no prompt, no echo: the command hangs
    client.close()
    again = connect(emulator.path)  # a new session recovers
    assert run(again, "uptime").startswith(b"Uptime: ")
    again.close()
    assert emulator.sent == ["uptime", "uptime"]


def test_stall_next_recovered_by_ctrl_c(port: serial.Serial, emulator: FlipperEmulator) -> None:
    emulator.stall_next(ctrl_c_recovers=True)
    port.write(b"free\r")
    until(port, b"free\r\n")
    port.write(b"\x03")
    assert until(port, PROMPT) == PROMPT
    assert run(port, "uptime").startswith(b"Uptime: ")


# --- the module entry point -------------------------------------------------------------------


def test_main_prints_the_path_and_runs_until_ctrl_c() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "firmware_bridges.emulators.flipper", "--name", "Tester"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert process.stdout is not None
        path = process.stdout.readline().strip()
        assert path.startswith("/dev/pts/")
        client = connect(path)
        assert table(run(client, "device_info"))["hardware_name"] == "Tester"
        client.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=EXIT_WAIT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
