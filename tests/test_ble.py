"""The BLE transport through the REAL bleak API, against the emulated Flipper behind bleak's seam.

``BleakClient(address, backend=...)`` and ``BleakScanner(backend=...)`` are bleak's own classes;
only the OS layer under them is ``firmware_bridges.emulators.ble``. The no-adapter tests call
bleak with no backend at all, i.e. whatever this machine really has (the sandbox: no D-Bus
system bus socket, which bleak 3.1.0 reports as a plain FileNotFoundError).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest
from bleak import BleakClient, BleakScanner
from bleak.backends.scanner import BaseBleakScanner
from bleak.exc import (
    BleakBluetoothNotAvailableError,
    BleakBluetoothNotAvailableReason,
    BleakDBusError,
    BleakError,
    BleakGATTProtocolError,
    BleakGATTProtocolErrorCode,
)

from drivers.base import BleMatcher
from drivers.transports.ble import (
    FLIPPER_CHAR_MAX,
    FLIPPER_FLOW,
    FLIPPER_PROFILE,
    FLIPPER_RX,
    BleLinkError,
    BleLinkLost,
    BleNotPaired,
    BleSerial,
    BleTimeout,
    BleUnavailable,
    as_ble_error,
    bluetooth_state,
    bluetooth_state_blocking,
    scan,
)
from firmware_bridges.emulators.ble import EmulatedPeripheral, echo, scanner_backend

UNAVAILABLE = "no Bluetooth adapter / BlueZ not running: "
PIN_SENTENCE = "pair the Flipper first: enter the PIN shown on its screen"
NO_SYSTEM_BUS = not Path("/run/dbus/system_bus_socket").exists()


def payload(size: int) -> bytes:
    return bytes((i * 7 + i // 251) % 256 for i in range(size))


def flipper(**kwargs: Any) -> EmulatedPeripheral:
    kwargs.setdefault("paired", True)
    kwargs.setdefault("on_receive", echo)
    return EmulatedPeripheral(**kwargs)


# -- scanning ----------------------------------------------------------------------------------


async def test_scan_finds_the_emulated_flipper_and_a_matcher_claims_it() -> None:
    device = flipper()
    found = await scan(0.05, backend=device.scanner_backend())
    assert len(found) == 1
    adv = found[0]
    assert adv.address == device.address
    assert adv.local_name == "Flipper Unyana"
    assert adv.service_uuids == ("00003080-0000-1000-8000-00805f9b34fb",)
    assert BleMatcher(local_name="Flipper *", service_uuid="3080").matches(adv)
    assert BleMatcher(service_uuid="0x3080").matches(adv)
    assert not BleMatcher(local_name="Nicla*").matches(adv)


async def test_the_advertised_uuid_carries_the_body_colour() -> None:
    black = flipper(colour=1, address="80:E1:26:00:00:01", name="Flipper Black")
    other = EmulatedPeripheral(address="C0:FF:EE:00:00:02", name="Nicla Sense ME")
    found = {a.address: a for a in await scan(0.05, backend=scanner_backend(black, other))}
    assert set(found) == {black.address, other.address}
    adv = found[black.address]
    assert adv.service_uuids == ("00003081-0000-1000-8000-00805f9b34fb",)
    # a matcher on 0x3080 alone misses a black Flipper: match the name, or each colour
    assert not BleMatcher(service_uuid="3080").matches(adv)
    assert BleMatcher(local_name="Flipper *").matches(adv)
    assert not BleMatcher(local_name="Flipper *").matches(found[other.address])


async def test_bleak_scanner_service_filter_works_on_the_emulator() -> None:
    device = flipper()
    found = await BleakScanner.discover(
        0.05, service_uuids=[device.service_uuid], backend=device.scanner_backend()
    )
    assert [d.address for d in found] == [device.address]
    none = await BleakScanner.discover(
        0.05,
        service_uuids=["0000180d-0000-1000-8000-00805f9b34fb"],
        backend=device.scanner_backend(),
    )
    assert none == []


async def test_a_connected_flipper_stops_advertising() -> None:
    device = flipper()
    link = BleSerial(backend=device.client_backend())
    await link.connect(device.address)
    assert await scan(0.05, backend=device.scanner_backend()) == []
    await link.disconnect()
    assert len(await scan(0.05, backend=device.scanner_backend())) == 1


# -- the serial link ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "link_options", "chunk"),
    [
        ({}, {}, FLIPPER_CHAR_MAX),  # MTU 247: the characteristic's 243 is the limit
        ({"mtu": 100}, {}, 97),  # a small MTU: MTU-3
        ({"buffer_size": 300, "consume_delay_s": 0.02}, {"response": False}, FLIPPER_CHAR_MAX),
    ],
)
async def test_write_2000_bytes_is_chunked_within_credit_and_echoed_in_order(
    options: dict[str, Any], link_options: dict[str, Any], chunk: int
) -> None:
    device = flipper(**options)
    link = BleSerial(backend=device.client_backend(), **link_options)
    await link.connect(device.address)
    try:
        assert link.is_connected
        assert link.chunk_size == chunk
        assert link.credit == device.buffer_size
        data = payload(2000)
        await link.write(data)
        echoed = await link.read_exactly(2000, within_s=5.0)
    finally:
        await link.disconnect()
    assert echoed == data
    assert bytes(device.received) == data
    assert device.overflows == []  # never more in flight than the device's credit
    assert device.oversize == []
    assert max(link.chunks_sent) <= chunk
    assert sum(link.chunks_sent) == 2000
    assert link.chunks_sent == device.writes
    # 2000 bytes exceed the buffer: the writer spent the credit to exactly 0 and waited
    spent = 0
    refills = 0
    for size in link.chunks_sent:
        spent += size
        assert spent <= device.buffer_size
        if spent == device.buffer_size:
            spent, refills = 0, refills + 1
    assert refills >= 1


async def test_the_emulator_records_a_writer_that_ignores_flow_control() -> None:
    """Proof that an empty ``overflows`` means something: a naive writer does overflow."""
    device = flipper(consume_delay_s=10.0)
    async with BleakClient(device.address, backend=device.client_backend()) as client:
        credit = int.from_bytes(await client.read_gatt_char(FLIPPER_FLOW), "big")
        assert credit == 1024
        for _ in range(4):
            await client.write_gatt_char(FLIPPER_RX, b"x" * 243, response=True)
        with pytest.raises(BleakGATTProtocolError):
            await client.write_gatt_char(FLIPPER_RX, b"x" * 243, response=True)
        with pytest.raises(BleakGATTProtocolError) as too_long:
            await client.write_gatt_char(FLIPPER_RX, b"x" * 244, response=False)
    assert [(o.size, o.credit) for o in device.overflows] == [(243, 52)]
    assert device.oversize == [244]
    assert too_long.value.code == BleakGATTProtocolErrorCode.INVALID_ATTRIBUTE_VALUE_LENGTH


async def test_the_gatt_table_is_the_flipper_serial_service() -> None:
    device = flipper()
    async with BleakClient(device.address, backend=device.client_backend()) as client:
        service = client.services.get_service(FLIPPER_PROFILE.service)
        assert service is not None
        props = {c.uuid: sorted(c.properties) for c in service.characteristics}
        assert props[FLIPPER_PROFILE.tx] == ["indicate", "read"]
        assert props[FLIPPER_PROFILE.rx] == ["read", "write", "write-without-response"]
        assert props[FLIPPER_FLOW] == ["notify", "read"]
        assert client.mtu_size == 247


async def test_read_returns_what_arrived_and_times_out_when_nothing_does() -> None:
    device = flipper(on_receive=lambda data: b"pong:" + data)
    link = BleSerial(backend=device.client_backend())
    await link.connect(device.address)
    await link.write(b"ping")
    assert await link.read(within_s=2.0) == b"pong:ping"
    with pytest.raises(BleTimeout, match=r"0 of 1 bytes within 0\.05 s"):
        await link.read(within_s=0.05)
    device.send_to_host(payload(600))  # three indications: 243 + 243 + 114
    assert await link.read_exactly(600, within_s=2.0) == payload(600)
    await link.disconnect()
    await link.disconnect()  # safe twice


async def test_the_device_dropping_the_link_ends_reads_and_writes() -> None:
    device = flipper()
    link = BleSerial(backend=device.client_backend())
    await link.connect(device.address)
    reading = asyncio.create_task(link.read(within_s=5.0))
    await asyncio.sleep(0.01)
    device.drop_connection()
    with pytest.raises(BleLinkLost, match="disconnected"):
        await reading
    with pytest.raises(BleLinkLost):
        await link.write(b"hello")
    assert not link.is_connected
    await link.connect(device.address)
    device.send_to_host(b"last words")
    device.drop_connection()
    await asyncio.sleep(0.01)
    assert await link.read(within_s=1.0) == b"last words"  # what came before the drop
    with pytest.raises(BleLinkLost):
        await link.read(within_s=1.0)
    await link.connect(device.address)  # it advertises again: reconnect works
    await link.write(b"again")
    assert await link.read(within_s=2.0) == b"again"
    await link.disconnect()


async def test_an_unknown_address_is_not_found() -> None:
    device = flipper()
    link = BleSerial(backend=device.client_backend())
    with pytest.raises(BleLinkError, match="not found"):
        await link.connect("11:22:33:44:55:66")


# -- pairing -----------------------------------------------------------------------------------


async def test_unpaired_flipper_asks_for_the_pin() -> None:
    device = flipper(paired=False)
    link = BleSerial(backend=device.client_backend())
    with pytest.raises(BleNotPaired) as caught:
        await link.connect(device.address)
    message = str(caught.value)
    assert PIN_SENTENCE in message
    assert f"bluetoothctl pair {device.address}" in message
    assert "org.bluez.Error.NotPermitted" in message
    assert not link.is_connected
    assert not device.connected  # the half-open link was closed


async def test_pairing_with_the_pin_connects_and_a_refused_pin_says_so() -> None:
    refused = flipper(paired=False)
    with pytest.raises(BleNotPaired, match=PIN_SENTENCE):
        await BleSerial(backend=refused.client_backend(), pair=True).connect(refused.address)
    accepted = flipper(paired=False, accept_pairing=True)
    link = BleSerial(backend=accepted.client_backend(), pair=True)
    await link.connect(accepted.address)
    await link.write(b"hi")
    assert await link.read(within_s=2.0) == b"hi"
    await link.disconnect()


@pytest.mark.parametrize(
    "exc",
    [
        BleakDBusError("org.bluez.Error.NotPermitted", ["Not paired"]),
        BleakDBusError("org.bluez.Error.AuthenticationFailed", ["Authentication Failed"]),
        BleakGATTProtocolError(BleakGATTProtocolErrorCode.INSUFFICIENT_AUTHENTICATION),
        BleakGATTProtocolError(BleakGATTProtocolErrorCode.INSUFFICIENT_ENCRYPTION),
    ],
)
def test_pairing_errors_map_to_the_pin_sentence(exc: BaseException) -> None:
    mapped = as_ble_error(exc, "80:E1:26:5A:11:0C", "write")
    assert isinstance(mapped, BleNotPaired)
    assert PIN_SENTENCE in str(mapped)


# -- no Bluetooth ------------------------------------------------------------------------------


def _unavailable_sentence(text: str) -> None:
    assert text.startswith(UNAVAILABLE)
    assert "; fix: " in text
    assert "systemctl start bluetooth" in text


async def test_this_machine_without_bluetooth_gives_the_one_sentence() -> None:
    """Real bleak, no backend: whatever this machine has (the sandbox: no system bus)."""
    if NO_SYSTEM_BUS:
        with pytest.raises(FileNotFoundError):  # what bleak itself raises here (measured)
            await BleakScanner.discover(0.2)
    try:
        await scan(1.0)
    except BleUnavailable as exc:
        _unavailable_sentence(str(exc))
        if NO_SYSTEM_BUS:
            assert "no D-Bus system bus socket at /run/dbus/system_bus_socket" in str(exc)
    else:
        pytest.skip(
            "this machine has a working Bluetooth stack, so there is no missing adapter to see; "
            "the mapping is tested through a broken backend in "
            "test_every_no_adapter_state_is_one_sentence"
        )
    with pytest.raises(BleUnavailable) as caught:
        await BleSerial().connect("80:E1:26:5A:11:0C")
    _unavailable_sentence(str(caught.value))
    ok, sentence = await bluetooth_state()
    assert ok is False
    _unavailable_sentence(sentence)
    assert bluetooth_state_blocking() == (False, sentence)  # the doctor's call, from a loop too


class _BrokenScanner(BaseBleakScanner):
    """A backend whose start() raises what a broken Bluetooth stack raises."""

    failure: ClassVar[BaseException] = OSError()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(None, None)

    async def start(self) -> None:
        raise self.failure

    async def stop(self) -> None:
        return None


NO_ADAPTER_CASES = [
    (FileNotFoundError(2, "No such file or directory"), "no D-Bus system bus socket"),
    (
        BleakDBusError(
            "org.freedesktop.DBus.Error.ServiceUnknown",
            ["The name org.bluez was not provided by any .service files"],
        ),
        "BlueZ (org.bluez) is not on the system bus",
    ),
    (
        BleakDBusError(
            "org.freedesktop.DBus.Error.Spawn.ChildExited",
            ["Process org.bluez exited with status 1"],
        ),
        "bluetoothd could not be started",
    ),
    (BleakDBusError("org.bluez.Error.NotReady", ["Resource Not Ready"]), "not ready"),
    (
        BleakBluetoothNotAvailableError(
            "No Bluetooth adapters found.", BleakBluetoothNotAvailableReason.NO_BLUETOOTH
        ),
        "No Bluetooth adapters found. (NO_BLUETOOTH)",
    ),
    (
        BleakBluetoothNotAvailableError(
            "No powered Bluetooth adapters found. Turn on Bluetooth and try again.",
            BleakBluetoothNotAvailableReason.POWERED_OFF,
        ),
        "POWERED_OFF",
    ),
    (BleakError("No Bluetooth adapters found."), "No Bluetooth adapters found."),
    (BleakError("adapter 'hci1' not found"), "adapter 'hci1' not found"),
    (PermissionError(13, "Permission denied"), "permission denied"),
]


@pytest.mark.parametrize(("failure", "seen"), NO_ADAPTER_CASES)
async def test_every_no_adapter_state_is_one_sentence(failure: BaseException, seen: str) -> None:
    backend = type("Broken", (_BrokenScanner,), {"failure": failure})
    with pytest.raises(BleUnavailable) as caught:
        await scan(0.05, backend=backend)
    _unavailable_sentence(str(caught.value))
    assert seen in str(caught.value)
    assert caught.value.__cause__ is failure
    ok, sentence = await bluetooth_state(backend=backend)
    assert (ok, sentence) == (False, str(caught.value))


@pytest.mark.parametrize(
    "exc",
    [
        BleakDBusError("org.bluez.Error.Failed", ["Operation failed with ATT error: 0x0e"]),
        BleakError("failed to discover services, device disconnected"),
    ],
)
def test_other_errors_are_not_called_no_adapter(exc: BaseException) -> None:
    mapped = as_ble_error(exc, "80:E1:26:5A:11:0C", "write")
    assert isinstance(mapped, BleLinkError)
    assert not isinstance(mapped, BleUnavailable)


async def test_bluetooth_state_is_ready_with_the_emulated_backend() -> None:
    device = flipper()
    ok, sentence = await bluetooth_state(backend=device.scanner_backend())
    assert ok is True
    assert sentence == "Bluetooth ready: a 1 s scan saw 1 device (Flipper Unyana)"


def test_bluetooth_state_blocking_for_the_synchronous_doctor() -> None:
    device = flipper()
    ok, sentence = bluetooth_state_blocking(backend=device.scanner_backend())
    assert (ok, sentence) == (True, "Bluetooth ready: a 1 s scan saw 1 device (Flipper Unyana)")
    ok, sentence = bluetooth_state_blocking(backend=scanner_backend())
    assert (ok, sentence) == (True, "Bluetooth ready: a 1 s scan saw 0 devices")
