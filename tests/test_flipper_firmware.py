"""The Flipper emulator held to what the firmware's own code does, through clients we did not
write: the official protobuf messages (``tests/flipper_official``, with the storage fields of
protobuf 0.19 on) and pyflipper. Each test is one place where the emulator used to answer
otherwise than the firmware (``rpc_storage.c``, ``storage_processing.c``, ``storage_cli.c``,
``subghz_cli.c``, ``bt_cli.c``, ``rpc_property.c``, the NFC command set of 1.4.x)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import serial

from firmware_bridges.emulators.flipper import PROMPT, FlipperEmulator, FlipperState
from tests.flipper_official import flipper_pb2
from tests.flipper_official.client import OfficialClient as Rpc
from tests.flipper_official.current import Main as CurrentMain
from tests.test_flipper_pyflipper import connect

STATUS = flipper_pb2.CommandStatus
RED, OFF = b"\x1b[0;31m", b"\x1b[0m"


@pytest.fixture
def emulator() -> Iterator[FlipperEmulator]:
    with FlipperEmulator(FlipperState()) as device:
        yield device


@pytest.fixture
def shell(emulator: FlipperEmulator) -> Iterator[serial.Serial]:
    assert emulator.path is not None
    port = serial.Serial(emulator.path, timeout=10.0)
    assert port.read_until(PROMPT).endswith(PROMPT)
    yield port
    port.close()


@pytest.fixture
def rpc(shell: serial.Serial) -> Rpc:
    shell.write(b"start_rpc_session\r")
    assert shell.read_until(b"\n") == b"start_rpc_session\r\n"
    return Rpc(shell)


def run(port: serial.Serial, command: str) -> bytes:
    """The output of one command, between its echo and the next prompt."""
    port.write(command.encode() + b"\r")
    echo = port.read_until(b"\r\n")
    assert echo == command.encode() + b"\r\n", echo
    return port.read_until(PROMPT)[: -len(PROMPT)]


def _path(name: str, path: str) -> Callable[[Any], None]:
    def fill(message: Any) -> None:
        getattr(message, name).path = path

    return fill


# 1 -----------------------------------------------------------------------------------------------


def test_rpc_stat_of_the_root_is_an_invalid_name(rpc: Rpc, shell: serial.Serial) -> None:
    """``storage_common_stat("/")``: no storage owns ``/`` (``storage_get_data``)."""
    (answer,) = rpc.call(_path("storage_stat_request", "/"))
    assert answer.command_status == STATUS.Value("ERROR_STORAGE_INVALID_NAME") == 10
    assert answer.WhichOneof("content") == "empty"


# 2, 3 --------------------------------------------------------------------------------------------


def test_list_with_md5_and_a_size_filter(rpc: Rpc, emulator: FlipperEmulator) -> None:
    state = emulator.state
    state.put_file("/ext/lab/small.txt", b"tiny")
    state.put_file("/ext/lab/large.bin", bytes(5000))
    state.files["/ext/lab/sub"] = None

    def listing(md5: bool, max_size: int) -> Callable[[Any], None]:
        def fill(message: Any) -> None:
            message.storage_list_request.path = "/ext/lab"
            message.storage_list_request.include_md5 = md5
            message.storage_list_request.filter_max_size = max_size

        return fill

    (every,) = rpc.call(listing(True, 0), CurrentMain)
    found = {f.name: (f.type, f.size, f.md5sum) for f in every.storage_list_response.file}
    assert found == {
        "small.txt": (0, 4, hashlib.md5(b"tiny").hexdigest()),
        "large.bin": (0, 5000, hashlib.md5(bytes(5000)).hexdigest()),
        "sub": (1, 0, ""),
    }
    (small,) = rpc.call(listing(False, 100), CurrentMain)
    kept = {f.name: f.md5sum for f in small.storage_list_response.file}
    assert kept == {"small.txt": "", "sub": ""}, "over 100 bytes is left out; no md5 unasked"


# 4 -----------------------------------------------------------------------------------------------


def test_the_storage_timestamp_moves_on_every_write(
    shell: serial.Serial, emulator: FlipperEmulator
) -> None:
    state = emulator.state
    booted = state.stamp("/ext")
    assert run(shell, "storage timestamp /ext/missing") == f"Timestamp {booted}\r\n".encode()
    assert run(shell, "storage timestamp /etc/passwd") == b"Invalid arguments\r\n"
    state.clock_offset = timedelta(seconds=1000)  # the device clock, later
    assert run(shell, "storage mkdir /ext/new") == b""
    later = state.stamp("/ext")
    assert later >= booted + 1000
    assert run(shell, "storage timestamp /ext/anything") == f"Timestamp {later}\r\n".encode()
    assert run(shell, "storage timestamp /int") == f"Timestamp {state.stamp('/int')}\r\n".encode()
    assert state.stamp("/int") < later, "a write on the card leaves the internal storage's"
    state.clock_offset = timedelta(seconds=2000)
    shell.write(b"storage write /ext/new/note.txt\r")
    shell.read_until(b"exit by Ctrl+C.\r\n")
    shell.write(b"hi\x03")
    shell.read_until(PROMPT)
    assert state.stamp("/ext") >= booted + 2000


def test_rpc_timestamp_answers_for_any_path_on_a_storage(
    rpc: Rpc, emulator: FlipperEmulator
) -> None:
    (missing,) = rpc.call(_path("storage_timestamp_request", "/ext/nothing/here"))
    assert missing.command_status == STATUS.Value("OK")
    assert missing.storage_timestamp_response.timestamp == emulator.state.stamp("/ext")
    (bad,) = rpc.call(_path("storage_timestamp_request", "/nowhere"))
    assert bad.command_status == STATUS.Value("ERROR_STORAGE_INVALID_NAME")


# 5 -----------------------------------------------------------------------------------------------


def test_bt_hci_info_through_pyflipper(emulator: FlipperEmulator) -> None:
    info = connect(emulator).bt.info()
    hci, revision, lmp, maker, subversion = emulator.state.hci_version
    assert info == {
        "Ret": 0,
        "HCI_Version": hci,
        "HCI_Revision": revision,
        "LMP_PAL_Version": lmp,
        "Manufacturer_Name": maker,
        "LMP_PAL_Subversion": subversion,
    }


def test_subghz_decode_raw_checks_the_file_as_the_firmware_does(shell: serial.Serial) -> None:
    assert run(shell, "subghz decode_raw /ext/subghz/garage.sub") == (
        b"subghz decode_raw " + RED + b"Type or version mismatch" + OFF + b"\r\n"
    )
    assert run(shell, "subghz decode_raw") == (
        b"subghz decode_raw " + RED + b"Error open file" + OFF + b" /ext/subghz/test.sub\r\n"
    )


def test_subghz_usage_is_the_current_firmwares(
    shell: serial.Serial, emulator: FlipperEmulator
) -> None:
    usage = run(shell, "subghz")
    assert usage.endswith(
        b"\ttx_from_file <file_name: path_file> <repeat: count> <device: 0 - CC1101_INT, "
        b"1 - CC1101_EXT>\t - Transmitting from file\r\n"
    )
    emulator.state.debug = True
    debug = run(shell, "subghz")
    assert b"\ttx_carrier <frequency:in Hz>\t - Transmitting carrier\r\n" in debug
    assert b"\tencrypt_raw <path_decrypted_file>" in debug
    assert run(shell, "subghz rx 433920000").startswith(b"subghz rx: illegal option")


def test_property_get_answers_as_rpc_property_c(rpc: Rpc, emulator: FlipperEmulator) -> None:
    def key(name: str) -> Callable[[Any], None]:
        return lambda m: setattr(m.property_get_request, "key", name)

    parts = rpc.call(key("devinfo.hardware"))
    *rows, end = parts
    wanted = [(k, v) for k, v in emulator.state.device_info(".") if k.startswith("hardware")]
    assert [(p.property_get_response.key, p.property_get_response.value) for p in rows] == wanted
    assert all(p.has_next for p in rows)
    assert (end.command_status, end.WhichOneof("content")) == (STATUS.Value("OK"), "empty")
    *power, _ = rpc.call(key("pwrinfo"))
    assert [(p.property_get_response.key, p.property_get_response.value) for p in power] == (
        emulator.state.power_info(".")
    )
    (refused,) = rpc.call(key("system.nothing"))
    assert refused.command_status == STATUS.Value("ERROR_INVALID_PARAMETERS")


# 6 -----------------------------------------------------------------------------------------------


def test_nfc_follows_the_firmware_the_emulator_claims() -> None:
    official = FlipperState()
    assert (official.firmware_origin_fork, official.firmware_version) == ("Official", "1.4.3")
    with FlipperEmulator(official) as device:
        found = connect(device).nfc.scan(timeout=3)
        assert found is not None and found["protocols"] == ["iso14443-3a", "mfu"]
    assert FlipperState(firmware_origin_fork="Momentum").nfc_command_set() == "scanner"
    assert FlipperState(nfc_style="detect").nfc_command_set() == "detect"


# 7 -----------------------------------------------------------------------------------------------


def test_reading_an_empty_file_carries_an_empty_data_field(
    rpc: Rpc, emulator: FlipperEmulator
) -> None:
    """nanopb writes the pointer field ``data`` the firmware set, empty as it is."""
    emulator.state.put_file("/ext/empty.txt", b"")
    command_id = rpc.send(_path("storage_read_request", "/ext/empty.txt"))
    body = rpc.raw()
    assert body == bytes([0x08, command_id, 0x52, 0x04, 0x0A, 0x02, 0x22, 0x00])
    parsed = flipper_pb2.Main.FromString(body)
    assert parsed.storage_read_response.HasField("file")


def test_storage_write_keeps_reading_on_a_ctrl_c_at_a_block_boundary(
    shell: serial.Serial, emulator: FlipperEmulator
) -> None:
    """``storage_cli_write`` ends on Ctrl+C only with a partly filled 512-byte block."""
    shell.write(b"storage write /ext/notes.txt\r")
    shell.read_until(b"exit by Ctrl+C.\r\n")
    shell.write(b"\x03")  # first: taken as text, echoed
    assert shell.read(1) == b"\x03"
    shell.write(b"ok\x03")
    assert shell.read_until(PROMPT) == b"ok\r\n" + PROMPT
    assert emulator.state.files["/ext/notes.txt"] == b"\x03ok"
    block = b"x" * 512
    shell.write(b"storage write /ext/block.txt\r")
    shell.read_until(b"exit by Ctrl+C.\r\n")
    shell.write(block + b"\x03")  # after a full block: the Ctrl+C is text
    shell.write(b"\x03")  # now one byte into the next block: this one ends it
    shell.read_until(PROMPT)
    assert emulator.state.files["/ext/block.txt"] == block + b"\x03"
