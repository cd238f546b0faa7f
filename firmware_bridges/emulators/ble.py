"""A Flipper Zero's BLE serial service behind bleak's backend seam.

It is one module on purpose: bleak's client and scanner backends must share one emulated radio
(its peripherals, pairing and MTU), as the OS stack does.

Why
---
``drivers/transports/ble.py`` must be tested with no radio. bleak lets a caller choose the
backend class (``BleakClient(address, backend=...)``, ``BleakScanner(backend=...)``), so this
module provides a ``BaseBleakClient`` and a ``BaseBleakScanner`` bound to an
:class:`EmulatedPeripheral`: the transport runs through the REAL ``BleakClient``/``BleakScanner``
(their characteristic resolution, callback wrapping and argument handling) and only the OS layer
below them is emulated.

What is emulated (docs/hardware.md, from the firmware's ``targets/f7/ble_glue/services/
serial_service.c``/``serial_service.h``, ``profiles/serial_profile.c`` and ``rpc.h``)
---------------------------------------------------------------------------------------
* The serial service's GATT table with its real UUIDs and properties: TX (Flipper -> host)
  read + indicate, RX (host -> Flipper) write + write-without-response + read, flow control
  read + notify (4-byte big-endian free buffer), RPC status read + write + notify; a CCCD on
  each characteristic that indicates or notifies.
* A characteristic value holds at most 243 bytes (CHAR_VALUE_LEN_MAX) and one ATT write at
  most MTU-3: longer writes fail as a real stack fails them (ATT 0x0D, Invalid Attribute Value
  Length) and are recorded in ``oversize``.
* Flow control as the firmware does it: the credit (``bytes_ready_to_receive``) starts at the
  RPC buffer size (``RPC_BUFFER_SIZE`` 1024) and drops with every byte written; the "device"
  drains its buffer ``consume_delay_s`` after data arrives, hands it to ``on_receive``, and ONLY
  when the credit has reached exactly 0 refills it and notifies the new value
  (``ble_svc_serial_notify_buffer_is_empty``). A write larger than the credit is recorded in
  ``overflows`` and rejected (the firmware merely logs "Can lead to buffer overflow!" and drops
  data later; rejecting makes a faulty host fail loudly in tests).
* Security: the serial characteristics need an authenticated (paired) link. Unless the
  peripheral is ``paired``, a read or write fails with what BlueZ reports for ATT 0x05
  (``BleakDBusError('org.bluez.Error.NotPermitted', ['Not paired'])``, BlueZ
  ``create_gatt_dbus_error``); ``pair()`` succeeds only with ``accept_pairing`` (a person typing
  the PIN from the Flipper's screen) and otherwise fails like BlueZ without an agent
  (``org.bluez.Error.AuthenticationFailed``).
* Advertising: the local name ("Flipper Unyana") and the 16-bit service UUID 0x3080 OR'ed with
  the body colour (0 unknown, 1 black, 2 white, 3 transparent); a connected Flipper stops
  advertising.
* Replies: whatever ``on_receive(data) -> bytes | None`` returns goes back as TX indications of
  at most min(243, MTU-3) bytes each, in order (``echo`` makes an echo device). Tests can also
  push bytes with ``send_to_host`` and drop the link with ``drop_connection``.

Approximations: the RPC status value is stored as a little-endian uint32 (a raw C enum);
enabling indications does not itself require pairing here; timing is the event loop's, not the
radio's (30-45 ms connection interval).

Other boards
------------
What is not Flipper-specific is :class:`GattPeripheral`: an advertising peripheral with a GATT
table (:class:`GattService` of :class:`GattChar`), one central at a time, notifications cut to
MTU-3 as an ATT server cuts them, and hooks (``on_connect``, ``on_disconnect``, ``on_read``,
``on_write``) a board overrides. :class:`EmulatedPeripheral` (the Flipper) is one;
``firmware_bridges.emulators.nicla_voice`` is another. The client and scanner backends here
serve any of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from bleak.args import SizedBuffer
from bleak.assigned_numbers import CharacteristicPropertyName
from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.backends.client import BaseBleakClient, NotifyCallback
from bleak.backends.descriptor import BleakGATTDescriptor
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import (
    AdvertisementData,
    AdvertisementDataCallback,
    BaseBleakScanner,
)
from bleak.backends.service import BleakGATTService, BleakGATTServiceCollection
from bleak.exc import (
    BleakDBusError,
    BleakDeviceNotFoundError,
    BleakError,
    BleakGATTProtocolError,
    BleakGATTProtocolErrorCode,
)
from bleak.uuids import normalize_uuid_16

from drivers.base import normalize_uuid

# The Flipper's serial service as its firmware declares it (serial_service.h and the UUIDs
# beside it). Written here again rather than imported from the
# driver, so a wrong UUID in the driver fails against the emulator instead of agreeing with it.
FLIPPER_SERIAL_SERVICE = "8fe5b3d5-2e7f-4a98-2a48-7acc60fe0000"
FLIPPER_TX = "19ed82ae-ed21-4c9d-4145-228e61fe0000"  # Flipper -> host: READ + INDICATE
FLIPPER_RX = "19ed82ae-ed21-4c9d-4145-228e62fe0000"  # host -> Flipper: WRITE (+ w/o response)
FLIPPER_FLOW = "19ed82ae-ed21-4c9d-4145-228e63fe0000"  # READ + NOTIFY, u32 big-endian free bytes
FLIPPER_RPC_STATUS = "19ed82ae-ed21-4c9d-4145-228e64fe0000"  # READ/WRITE/NOTIFY, 0/1
FLIPPER_ADVERTISED_UUID = 0x3080  # 16-bit service UUID, OR'ed with the body colour (0..3)
FLIPPER_CHAR_MAX = 243  # serial_service.h CHAR_VALUE_LEN_MAX

CCCD_UUID = normalize_uuid_16(0x2902)
RPC_BUFFER_SIZE = 1024  # applications/services/rpc/rpc.h
DEFAULT_MTU = 247
ATT_VALUE_MAX = 512  # the longest attribute value ATT allows (Core spec Vol 3 Part F 3.2.9)

NOT_PAIRED = ("org.bluez.Error.NotPermitted", ["Not paired"])
PAIRING_FAILED = ("org.bluez.Error.AuthenticationFailed", ["Authentication Failed"])

OnReceive = Callable[[bytes], bytes | None]


def echo(data: bytes) -> bytes:
    """An ``on_receive`` that sends every byte straight back."""
    return data


@dataclass(frozen=True)
class Overflow:
    """A write the host made beyond the device's flow-control credit."""

    size: int
    credit: int


@dataclass
class GattChar:
    """One characteristic of an emulated GATT table (``obj`` of bleak's characteristic).

    ``handle`` is the declaration's; a CCCD (handle + 1) is added when it notifies or indicates.
    ``authenticated``: reads and writes need a paired link.
    """

    uuid: str
    handle: int
    properties: tuple[CharacteristicPropertyName, ...]
    authenticated: bool = False
    value: bytes = b""


_Char = GattChar  # the name the Flipper's table was first written with


@dataclass(frozen=True)
class GattService:
    """One primary service: its UUID, its declaration handle and its characteristics."""

    uuid: str
    handle: int
    chars: tuple[GattChar, ...]


_TX = _Char(FLIPPER_TX, 14, ("read", "indicate"), True)
_RX = _Char(FLIPPER_RX, 17, ("read", "write", "write-without-response"), True)
_FLOW = _Char(FLIPPER_FLOW, 19, ("read", "notify"), True)
_RPC_STATUS = _Char(FLIPPER_RPC_STATUS, 22, ("read", "write", "notify"), True)
_SERVICE_HANDLE = 12
_FLIPPER_SERVICE = GattService(
    FLIPPER_SERIAL_SERVICE, _SERVICE_HANDLE, (_TX, _RX, _FLOW, _RPC_STATUS)
)


class GattPeripheral:
    """One emulated BLE peripheral: what it advertises, its GATT table, one central at a time.

    A board subclasses it and overrides the hooks: ``advertised_uuids`` (what the air sees),
    ``on_connect``/``on_disconnect`` (session state), ``on_read`` (a value computed on read) and
    ``on_write`` (what a write does; raise bleak's errors to reject it as the stack would).
    ``notify`` sends a value to the subscribed central, cut to MTU-3 as an ATT server cuts it
    (the cut sizes are recorded in ``truncated``). ``client_backend()``/``scanner_backend()``
    give the classes to pass as bleak's ``backend=``.
    """

    def __init__(
        self,
        *,
        address: str,
        name: str,
        services: Sequence[GattService],
        paired: bool = True,
        accept_pairing: bool = False,
        mtu: int = DEFAULT_MTU,
        char_max: int = ATT_VALUE_MAX,
        rssi: int = -58,
    ) -> None:
        self.address = address
        self.name = name
        self.paired = paired
        self.accept_pairing = accept_pairing
        self.mtu = mtu
        self.char_max = char_max
        self.rssi = rssi
        self.advertising = True
        self.connections = 0
        self.truncated: list[int] = []
        self.oversize: list[int] = []
        # each instance gets its own characteristic objects (their values are its state)
        self._services = [
            GattService(s.uuid, s.handle, tuple(dataclasses.replace(c) for c in s.chars))
            for s in services
        ]
        self._chars = {c.handle: c for s in self._services for c in s.chars}
        self._client: EmulatedBleakClient | None = None

    # -- what the air sees --------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._client is not None

    def advertised_uuids(self) -> list[str]:
        """The service UUIDs in the advertisement (default: every service of the table)."""
        return [s.uuid for s in self._services]

    def advertisement_data(self) -> AdvertisementData:
        return AdvertisementData(
            local_name=self.name,
            manufacturer_data={},
            service_data={},
            service_uuids=self.advertised_uuids(),
            tx_power=None,
            rssi=self.rssi,
            platform_data=("emulated", self.address),
        )

    def client_backend(self) -> type[EmulatedBleakClient]:
        """The ``BaseBleakClient`` subclass to pass as ``BleakClient(..., backend=...)``."""
        return client_backend(self)

    def scanner_backend(self) -> type[EmulatedBleakScanner]:
        """The ``BaseBleakScanner`` subclass to pass as ``BleakScanner(backend=...)``."""
        return scanner_backend(self)

    # -- the device side ----------------------------------------------------------------------

    def char(self, uuid: str) -> GattChar:
        """The characteristic with ``uuid`` (the first, if the table repeats it)."""
        wanted = normalize_uuid(uuid)
        for char in self._chars.values():
            if char.uuid == wanted:
                return char
        raise KeyError(f"no characteristic {uuid} in this peripheral's table")

    def subscribed(self, uuid: str) -> bool:
        """Whether the central enabled notifications/indications of ``uuid``."""
        client = self._client
        return client is not None and self.char(uuid).handle in client._subscribed

    def notify(self, uuid: str, data: bytes) -> bool:
        """Set ``uuid``'s value and notify it (at most MTU-3 bytes arrive); True if delivered."""
        return self._notify_handle(self.char(uuid).handle, data)

    def drop_connection(self) -> None:
        """The peripheral ends the link (switched off, out of range, reset)."""
        client = self._client
        if client is not None:
            client._lost()

    # -- hooks --------------------------------------------------------------------------------

    def on_connect(self) -> None:
        """A central connected (the peripheral has stopped advertising)."""

    def on_disconnect(self) -> None:
        """The central is gone (either side ended the link); the peripheral advertises again."""

    def on_read(self, char: GattChar) -> bytes:
        return char.value

    def on_write(self, char: GattChar, data: bytes) -> None:
        char.value = data

    # -- internals ----------------------------------------------------------------------------

    def _notify_handle(self, handle: int, data: bytes) -> bool:
        limit = self.mtu - 3
        if len(data) > limit:
            self.truncated.append(len(data))
            data = data[:limit]
        char = self._chars[handle]
        char.value = data
        client = self._client
        if client is None or handle not in client._subscribed:
            return False
        client._deliver(handle, data)
        return True

    def _attach(self, client: EmulatedBleakClient) -> None:
        self._client = client
        self.advertising = False
        self.connections += 1
        self.on_connect()

    def _detach(self, client: EmulatedBleakClient) -> bool:
        if self._client is not client:
            return False
        self._client = None
        self.advertising = True
        self.on_disconnect()
        return True

    def _build_services(self) -> BleakGATTServiceCollection:
        services = BleakGATTServiceCollection()
        for spec in self._services:
            service = BleakGATTService(self, spec.handle, spec.uuid)
            services.add_service(service)
            for char in spec.chars:
                gatt_char = BleakGATTCharacteristic(
                    char,
                    char.handle,
                    char.uuid,
                    list(char.properties),
                    lambda: self.mtu - 3,
                    service,
                )
                services.add_characteristic(gatt_char)
                if "notify" in char.properties or "indicate" in char.properties:
                    services.add_descriptor(
                        BleakGATTDescriptor(None, char.handle + 1, CCCD_UUID, gatt_char)
                    )
        return services


class EmulatedPeripheral(GattPeripheral):
    """A Flipper Zero advertising its BLE serial service; see the module docstring.

    ``client_backend()`` and ``scanner_backend()`` give the classes to pass as bleak's
    ``backend=``. The records a test reads: ``received`` (every byte accepted, in order),
    ``writes`` (each accepted write's size), ``overflows``, ``oversize`` (rejected sizes).
    """

    def __init__(
        self,
        *,
        address: str = "80:E1:26:5A:11:0C",
        name: str = "Flipper Unyana",
        colour: int = 0,
        paired: bool = False,
        accept_pairing: bool = False,
        mtu: int = DEFAULT_MTU,
        buffer_size: int = RPC_BUFFER_SIZE,
        char_max: int = FLIPPER_CHAR_MAX,
        consume_delay_s: float = 0.005,
        on_receive: OnReceive | None = None,
        rssi: int = -58,
    ) -> None:
        if not 0 <= colour <= 3:
            raise ValueError("colour is 0 (unknown), 1 (black), 2 (white) or 3 (transparent)")
        super().__init__(
            address=address,
            name=name,
            services=(_FLIPPER_SERVICE,),
            paired=paired,
            accept_pairing=accept_pairing,
            mtu=mtu,
            char_max=char_max,
            rssi=rssi,
        )
        self.colour = colour
        self.buffer_size = buffer_size
        self.consume_delay_s = consume_delay_s
        self.on_receive = on_receive
        self.credit = buffer_size
        self.rpc_status = 0
        self.received = bytearray()
        self.writes: list[int] = []
        self.overflows: list[Overflow] = []
        self._buffer = bytearray()
        self._consume: asyncio.Handle | None = None

    # -- what the air sees --------------------------------------------------------------------

    @property
    def service_uuid(self) -> str:
        return normalize_uuid_16(FLIPPER_ADVERTISED_UUID | self.colour)

    def advertised_uuids(self) -> list[str]:
        return [self.service_uuid]

    # -- the device side ----------------------------------------------------------------------

    def send_to_host(self, data: bytes) -> None:
        """Indicate ``data`` on TX in chunks of at most min(243, MTU-3) bytes, in order."""
        size = max(1, min(self.char_max, self.mtu - 3))
        for start in range(0, len(data), size):
            self._notify_handle(_TX.handle, data[start : start + size])

    def _flow_value(self) -> bytes:
        return self.credit.to_bytes(4, "big")

    def _accept(self, data: bytes) -> None:
        if len(data) > self.credit:
            self.overflows.append(Overflow(len(data), self.credit))
            raise BleakGATTProtocolError(BleakGATTProtocolErrorCode.INSUFFICIENT_RESOURCE)
        self.credit -= len(data)
        self.received += data
        self.writes.append(len(data))
        self._buffer += data
        if self._consume is None:
            loop = asyncio.get_running_loop()
            self._consume = loop.call_later(self.consume_delay_s, self._drain)

    def _drain(self) -> None:
        """The RPC thread took the buffer; refill and notify only if the credit hit 0."""
        self._consume = None
        data, self._buffer = bytes(self._buffer), bytearray()
        reply = self.on_receive(data) if self.on_receive is not None and data else None
        if reply:
            self.send_to_host(reply)
        if self.credit == 0:
            self.credit = self.buffer_size
            self._notify_handle(_FLOW.handle, self._flow_value())

    def _reset_session(self) -> None:
        if self._consume is not None:
            self._consume.cancel()
            self._consume = None
        self._buffer.clear()
        self.credit = self.buffer_size

    # -- hooks --------------------------------------------------------------------------------

    def on_connect(self) -> None:
        self.rpc_status = 1  # the serial profile opens an RPC session on connect
        self._reset_session()

    def on_disconnect(self) -> None:
        self.rpc_status = 0
        self._reset_session()

    def on_read(self, char: GattChar) -> bytes:
        if char.uuid == FLIPPER_FLOW:
            return self._flow_value()
        if char.uuid == FLIPPER_RPC_STATUS:
            return self.rpc_status.to_bytes(4, "little")
        return char.value

    def on_write(self, char: GattChar, data: bytes) -> None:
        if char.uuid == FLIPPER_RX:
            self._accept(data)
            char.value = data
        elif char.uuid == FLIPPER_RPC_STATUS:
            status = int.from_bytes(data[:4].ljust(4, b"\0"), "little")
            if status == 0:
                self._reset_session()  # writing 0 asks for an RPC session reset
                status = 1
            self.rpc_status = status


class EmulatedBleakClient(BaseBleakClient):
    """bleak's client backend, talking to a :class:`GattPeripheral` instead of an OS."""

    world: ClassVar[tuple[GattPeripheral, ...]] = ()

    def __init__(
        self,
        address_or_ble_device: BLEDevice | str,
        *,
        disconnected_callback: Callable[[], None] | None,
        timeout: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            address_or_ble_device,
            disconnected_callback=disconnected_callback,
            timeout=timeout,
            **kwargs,
        )
        self._peripheral: GattPeripheral | None = None
        self._subscribed: dict[int, NotifyCallback] = {}

    @property
    def name(self) -> str:
        return self._connected().name

    @property
    def mtu_size(self) -> int:
        return self._connected().mtu

    @property
    def is_connected(self) -> bool:
        return self._peripheral is not None

    async def connect(self, pair: bool, **kwargs: Any) -> None:
        if self._peripheral is not None:
            raise BleakError("Client is already connected")
        await asyncio.sleep(0)
        found = [
            p
            for p in self.world
            if p.address.upper() == self.address.upper() and p.advertising and not p.connected
        ]
        if not found:
            raise BleakDeviceNotFoundError(
                self.address, f"Device with address {self.address} was not found."
            )
        peripheral = found[0]
        if pair and not peripheral.paired:
            _pair(peripheral)
        self._peripheral = peripheral
        peripheral._attach(self)
        self.services = peripheral._build_services()

    async def disconnect(self) -> None:
        await asyncio.sleep(0)
        self._detach()

    async def pair(self, *args: Any, **kwargs: Any) -> None:
        _pair(self._connected())

    async def unpair(self) -> None:
        self._connected().paired = False

    async def read_gatt_char(
        self, characteristic: BleakGATTCharacteristic, *, use_cached: bool = False, **kwargs: Any
    ) -> bytearray:
        peripheral, char = self._char(characteristic, "read")
        await asyncio.sleep(0)
        return bytearray(peripheral.on_read(char))

    async def read_gatt_descriptor(
        self, descriptor: BleakGATTDescriptor, *, use_cached: bool = False, **kwargs: Any
    ) -> bytearray:
        self._connected()
        on = descriptor.characteristic_handle in self._subscribed
        return bytearray(b"\x02\x00" if on else b"\x00\x00")

    async def write_gatt_char(
        self, characteristic: BleakGATTCharacteristic, data: SizedBuffer, response: bool
    ) -> None:
        wanted: CharacteristicPropertyName = "write" if response else "write-without-response"
        peripheral, char = self._char(characteristic, wanted)
        payload = bytes(data)
        if len(payload) > min(peripheral.char_max, peripheral.mtu - 3):
            peripheral.oversize.append(len(payload))
            raise BleakGATTProtocolError(BleakGATTProtocolErrorCode.INVALID_ATTRIBUTE_VALUE_LENGTH)
        if response:
            await asyncio.sleep(0)  # the write response comes back after a round trip
        if self._peripheral is not peripheral:
            raise BleakError("Not connected")  # the link dropped during the round trip
        peripheral.on_write(char, payload)

    async def write_gatt_descriptor(
        self, descriptor: BleakGATTDescriptor, data: SizedBuffer
    ) -> None:
        self._connected()
        raise BleakError("write the CCCD through start_notify/stop_notify")

    async def start_notify(
        self, characteristic: BleakGATTCharacteristic, callback: NotifyCallback, **kwargs: Any
    ) -> None:
        self._connected()
        if not {"notify", "indicate"} & set(characteristic.properties):
            raise BleakGATTProtocolError(BleakGATTProtocolErrorCode.REQUEST_NOT_SUPPORTED)
        await asyncio.sleep(0)
        self._subscribed[characteristic.handle] = callback

    async def stop_notify(self, characteristic: BleakGATTCharacteristic) -> None:
        self._connected()
        self._subscribed.pop(characteristic.handle, None)

    # -- internals ----------------------------------------------------------------------------

    def _connected(self) -> GattPeripheral:
        if self._peripheral is None:
            raise BleakError("Not connected")
        return self._peripheral

    def _char(
        self, characteristic: BleakGATTCharacteristic, needed: CharacteristicPropertyName
    ) -> tuple[GattPeripheral, GattChar]:
        peripheral = self._connected()
        char = peripheral._chars.get(characteristic.handle)
        if char is None:
            raise BleakGATTProtocolError(BleakGATTProtocolErrorCode.INVALID_HANDLE)
        if needed not in char.properties:
            code = (
                BleakGATTProtocolErrorCode.READ_NOT_PERMITTED
                if needed == "read"
                else BleakGATTProtocolErrorCode.WRITE_NOT_PERMITTED
            )
            raise BleakGATTProtocolError(code)
        if char.authenticated and not peripheral.paired:
            raise BleakDBusError(*NOT_PAIRED)
        return peripheral, char

    def _deliver(self, handle: int, data: bytes) -> None:
        callback = self._subscribed.get(handle)
        if callback is not None:
            asyncio.get_running_loop().call_soon(callback, bytearray(data))

    def _detach(self) -> GattPeripheral | None:
        peripheral, self._peripheral = self._peripheral, None
        self._subscribed.clear()
        if peripheral is not None and peripheral._detach(self):
            return peripheral
        return None

    def _lost(self) -> None:
        if self._detach() is not None and self._disconnected_callback is not None:
            asyncio.get_running_loop().call_soon(self._disconnected_callback)


def _pair(peripheral: GattPeripheral) -> None:
    if not peripheral.accept_pairing:
        raise BleakDBusError(*PAIRING_FAILED)
    peripheral.paired = True


class EmulatedBleakScanner(BaseBleakScanner):
    """bleak's scanner backend: each scan hears every advertising peripheral of ``world``."""

    world: ClassVar[tuple[GattPeripheral, ...]] = ()

    def __init__(
        self,
        detection_callback: AdvertisementDataCallback | None,
        service_uuids: list[str] | None,
        scanning_mode: str = "active",
        **kwargs: Any,
    ) -> None:
        super().__init__(detection_callback, service_uuids)
        self._advertising: asyncio.Handle | None = None

    async def start(self) -> None:
        self.seen_devices = {}
        loop = asyncio.get_running_loop()
        self._advertising = loop.call_soon(self._hear)

    async def stop(self) -> None:
        if self._advertising is not None:
            self._advertising.cancel()
            self._advertising = None

    def _hear(self) -> None:
        self._advertising = None
        for peripheral in self.world:
            if not peripheral.advertising:
                continue
            adv = peripheral.advertisement_data()
            if not self.is_allowed_uuid(adv.service_uuids):
                continue
            device = self.create_or_update_device(
                peripheral.address, peripheral.address, peripheral.name, peripheral, adv
            )
            self.call_detection_callbacks(device, adv)


def scanner_backend(*peripherals: GattPeripheral) -> type[EmulatedBleakScanner]:
    """A scanner backend that hears ``peripherals`` (several devices on the air at once)."""

    class BoundEmulatedBleakScanner(EmulatedBleakScanner):
        world = peripherals

    return BoundEmulatedBleakScanner


def client_backend(*peripherals: GattPeripheral) -> type[EmulatedBleakClient]:
    """A client backend that can connect to any of ``peripherals`` by address."""

    class BoundEmulatedBleakClient(EmulatedBleakClient):
        world = peripherals

    return BoundEmulatedBleakClient
