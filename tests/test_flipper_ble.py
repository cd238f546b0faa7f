"""The Flipper over Bluetooth LE end to end: a real DriverManager fed by a real bleak scan, the
driver on the real ``BleakClient``, and under bleak's ``backend=`` seam the emulated peripheral
answering with the USB emulator's own RPC responder over the same ``FlipperState``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from bleak.exc import BleakDBusError

from drivers.flipper.ble import FlipperBleDriver
from drivers.flipper.rpc import RpcSession
from drivers.flipper.tools import flipper_files, flipper_find, flipper_listen, flipper_status
from drivers.transports.ble import BleSerial
from drivers.transports.ble_presence import BleAdvertisements, held
from firmware_bridges.emulators.ble import EmulatedPeripheral
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState, rpc_responder
from harness.driver_host import RecordingHost
from hub.agent.tools.context import ToolContext
from hub.drivers.manager import DriverManager
from hub.people.identity import User
from tests.toolcall import call_tool

ADDRESS = "80:E1:26:5A:11:0C"
DEVICE_ID = f"flipper_ble:{ADDRESS}"
PIN_SENTENCE = "pair the Flipper first: enter the PIN shown on its screen"
NO_SYSTEM_BUS = not Path("/run/dbus/system_bus_socket").exists()
BIG = bytes((i * 31 + i // 7) % 256 for i in range(1500))


@dataclass
class Rig:
    state: FlipperState
    emulator: FlipperEmulator
    peripheral: EmulatedPeripheral
    manager: DriverManager
    audited: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        found = [r for r in self.manager.records() if r["device_id"] == DEVICE_ID]
        assert len(found) == 1, self.manager.records()
        return found[0]

    def driver(self) -> FlipperBleDriver:
        online = self.manager.online("flipper_ble")
        assert len(online) == 1 and isinstance(online[0], FlipperBleDriver)
        return online[0]


async def make_rig(*, paired: bool = True, buffer_size: int = 1024) -> Rig:
    state = FlipperState()
    state.put_file("/ext/big.bin", BIG)
    emulator = FlipperEmulator(state)  # never started: no pty, only its RPC answers
    peripheral = EmulatedPeripheral(
        address=ADDRESS,
        paired=paired,
        buffer_size=buffer_size,
        on_receive=rpc_responder(emulator=emulator),
    )
    audited: list[str] = []
    manager = DriverManager(
        [FlipperBleDriver],
        {"flipper_ble": {"backend": peripheral.client_backend()}},
        host=RecordingHost(audited=audited),
        list_ports=lambda: [],
        advertisements=BleAdvertisements(0.02, peripheral.scanner_backend()),
        backoff_min_s=0.0,
        probe_timeout_s=2.0,
    )
    return Rig(state, emulator, peripheral, manager, audited)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = await make_rig(buffer_size=64)  # a small buffer: the credit runs out and refills
    await made.manager.scan()
    yield made
    await made.manager.stop()
    assert not held(), "a stopped driver no longer holds its address"


OWNER = User("owner", "owner", "owner")


def use(manager: DriverManager, tool: Any, **arguments: Any) -> Any:
    """A tool call as the hub's owner: the attached Flipper is the owner's to use."""
    hub = SimpleNamespace(drivers=manager, owner=OWNER)
    ctx = ToolContext(cast(Any, hub), OWNER, cast(Any, SimpleNamespace(id="tiny")))
    return call_tool(tool, ctx, **arguments)


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_the_flipper_comes_online_over_ble_and_stays_while_connected(rig: Rig) -> None:
    record = rig.record()
    assert (record["driver"], record["transport"], record["status"]) == (
        "flipper_ble",
        "ble",
        "online",
    )
    assert record["name"] == "Flipper Unyana" and "Unyana" in record["detail"]
    assert "flipper" in rig.manager.capabilities()
    assert rig.peripheral.connected and not rig.peripheral.advertising
    for _ in range(3):  # connected, it no longer advertises: the held link keeps it online
        await rig.manager.scan()
    assert rig.record()["status"] == "online"
    assert rig.peripheral.connections == 1
    assert b"start_rpc_session" not in rig.peripheral.received, "BLE carries only RPC"
    assert rig.audited[:2] == ["rpc ping", "rpc device_info"]


async def test_summary_and_files_match_the_emulator_state(rig: Rig) -> None:
    driver = rig.driver()
    summary = await driver.summary()
    assert (summary["model"], summary["name"], summary["firmware"]) == (
        rig.state.hardware_model,
        rig.state.name,
        rig.state.firmware_version,
    )
    assert summary["battery"]["level"] == float(rig.state.charge_level)
    assert summary["connection"] == f"Bluetooth LE {ADDRESS}"

    listed = await driver.files("list", "/ext/subghz")
    assert listed["entries"] == [
        {
            "name": "garage.sub",
            "dir": False,
            "size": len(rig.state.files["/ext/subghz/garage.sub"] or b""),
        }
    ]
    read = await driver.files("read", "/ext/subghz/garage.sub")
    assert read["text"].encode() == rig.state.files["/ext/subghz/garage.sub"]
    assert (await driver.files("stat", "/ext/subghz")) == {"path": "/ext/subghz", "type": "dir"}
    assert "rpc storage_read /ext/subghz/garage.sub" in rig.audited
    assert "rpc power_info" in rig.audited
    # every request the device answered was audited first, in order, and nothing else was sent
    assert rig.audited == [f"rpc {request}" for request in rig.emulator.rpc_log]


async def test_a_large_file_crosses_rpc_chunks_within_flow_control(rig: Rig) -> None:
    driver = rig.driver()
    for _ in range(3):
        assert await driver.read_file("/ext/big.bin") == BIG
    assert rig.peripheral.overflows == [] and rig.peripheral.oversize == []
    assert max(rig.peripheral.writes) <= 64
    assert len(rig.peripheral.received) > 64, "the 64-byte credit ran out and was refilled"


async def test_path_checks_are_the_usb_drivers(rig: Rig) -> None:
    for path, problem in (
        ("/ext/../int/x", ".."),
        ("/etc/passwd", "only paths under"),
        ("/ext/nothing.txt", "not exist"),
    ):
        refused = await use(rig.manager, flipper_files, action="stat", path=path)
        assert refused["status"] == "error" and problem in text(refused), (path, text(refused))


async def test_the_tools_answer_over_ble(rig: Rig) -> None:
    status = await use(rig.manager, flipper_status)
    assert status["status"] == "success", status
    assert "'Unyana', firmware 1.4.3" in text(status) and "Bluetooth LE" in text(status)
    listed = await use(rig.manager, flipper_files, action="list", path="/ext/infrared")
    assert "tv.ir" in text(listed)
    read = await use(rig.manager, flipper_files, action="read", path="/ext/infrared/tv.ir")
    assert text(read).startswith("Filetype: IR signals file")
    found = await use(rig.manager, flipper_find)
    assert "attached to this hub over Bluetooth LE" in text(found)
    signalled = await use(rig.manager, flipper_find, signal=True)
    assert "Your Flipper just beeped, blinked and vibrated" in text(signalled)
    refused = await use(rig.manager, flipper_listen, kind="subghz", seconds=1)
    assert refused["status"] == "error"
    assert "not available over Bluetooth; plug the Flipper in over USB" in text(refused)


async def test_an_unpaired_flipper_gives_the_pin_sentence() -> None:
    rig = await make_rig(paired=False)
    try:
        await rig.manager.scan()
        record = rig.record()
        assert record["status"] == "error" and PIN_SENTENCE in record["detail"], record
        result = await use(rig.manager, flipper_status)
        assert result["status"] == "error"
        assert "Flipper is not connected" in text(result) and PIN_SENTENCE in text(result)
        rig.peripheral.paired = True  # the person typed the PIN
        await rig.manager.scan()
        assert rig.record()["status"] == "online"
    finally:
        await rig.manager.stop()


async def test_a_dropped_link_goes_offline_and_comes_back(rig: Rig) -> None:
    rig.peripheral.drop_connection()
    rig.peripheral.advertising = False  # out of range
    await rig.manager.scan()
    await rig.manager.scan()
    record = rig.record()
    assert record["status"] == "offline", record
    gone = await use(rig.manager, flipper_status)
    assert gone["status"] == "error" and "Flipper is not connected" in text(gone)
    rig.peripheral.advertising = True  # back in range
    await rig.manager.scan()
    assert rig.record()["status"] == "online"
    assert (await rig.driver().summary())["name"] == "Unyana"


async def test_silence_and_a_drop_mid_request_are_clean_errors(rig: Rig) -> None:
    driver = rig.driver()
    rig.peripheral.on_receive = lambda _data: None  # the device stops answering
    driver.rpc_within_s = 0.2
    driver._session = None  # the next request opens a fresh session with the short budget
    silent = await use(rig.manager, flipper_files, action="list", path="/ext")
    assert silent["status"] == "error" and "did not answer over Bluetooth" in text(silent)

    def drop(_data: bytes) -> None:
        rig.peripheral.drop_connection()

    rig.peripheral.on_receive = drop
    dropped = await use(rig.manager, flipper_files, action="list", path="/ext")
    assert dropped["status"] == "error" and "Flipper is not connected" in text(dropped)


async def test_the_responder_buffers_split_frames() -> None:
    state = FlipperState()
    peripheral = EmulatedPeripheral(paired=True, on_receive=rpc_responder(state))
    link = BleSerial(backend=peripheral.client_backend())
    await link.connect(peripheral.address)
    try:
        session = RpcSession(link, within_s=2.0, already_open=True)
        await session.start()  # a no-op: the BLE session is already open
        assert await session.ping(b"x" * 300) == b"x" * 300  # a request over two writes
        info = await session.device_info()
        assert info["hardware_name"] == "Unyana"
        assert (
            await session.storage_read("/ext/subghz/garage.sub")
            == state.files["/ext/subghz/garage.sub"]
        )
    finally:
        await link.disconnect()


async def test_no_bluetooth_yields_no_advertisements_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through a backend that fails as BlueZ-less D-Bus does, and, where this machine has no
    system bus, through its real stack too."""
    from tests.test_ble import _BrokenScanner

    no_bluez = BleakDBusError("org.freedesktop.DBus.Error.ServiceUnknown", ["no org.bluez"])
    broken = type("NoBlueZ", (_BrokenScanner,), {"failure": no_bluez})
    sources = [BleAdvertisements(0.01, backend=broken)]
    if NO_SYSTEM_BUS:
        sources.append(BleAdvertisements(0.01))  # no backend: this machine's real stack
    for source in sources:
        caplog.clear()
        assert await source() == []
        assert await source() == []
        said = [r for r in caplog.records if "Bluetooth LE devices are unreachable" in r.message]
        assert len(said) == 1 and "no Bluetooth adapter" in said[0].message
