"""The Flipper CLI parsers and the RPC framing (``drivers/flipper/wire.py``), with property
tests."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.flipper.cli import (
    CliError,
    Entry,
    ir_signals,
    key_values,
    nfc_protocols,
    storage_list,
    storage_read,
    storage_stat,
    subghz_packets,
)
from drivers.flipper.wire import FrameError, decode_frame, encode_varint

DEVICE_INFO = (
    b"device_info_major             : 2\r\n"
    b"hardware_model                : Flipper Zero\r\n"
    b"hardware_name                 : Lun10n\r\n"
    b"firmware_version              : 1.4.3\r\n"
)


def test_key_values() -> None:
    assert key_values(DEVICE_INFO) == {
        "device_info_major": "2",
        "hardware_model": "Flipper Zero",
        "hardware_name": "Lun10n",
        "firmware_version": "1.4.3",
    }
    assert key_values(b"charge.level                  : 87\r\n") == {"charge.level": "87"}


def test_storage_formats() -> None:
    listing = b"\t[D] subghz\r\n\t[F] notes.txt 123b\r\n\t[F] a b.ir 5b\r\n"
    assert storage_list(listing) == [
        Entry("subghz", True),
        Entry("notes.txt", False, 123),
        Entry("a b.ir", False, 5),
    ]
    assert storage_list(b"\tEmpty\r\n") == []
    assert storage_stat(b"File, size: 42b\r\n") == {"type": "file", "size": 42}
    assert storage_stat(b"Directory\r\n") == {"type": "dir"}
    assert storage_read(b"Size: 5\r\nhello\r\n") == b"hello"
    with pytest.raises(CliError, match="File/Dir not exist"):
        storage_list(b"Storage error: File/Dir not exist\r\n")
    with pytest.raises(CliError, match="cut short"):
        storage_read(b"Size: 10\r\nhello")
    with pytest.raises(CliError, match="no command `nfc`"):
        storage_list(b"\x1b[31mcould not find command `nfc`, try `help`\x1b[0m\r\n")


def test_radio_lines() -> None:
    assert ir_signals(b"NEC, A:0x04, C:0x08\r\nSIRC, A:0x01, C:0x15 R\r\n") == [
        {"protocol": "NEC", "address": 4, "command": 8, "repeat": False},
        {"protocol": "SIRC", "address": 1, "command": 0x15, "repeat": True},
    ]
    output = (
        b"Listening at frequency: 433920000 device: 0. Press CTRL+C to stop\r\n"
        b"Princeton 24bit Key:0x00AABBCC\r\n.\r\n\r\nPackets received 1\r\n"
    )
    assert subghz_packets(output) == (["Princeton 24bit Key:0x00AABBCC"], 1)
    two = (
        b"Princeton 24bit\r\nKey:0x00000001\r\nTe:400us\r\n.\r\n"
        b"Princeton 24bit\r\nKey:0x00000002\r\n\r\nPackets received 2\r\n"
    )
    assert subghz_packets(two) == (
        ["Princeton 24bit; Key:0x00000001; Te:400us", "Princeton 24bit; Key:0x00000002"],
        2,
    )
    assert nfc_protocols(
        b"Press Ctrl+C to abort\r\n\nProtocols detected: iso14443-3a, mfu\r\n"
    ) == ["iso14443-3a", "mfu"]
    assert nfc_protocols(b"Detected 2 protocols:\r\niso14443-3a\r\nmfu\r\n") == [
        "iso14443-3a",
        "mfu",
    ]
    with pytest.raises(CliError):
        storage_list(b"Usage:\r\nnfc <cmd>\r\n")
    assert subghz_packets(b"Listening at frequency: 1 device: 0\r\n")[1] is None


@given(st.binary(max_size=4096))
def test_parsers_never_crash_on_garbage(data: bytes) -> None:
    key_values(data)
    ir_signals(data)
    subghz_packets(data)
    for parse in (storage_list, storage_stat, storage_read):
        with contextlib.suppress(CliError):
            parse(data)  # type: ignore[operator]


@given(st.integers(min_value=0, max_value=2**35 - 1))
def test_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert len(encoded) <= 6
    assert all(b & 0x80 for b in encoded[:-1]) and not encoded[-1] & 0x80


@given(st.binary(max_size=2000), st.binary(max_size=50))
def test_frames_round_trip_and_keep_the_rest(message: bytes, rest: bytes) -> None:
    frame = encode_varint(len(message)) + message
    assert decode_frame(frame + rest) == (message, rest)
    for cut in range(len(frame)):
        assert decode_frame(frame[:cut])[0] is None, "a truncated frame waits for more"


def test_hostile_frames_are_refused() -> None:
    with pytest.raises(FrameError, match="longer than 5 bytes"):
        decode_frame(b"\xff\xff\xff\xff\xff\x01")
    with pytest.raises(FrameError, match="over the"):
        decode_frame(encode_varint(10_000_000) + b"x")
    # The flipper-rpc test vector: PingRequest{data: 01 02 03 04} inside PB.Main.
    assert decode_frame(bytes([8, 42, 6, 10, 4, 1, 2, 3, 4]))[0] == bytes(
        [42, 6, 10, 4, 1, 2, 3, 4]
    )


def test_loader_info() -> None:
    from drivers.flipper.usb import running_app

    assert running_app(b'Application "Sub-GHz" is running\r\n') == "Sub-GHz"
    assert running_app(b"No application is running\r\n") is None
