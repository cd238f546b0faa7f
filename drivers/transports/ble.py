"""Bluetooth LE through bleak: the only module that scans, connects or speaks to a radio.

It is one module on purpose: it is the only code that touches the radio, so every bleak call and
every error bleak raises is translated here.

``scan`` lists what advertises nearby as :class:`drivers.base.Advertisement`;
``bluetooth_state`` is the one-line answer for ``tiny-hub doctor`` and the TUI; ``BleSerial`` is
one GATT "serial" link (a write characteristic in, an indicate/notify characteristic out, and
optionally a flow-control characteristic) described by a :class:`GattSerialProfile` —
``FLIPPER_PROFILE`` for the Flipper Zero's serial service (docs/hardware.md), and the same class
can carry the Nordic UART service later. ``BleLink`` is one GATT connection spoken to by
characteristic UUID (subscribe, read, write) for devices whose protocol is several
characteristics rather than a byte pipe (the Nicla Voice).

Every bleak call takes an optional ``backend=`` (a ``BaseBleakClient``/``BaseBleakScanner``
subclass, bleak's own seam): tests pass the emulated peripheral of
``firmware_bridges.emulators.ble`` and go through the real ``BleakClient``/``BleakScanner``.

How bleak's failures become ours (bleak 3.1.0 on Linux/BlueZ; docs/hardware.md):

- ``BleUnavailable``: there is no usable Bluetooth at all, always with the same sentence
  ("no Bluetooth adapter / BlueZ not running: <what was seen>; fix: ..."). Seen as a plain
  ``FileNotFoundError`` when there is no D-Bus system bus socket (containers; measured here),
  ``BleakDBusError`` ``org.freedesktop.DBus.Error.ServiceUnknown`` (D-Bus but no BlueZ),
  ``...Spawn.ChildExited`` (bluetoothd cannot start), ``org.bluez.Error.NotReady`` (adapter
  off), ``BleakBluetoothNotAvailableError`` / ``BleakError("No Bluetooth adapters found.")``
  and friends, or a Bluetooth stack that does not answer at all.
- ``BleNotPaired``: the peripheral wants an authenticated link. On BlueZ an unpaired access to
  an authenticated characteristic fails with ``BleakDBusError('org.bluez.Error.NotPermitted',
  ['Not paired'])`` (BlueZ ``create_gatt_dbus_error`` maps ATT 0x05/0x0C/0x0F to it); other
  stacks give ``BleakGATTProtocolError`` with those codes; a failed pairing gives
  ``org.bluez.Error.Authentication*``.
- ``BleLinkLost``: the peripheral disconnected; every later call raises it again until
  ``connect``.
- ``BleTimeout``: nothing (or not enough) arrived within the budget.
- ``BleLinkError``: anything else (not found, no serial service, a GATT error), with bleak's
  text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import warnings
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bleak import BleakClient, BleakScanner
from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.backends.client import BaseBleakClient
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData, BaseBleakScanner
from bleak.exc import (
    BleakBluetoothNotAvailableError,
    BleakDBusError,
    BleakDeviceNotFoundError,
    BleakError,
    BleakGATTProtocolError,
    BleakGATTProtocolErrorCode,
)

from drivers.base import Advertisement

log = logging.getLogger(__name__)

ClientBackend = type[BaseBleakClient]
ScannerBackend = type[BaseBleakScanner]

# -- profiles ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GattSerialProfile:
    """A byte pipe over GATT. ``rx``/``tx`` are named from the DEVICE's point of view.

    ``rx``: the characteristic the host writes (the device receives); ``tx``: the one the device
    indicates or notifies (the device transmits); ``flow``: a characteristic whose value is the
    device's free receive buffer as a 4-byte big-endian integer, notified when it is refilled
    (None: no flow control); ``max_chunk``: the most bytes one write may carry, whatever the MTU.
    """

    service: str
    rx: str
    tx: str
    flow: str | None
    max_chunk: int

    def __post_init__(self) -> None:
        if self.max_chunk < 1:
            raise ValueError("max_chunk must be at least 1")


FLIPPER_SERIAL_SERVICE = "8fe5b3d5-2e7f-4a98-2a48-7acc60fe0000"
FLIPPER_TX = "19ed82ae-ed21-4c9d-4145-228e61fe0000"  # Flipper -> host: READ + INDICATE
FLIPPER_RX = "19ed82ae-ed21-4c9d-4145-228e62fe0000"  # host -> Flipper: WRITE (+ w/o response)
FLIPPER_FLOW = "19ed82ae-ed21-4c9d-4145-228e63fe0000"  # READ + NOTIFY, u32 big-endian free bytes
FLIPPER_RPC_STATUS = "19ed82ae-ed21-4c9d-4145-228e64fe0000"  # READ/WRITE/NOTIFY, 0/1
FLIPPER_ADVERTISED_UUID = 0x3080  # 16-bit service UUID, OR'ed with the body colour (0..3)
FLIPPER_CHAR_MAX = 243  # serial_service.h CHAR_VALUE_LEN_MAX
FLIPPER_DATA_MAX = 486  # serial_service.h BLE_SVC_SERIAL_DATA_LEN_MAX

FLIPPER_PROFILE = GattSerialProfile(
    service=FLIPPER_SERIAL_SERVICE,
    rx=FLIPPER_RX,
    tx=FLIPPER_TX,
    flow=FLIPPER_FLOW,
    max_chunk=FLIPPER_CHAR_MAX,
)

# -- errors ------------------------------------------------------------------------------------

UNAVAILABLE_FIX = (
    "install and start BlueZ (sudo systemctl start bluetooth), plug in or power on an adapter "
    "(bluetoothctl power on; rfkill unblock bluetooth), and in a container share the host's "
    "D-Bus (-v /run/dbus:/run/dbus:ro)"
)


class BleError(Exception):
    """A Bluetooth operation could not be done; ``str()`` is meant for a person."""


class BleUnavailable(BleError):
    """No usable Bluetooth on this machine; ``seen`` is what bleak reported."""

    def __init__(self, seen: str) -> None:
        super().__init__(
            f"no Bluetooth adapter / BlueZ not running: {seen}; fix: {UNAVAILABLE_FIX}"
        )
        self.seen = seen


class BleNotPaired(BleError):
    """The peripheral needs pairing (the Flipper shows a PIN to enter on this machine)."""

    def __init__(self, address: str, seen: str) -> None:
        super().__init__(
            f"{address}: pair the Flipper first: enter the PIN shown on its screen "
            f"(bluetoothctl pair {address}) [{seen}]"
        )
        self.address = address
        self.seen = seen


class BleLinkError(BleError):
    """The link failed for another reason (not found, no such service, a GATT error)."""


class BleLinkLost(BleLinkError):
    """The peripheral disconnected (out of range, switched off, or it dropped us)."""


class BleTimeout(BleError):
    """Nothing, or not enough, arrived within the budget."""


_NO_BLUEZ_DBUS = {
    "org.freedesktop.DBus.Error.ServiceUnknown": "BlueZ (org.bluez) is not on the system bus",
    "org.freedesktop.DBus.Error.NameHasNoOwner": "BlueZ (org.bluez) is not on the system bus",
    "org.freedesktop.DBus.Error.AccessDenied": "D-Bus policy denies access to BlueZ",
    "org.bluez.Error.NotReady": "the Bluetooth adapter is not ready (powered off?)",
    "org.bluez.Error.NotAvailable": "the Bluetooth adapter is not available",
}
_SPAWN_PREFIX = "org.freedesktop.DBus.Error.Spawn."
_NO_ADAPTER_TEXT = re.compile(
    r"no (powered )?bluetooth adapters|adapter '[^']*' not found|"
    r"bluetooth (device|adapter|radio) is (turned off|off|unavailable|not available)|"
    r"bluetooth is (turned off|off|unavailable|not available|unsupported)",
    re.IGNORECASE,
)
_PAIRING_DBUS = {
    "org.bluez.Error.AuthenticationFailed",
    "org.bluez.Error.AuthenticationCanceled",
    "org.bluez.Error.AuthenticationRejected",
    "org.bluez.Error.AuthenticationTimeout",
}
_PAIRING_ATT = {
    BleakGATTProtocolErrorCode.INSUFFICIENT_AUTHENTICATION,
    BleakGATTProtocolErrorCode.INSUFFICIENT_ENCRYPTION,
    BleakGATTProtocolErrorCode.INSUFFICIENT_ENCRYPTION_KEY_SIZE,
}


def _system_bus() -> str:
    address = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/run/dbus/system_bus_socket")
    return address.removeprefix("unix:path=")


def _dbus_text(exc: BleakDBusError) -> str:
    details = " ".join(str(a) for a in exc.args[1:])
    return f"{exc.args[0]}" + (f" ({details})" if details else "")


def unavailable_reason(exc: BaseException) -> str | None:
    """What ``exc`` shows when it means "no usable Bluetooth here"; None when it means else."""
    if isinstance(exc, BleUnavailable):
        return exc.seen
    if isinstance(exc, BleakDBusError):
        name = str(exc.args[0]) if exc.args else ""
        if name in _NO_BLUEZ_DBUS:
            return f"{_NO_BLUEZ_DBUS[name]}: {_dbus_text(exc)}"
        if name.startswith(_SPAWN_PREFIX):
            return f"bluetoothd could not be started: {_dbus_text(exc)}"
        return None
    if isinstance(exc, BleakBluetoothNotAvailableError):
        return f"{exc.args[0]} ({exc.reason.name})"
    if isinstance(exc, BleakError):
        text = " ".join(str(a) for a in exc.args)
        return text if _NO_ADAPTER_TEXT.search(text) else None
    if isinstance(exc, FileNotFoundError) and sys.platform.startswith("linux"):
        return f"no D-Bus system bus socket at {_system_bus()} ({exc})"
    if isinstance(exc, PermissionError):
        return f"permission denied opening the Bluetooth stack / D-Bus system bus ({exc})"
    if isinstance(exc, ConnectionRefusedError):
        return f"the D-Bus system bus at {_system_bus()} refused the connection ({exc})"
    if isinstance(exc, OSError):
        return f"the Bluetooth stack failed: {type(exc).__name__}: {exc}"
    return None


def pairing_reason(exc: BaseException) -> str | None:
    """What ``exc`` shows when the peripheral wants pairing (or pairing failed); else None."""
    if isinstance(exc, BleakDBusError):
        name = str(exc.args[0]) if exc.args else ""
        details = " ".join(str(a) for a in exc.args[1:])
        if name in _PAIRING_DBUS or (
            name == "org.bluez.Error.NotPermitted" and "not paired" in details.lower()
        ):
            return _dbus_text(exc)
        return None
    if isinstance(exc, BleakGATTProtocolError) and exc.code in _PAIRING_ATT:
        return f"ATT error 0x{int(exc.code):02x} {exc.code.name}"
    return None


def as_ble_error(exc: BaseException, address: str | None, what: str) -> BleError:
    """One of our errors for a bleak/OS failure during ``what`` (see the module docstring)."""
    if isinstance(exc, BleError):
        return exc
    seen = unavailable_reason(exc)
    if seen is not None:
        return BleUnavailable(seen)
    where = f"{address}: " if address else ""
    if address is not None:
        paired = pairing_reason(exc)
        if paired is not None:
            return BleNotPaired(address, paired)
    if isinstance(exc, BleakDeviceNotFoundError):
        return BleLinkError(
            f"{where}not found (is it switched on, in range and advertising? "
            "it must be seen by a scan first)"
        )
    if isinstance(exc, TimeoutError):
        return BleTimeout(f"{where}{what} timed out")
    return BleLinkError(f"{where}{what} failed: {type(exc).__name__}: {exc}")


@contextlib.asynccontextmanager
async def _guard(address: str | None, what: str) -> AsyncIterator[None]:
    try:
        yield
    except BleError:
        raise
    except (BleakError, OSError, EOFError, TimeoutError) as exc:
        raise as_ble_error(exc, address, what) from exc


# -- scanning ----------------------------------------------------------------------------------


def advertisement(device: BLEDevice, adv: AdvertisementData) -> Advertisement:
    """bleak's (BLEDevice, AdvertisementData) as the Advertisement a BleMatcher reads."""
    return Advertisement(
        address=device.address,
        local_name=adv.local_name or device.name,
        service_uuids=tuple(str(u).lower() for u in adv.service_uuids or ()),
        manufacturer_ids=tuple(sorted(adv.manufacturer_data or {})),
    )


async def scan(seconds: float, backend: ScannerBackend | None = None) -> list[Advertisement]:
    """Everything that advertised during ``seconds`` of scanning, one entry per address.

    Raises BleUnavailable when there is no usable Bluetooth, BleError for anything else.
    """
    limit = seconds + 10.0
    try:
        async with asyncio.timeout(limit), _guard(None, "scan"):
            scanner = BleakScanner(backend=backend)
            async with scanner:
                await asyncio.sleep(seconds)
    except TimeoutError as exc:  # the stack hung (a wedged bluetoothd or D-Bus)
        raise BleUnavailable(
            f"the Bluetooth stack did not finish a {seconds:g} s scan within {limit:g} s"
        ) from exc
    found = scanner.discovered_devices_and_advertisement_data.values()
    return [advertisement(device, adv) for device, adv in found]


async def bluetooth_state(backend: ScannerBackend | None = None) -> tuple[bool, str]:
    """(usable, one sentence) from a 1-second scan: what ``tiny-hub doctor`` and the TUI show.

    Never raises (short of cancellation): every failure becomes ``(False, sentence)``.
    """
    try:
        found = await scan(1.0, backend=backend)
    except BleError as exc:
        return False, str(exc)
    except Exception as exc:  # a check must report, not crash the doctor
        return False, f"Bluetooth check failed unexpectedly: {type(exc).__name__}: {exc}"
    names = sorted({a.local_name for a in found if a.local_name})
    seen = f" ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})" if names else ""
    plural = "" if len(found) == 1 else "s"
    return True, f"Bluetooth ready: a 1 s scan saw {len(found)} device{plural}{seen}"


def bluetooth_state_blocking(backend: ScannerBackend | None = None) -> tuple[bool, str]:
    """``bluetooth_state`` for synchronous callers (``tiny-hub doctor``), about 1 s.

    Runs on a thread of its own with its own event loop, so it also works when the caller is
    itself inside a running loop (the TUI).
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bluetooth state") as pool:
        return pool.submit(asyncio.run, bluetooth_state(backend)).result()


# -- one connection's life cycle ---------------------------------------------------------------


class _GattConnection:
    """The ``BleakClient`` life cycle that ``BleSerial`` and ``BleLink`` share, written once.

    Both links connect, pair and time out the same way, and their failures must read the same
    (``_guard``/``as_ble_error`` with "connect" and "service discovery"), so one class owns it:
    ``connect`` drops a link already up, connects, checks that the services were discovered and
    hands the client to ``_set_up`` (closing the link again if any of that fails);
    ``disconnect`` drops it; ``_lost`` is set when the PERIPHERAL ends the link (never for our
    own ``disconnect``, nor for a client a newer ``connect`` replaced) and stays set until the
    next ``connect``, so every later call raises :class:`BleLinkLost` through ``_live_client``.
    What a link is for comes in through four hooks: ``_reset`` (state for a new connection),
    ``_set_up`` (subscribe, read initial values), ``_closing`` (we drop the link: wake anything
    waiting on it) and ``_link_lost`` (the peripheral dropped it).
    """

    _what = "BLE link"
    """What a "not connected" error calls the link before it has an address."""

    def __init__(
        self, *, backend: ClientBackend | None, connect_timeout_s: float, pair: bool
    ) -> None:
        self._backend = backend
        self._connect_timeout_s = connect_timeout_s
        self._pair = pair
        self._client: BleakClient | None = None
        self._address: str | None = None
        self._lost: str | None = None

    @property
    def address(self) -> str | None:
        return self._address

    @property
    def is_connected(self) -> bool:
        return self._client is not None and self._lost is None and self._client.is_connected

    async def connect(self, address: str | BLEDevice) -> None:
        """Connect, discover the services and set the link up (closed again if that fails).

        A link that is up is dropped first; a link that was lost is usable again afterwards.
        """
        if self._client is not None:
            await self.disconnect()
        label = address.address if isinstance(address, BLEDevice) else address
        self._address, self._lost = label, None
        self._reset()
        client = BleakClient(
            address,
            disconnected_callback=self._on_disconnect,
            timeout=self._connect_timeout_s,
            pair=self._pair,
            backend=self._backend,
        )
        async with _guard(label, "connect"):
            await client.connect()
        self._client = client
        try:
            async with _guard(label, "service discovery"):
                client.services  # noqa: B018  (raises when discovery did not happen)
            await self._set_up(client, label)
        except BaseException:
            await self.disconnect()
            raise

    async def disconnect(self) -> None:
        """Drop the link. Safe to call twice, and after the peripheral dropped it."""
        client, self._client = self._client, None
        self._closing()
        if client is None:
            return
        with contextlib.suppress(BleakError, OSError, EOFError, TimeoutError):
            await client.disconnect()

    # -- for subclasses -------------------------------------------------------------------------

    def _live_client(self) -> BleakClient:
        """The connected client; BleLinkLost after a loss, BleLinkError when not connected."""
        if self._lost is not None:
            raise BleLinkLost(f"{self._address}: {self._lost}")
        if self._client is None:
            raise BleLinkError(f"{self._address or self._what}: not connected")
        return self._client

    def _reset(self) -> None:
        """Forget the previous connection's state (``connect``, before connecting)."""

    async def _set_up(self, client: BleakClient, label: str) -> None:
        """Make the freshly connected, discovered ``client`` ready for use (or raise)."""

    def _closing(self) -> None:
        """We are dropping the link (``disconnect``, also when not connected)."""

    def _link_lost(self, reason: str) -> None:
        """The peripheral ended the link, for ``reason`` (called once per connection)."""

    def _on_disconnect(self, client: BleakClient) -> None:
        if client is not self._client or self._lost is not None:
            return  # our own disconnect(), or a link we already replaced
        self._lost = reason = "the device disconnected"
        self._link_lost(reason)


# -- the serial link ---------------------------------------------------------------------------

_CLOSED = object()


class BleSerial(_GattConnection):
    """One GATT serial link, spoken to as a byte pipe.

    ``write`` splits into chunks of at most ``chunk_size`` (the smaller of the ATT payload,
    MTU-3, and the profile's ``max_chunk``) and, with a flow characteristic, never sends more
    than the device's credit: the credit is read at connect, decreases with every byte sent, and
    when it reaches 0 the writer waits for the device's flow notification (the Flipper notifies
    only once its buffer is drained AND the credit is used up exactly, so the writer spends it
    to 0 before waiting). ``read`` returns what the device indicated/notified on ``tx``.

    ``connect`` also subscribes to ``tx`` (and ``flow``) and reads the initial credit;
    ``disconnect`` also makes a read or credit wait in progress return at once. Connecting,
    disconnecting and the lost-link bookkeeping are ``_GattConnection``'s, shared with
    ``BleLink`` so both map failures, pair and time out alike.
    """

    _what = "BLE serial"

    def __init__(
        self,
        profile: GattSerialProfile = FLIPPER_PROFILE,
        *,
        backend: ClientBackend | None = None,
        connect_timeout_s: float = 20.0,
        credit_timeout_s: float = 10.0,
        response: bool = True,
        pair: bool = False,
    ) -> None:
        super().__init__(backend=backend, connect_timeout_s=connect_timeout_s, pair=pair)
        self.profile = profile
        self._credit_timeout_s = credit_timeout_s
        self._response = response
        self._rx: BleakGATTCharacteristic | None = None
        self._chunk = profile.max_chunk
        self._credit: int | None = None
        self._credit_changed = asyncio.Event()
        self._incoming: asyncio.Queue[bytes | object] = asyncio.Queue()
        self._pending = bytearray()
        self._write_lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()
        self.chunks_sent: list[int] = []
        """Size of every write made (for diagnostics and tests)."""

    @property
    def chunk_size(self) -> int:
        return self._chunk

    @property
    def credit(self) -> int | None:
        """Bytes the device can take now (None: the profile has no flow control)."""
        return self._credit

    def _reset(self) -> None:
        self._pending.clear()
        self._incoming = asyncio.Queue()
        self._credit = None
        self.chunks_sent = []

    async def _set_up(self, client: BleakClient, label: str) -> None:
        """Subscribe to ``tx`` (and ``flow``) and read the initial credit."""
        profile = self.profile
        async with _guard(label, "service discovery"):
            service = client.services.get_service(profile.service)
        if service is None:
            raise BleLinkError(
                f"{label}: no serial service {profile.service} (a different device?)"
            )
        rx = service.get_characteristic(profile.rx)
        tx = service.get_characteristic(profile.tx)
        if rx is None or tx is None:
            raise BleLinkError(f"{label}: the serial service lacks its rx or tx characteristic")
        self._rx = rx
        self._chunk = max(1, min(profile.max_chunk, _att_payload(client, rx)))
        async with _guard(label, "subscribe to tx"):
            await client.start_notify(tx, self._on_tx)
        if profile.flow is None:
            return
        flow = service.get_characteristic(profile.flow)
        if flow is None:
            raise BleLinkError(f"{label}: the serial service lacks its flow-control characteristic")
        async with _guard(label, "subscribe to flow control"):
            await client.start_notify(flow, self._on_flow)
        async with _guard(label, "read flow control"):
            value = await client.read_gatt_char(flow)
        self._credit = _credit_value(value)

    def _closing(self) -> None:
        self._rx = None
        self._incoming.put_nowait(_CLOSED)  # a read in progress returns at once
        self._credit_changed.set()

    async def write(self, data: bytes) -> None:
        """Send ``data`` in order, chunked and within the device's flow-control credit."""
        async with self._write_lock:
            view = memoryview(data)
            sent = 0
            while sent < len(view):
                client, rx = self._live()
                size = min(self._chunk, len(view) - sent)
                if self._credit is not None:
                    await self._wait_for_credit()
                    assert self._credit is not None
                    size = min(size, self._credit)
                    # spend the credit BEFORE awaiting: the refill may arrive during the write
                    self._credit -= size
                chunk = bytes(view[sent : sent + size])
                async with _guard(self._address, "write"):
                    await client.write_gatt_char(rx, chunk, response=self._response)
                self.chunks_sent.append(size)
                sent += size

    async def read(self, *, within_s: float) -> bytes:
        """What the device has sent (at least one byte), waiting up to ``within_s`` for it."""
        async with self._read_lock:
            if not self._pending:
                await self._receive(asyncio.get_running_loop().time() + within_s, within_s)
            self._drain_ready()
            data, self._pending = bytes(self._pending), bytearray()
            return data

    async def read_exactly(self, size: int, *, within_s: float) -> bytes:
        """Exactly ``size`` bytes (framed protocols); the rest is kept for the next read."""
        async with self._read_lock:
            deadline = asyncio.get_running_loop().time() + within_s
            while len(self._pending) < size:
                self._drain_ready()
                if len(self._pending) >= size:
                    break
                await self._receive(deadline, within_s, have=len(self._pending), want=size)
            data = bytes(self._pending[:size])
            del self._pending[:size]
            return data

    # -- internals ------------------------------------------------------------------------------

    def _live(self) -> tuple[BleakClient, BleakGATTCharacteristic]:
        client = self._live_client()
        if self._rx is None:
            raise BleLinkError(f"{self._address or self._what}: not connected")
        return client, self._rx

    async def _receive(
        self, deadline: float, within_s: float, *, have: int = 0, want: int = 1
    ) -> None:
        if self._incoming.empty():
            self._live()
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(0.0, remaining)):
                item = await self._incoming.get()
        except TimeoutError:
            raise BleTimeout(
                f"{self._address}: {have} of {want} bytes within {within_s:g} s"
            ) from None
        if item is _CLOSED:
            self._incoming.put_nowait(_CLOSED)  # bytes before it were read; keep the mark
            self._live()
            raise BleLinkError(f"{self._address}: the link was closed")
        assert isinstance(item, bytes)
        self._pending += item

    def _drain_ready(self) -> None:
        while not self._incoming.empty():
            item = self._incoming.get_nowait()
            if item is _CLOSED:
                self._incoming.put_nowait(_CLOSED)  # keep the mark for the next reader
                return
            assert isinstance(item, bytes)
            self._pending += item

    async def _wait_for_credit(self) -> None:
        while self._credit == 0:
            self._live()
            self._credit_changed.clear()
            try:
                async with asyncio.timeout(self._credit_timeout_s):
                    await self._credit_changed.wait()
            except TimeoutError:
                raise BleTimeout(
                    f"{self._address}: the device gave no flow-control credit within "
                    f"{self._credit_timeout_s:g} s (it is not draining its buffer)"
                ) from None
        self._live()

    def _on_tx(self, _char: BleakGATTCharacteristic, data: bytearray) -> None:
        if data:
            self._incoming.put_nowait(bytes(data))

    def _on_flow(self, _char: BleakGATTCharacteristic, data: bytearray) -> None:
        self._credit = _credit_value(data)
        self._credit_changed.set()

    def _link_lost(self, reason: str) -> None:
        self._incoming.put_nowait(_CLOSED)
        self._credit_changed.set()


def _credit_value(data: bytes | bytearray) -> int:
    if len(data) < 4:
        raise BleLinkError(f"flow-control value {bytes(data)!r} is not a 4-byte integer")
    return int.from_bytes(data[:4], "big")


def _att_payload(client: BleakClient, rx: BleakGATTCharacteristic) -> int:
    """The ATT payload (MTU - 3) for a write to ``rx``.

    bleak reports it two ways and each can be stale: BlueZ's ``mtu_size`` is 23 (with a
    warning) until ``_acquire_mtu``, while ``max_write_without_response_size`` is MTU-3 from
    BlueZ 5.62 on; other backends may start at the default 20. The larger of the two is right.
    """
    payload = rx.max_write_without_response_size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(BleakError, NotImplementedError):
            payload = max(payload, client.mtu_size - 3)
    return payload


# -- a link by characteristic ------------------------------------------------------------------

Received = Callable[[bytes], None]
"""What a subscription calls with each notified/indicated value (on the event loop)."""
LinkLost = Callable[[str], None]
"""What a link calls once when the peripheral ends it (with a sentence saying so)."""


class BleLink(_GattConnection):
    """One GATT connection, spoken to by characteristic UUID.

    ``connect`` connects and discovers the services; ``has`` says what the
    peripheral offers (so a driver can tell its firmware apart from a stock example);
    ``subscribe``, ``read`` and ``write`` take a characteristic UUID, optionally within a service
    (two services may reuse a characteristic UUID). ``on_lost`` is called once, on the event
    loop, when the PERIPHERAL ends the link (out of range, reset); never for our own
    ``disconnect``. After a loss every call raises :class:`BleLinkLost`; a new ``connect`` starts
    afresh. Failures are this module's :class:`BleError` family, mapped as for ``BleSerial``:
    connecting, disconnecting and the loss tracking are ``_GattConnection``'s, shared with it.
    """

    def __init__(
        self,
        *,
        backend: ClientBackend | None = None,
        connect_timeout_s: float = 20.0,
        pair: bool = False,
        on_lost: LinkLost | None = None,
    ) -> None:
        super().__init__(backend=backend, connect_timeout_s=connect_timeout_s, pair=pair)
        self._on_lost = on_lost

    @property
    def name(self) -> str | None:
        """The peripheral's name as the OS knows it (None when not connected)."""
        if self._client is None:
            return None
        with contextlib.suppress(BleakError, OSError, AttributeError):
            return self._client.name
        return None

    def has(self, char: str, *, service: str | None = None) -> bool:
        """Whether the peripheral offers characteristic ``char`` (within ``service``)."""
        try:
            self._resolve(char, service)
        except BleLinkLost:
            raise
        except BleLinkError:
            return False
        return True

    def payload_size(self, char: str, *, service: str | None = None) -> int:
        """The most bytes one write to, or one notification from, ``char`` carries (MTU - 3)."""
        client, gatt = self._resolve(char, service)
        return _att_payload(client, gatt)

    async def subscribe(self, char: str, received: Received, *, service: str | None = None) -> None:
        """Call ``received(value)`` for every notification/indication of ``char``.

        An exception from ``received`` is logged, never raised into bleak's callback machinery.
        """
        client, gatt = self._resolve(char, service)
        address = self._address

        def deliver(_char: BleakGATTCharacteristic, data: bytearray) -> None:
            try:
                received(bytes(data))
            except Exception:
                log.exception("%s: handling a notification of %s failed", address, char)

        async with _guard(address, f"subscribe to {char}"):
            await client.start_notify(gatt, deliver)

    async def read(self, char: str, *, service: str | None = None) -> bytes:
        client, gatt = self._resolve(char, service)
        async with _guard(self._address, f"read {char}"):
            return bytes(await client.read_gatt_char(gatt))

    async def write(
        self, char: str, data: bytes, *, service: str | None = None, response: bool = True
    ) -> None:
        """One ATT write of ``data`` (at most ``payload_size`` bytes; nothing is split here)."""
        client, gatt = self._resolve(char, service)
        async with _guard(self._address, f"write {char}"):
            await client.write_gatt_char(gatt, data, response=response)

    # -- internals ------------------------------------------------------------------------------

    def _resolve(
        self, char: str, service: str | None
    ) -> tuple[BleakClient, BleakGATTCharacteristic]:
        client = self._live_client()
        where = f" in service {service}" if service else ""
        try:
            if service is None:
                found = client.services.get_characteristic(char)
            else:
                container = client.services.get_service(service)
                found = container.get_characteristic(char) if container is not None else None
        except BleakError as exc:  # the same UUID twice
            raise BleLinkError(f"{self._address}: characteristic {char}{where}: {exc}") from exc
        if found is None:
            raise BleLinkError(f"{self._address}: no characteristic {char}{where}")
        return client, found

    def _link_lost(self, reason: str) -> None:
        if self._on_lost is None:
            return
        try:
            self._on_lost(reason)
        except Exception:
            log.exception("%s: the link-lost callback failed", self._address)
