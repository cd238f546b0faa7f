"""pyflipper 0.22, a Flipper CLI client nobody here wrote, driving the emulator on its pty.

pyflipper reads every answer up to ``>:`` and parses it with its own regular expressions, so an
emulator whose echo, prompt, tables or listings drift from the firmware's fails here. Its
``LocalSerial`` opens the port with a 1 s read timeout; the tests raise it once the client is
connected, so a slow machine makes them slower, never wrong. (pyflipper's NFC scan is the one
place it times itself: it listens for ``timeout`` seconds; the emulator reports its queued tag
after 0.05 s.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyflipper.pyflipper import PyFlipper

from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState

READ_TIMEOUT_S = 30.0


def connect(emulator: FlipperEmulator) -> PyFlipper:
    assert emulator.path is not None
    flipper = PyFlipper(com=emulator.path)
    flipper._serial_wrapper._serial_port.timeout = READ_TIMEOUT_S
    # pyflipper sends a CR on connecting and reads only the banner's prompt; the CR's own prompt
    # may still be on its way, and would be taken for the first command's end.
    flipper._serial_wrapper.read_until_prompt()
    return flipper


@pytest.fixture
def emulator() -> Iterator[FlipperEmulator]:
    with FlipperEmulator(FlipperState()) as device:
        yield device


def test_device_info(emulator: FlipperEmulator) -> None:
    info = connect(emulator).device_info.info()
    state = emulator.state
    assert info["hardware_name"] == state.name
    assert info["hardware_uid"] == state.hardware_uid
    assert info["radio_ble_mac"] == state.radio_ble_mac
    assert info["protobuf_version_minor"] == state.protobuf_version[1]
    assert info["firmware_commit_dirty"] is False
    assert len(info) >= 50, sorted(info)


def test_storage_list_and_read(emulator: FlipperEmulator) -> None:
    flipper = connect(emulator)
    listing = flipper.storage.list("/ext")
    assert listing["dirs"] == ["subghz", "infrared", "nfc", "lfrfid", "badusb", "apps", "apps_data"]
    assert listing["files"] == []
    garage = emulator.state.files["/ext/subghz/garage.sub"] or b""
    assert flipper.storage.list("/ext/subghz")["files"] == [
        {"name": "garage.sub", "size": len(garage), "weight": "b"}
    ]
    assert flipper.storage.read("/ext/subghz/garage.sub") == garage.decode().strip()
    with pytest.raises(Exception, match="Storage error: file/dir not exist"):
        flipper.storage.read("/ext/nothing.txt")


def test_led(emulator: FlipperEmulator) -> None:
    flipper = connect(emulator)
    flipper.led.red(255)
    flipper.led.set("bl", 40)
    flipper.led.green(0)
    assert emulator.state.led_log == [("r", 255), ("bl", 40), ("g", 0)]
    assert emulator.sent == ["led r 255", "led bl 40", "led g 0"]


def test_nfc_scan_in_the_sub_shell() -> None:
    """pyflipper's NFC class is written for the newest firmware's sub-shell."""
    with FlipperEmulator(FlipperState(nfc_style="shell")) as device:
        found = connect(device).nfc.scan(timeout=3)
        assert found is not None and found["protocols"] == ["iso14443-3a", "mfu"]
        assert device.sent == ["nfc", "scanner", "exit"]
