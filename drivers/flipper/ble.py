"""The Flipper Zero over Bluetooth LE: status and files through the protobuf RPC.

Over BLE the Flipper's "serial" GATT service carries ONLY the protobuf RPC (no text CLI), and
the firmware opens the RPC session itself when the host connects (``docs/hardware.md``): so this
driver never sends ``start_rpc_session`` or ``stop_session``; it speaks ``drivers/flipper/rpc.py``
frames over a ``BleSerial`` from the moment the link is up. What the RPC cannot do (there is no
radio receive in it, and the hub's "find me" uses CLI-only ``vibro``/``led``) is refused with
a sentence that says to plug the Flipper in over USB.

Settings (``[drivers.flipper]``, shared with the USB driver: ``enabled`` turns both off):
``pair`` asks bleak to pair while connecting (default False: pair once with ``bluetoothctl``,
typing the PIN the Flipper shows). ``backend`` in its config is bleak's backend seam (None in
production; tests pass ``firmware_bridges.emulators.ble``'s client backend). Every RPC request
is audited as ``rpc <request> [<path>]`` before it is written, and only read-only requests are
sent.

A connected Flipper stops advertising, so a plain scan stops seeing it once this driver holds
the link, and the manager would take it for gone: the driver holds its address in
``drivers/transports/ble_presence.py``, whose :class:`BleAdvertisements` (the manager's
``advertisements=`` source, re-exported here) keeps reporting every address a running driver
holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar

from drivers.base import BleMatcher, Driver, DriverStatus, Setting
from drivers.flipper import rules
from drivers.flipper.cli import CliError
from drivers.flipper.rpc import RpcError, RpcSession
from drivers.flipper.rules import Flipper, FlipperRefused, NotConnected
from drivers.transports.ble import (
    FLIPPER_PROFILE,
    BleError,
    BleNotPaired,
    BleSerial,
    BleTimeout,
    ClientBackend,
)
from drivers.transports.ble_presence import hold, release

log = logging.getLogger(__name__)

USB_ONLY = "not available over Bluetooth; plug the Flipper in over USB"
PING = b"tiny-hub"
_T = TypeVar("_T")


class NotOverBluetooth(FlipperRefused):
    """The request needs the USB CLI (radio receive, vibro/LED)."""


def _first(values: Mapping[str, str], *keys: str) -> str | None:
    """The first key present: RPC info keys are ``_``-joined on older firmware, ``.`` on newer."""
    return next((values[k] for k in keys if k in values), None)


class FlipperBleDriver(Flipper, Driver):
    name: ClassVar[str] = rules.BLE_DRIVER
    over: ClassVar[str] = "Bluetooth LE"
    link: ClassVar[str] = "ble"
    # The advertised 16-bit UUID is 0x3080 OR'ed with the body colour: match the name instead.
    ble: ClassVar[tuple[BleMatcher, ...]] = (BleMatcher(local_name="Flipper *"),)
    capabilities: ClassVar[tuple[str, ...]] = ("flipper", "storage")
    # One table, and one switch, for the Flipper however it is reached.
    settings_section: ClassVar[str] = rules.USB_DRIVER
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "pair",
            False,
            "pair with a Flipper over Bluetooth while connecting (else pair it once with "
            "bluetoothctl, typing the PIN it shows)",
        ),
    )

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        backend: ClientBackend | None = config.get("backend")
        self._link = BleSerial(FLIPPER_PROFILE, backend=backend, pair=bool(config.get("pair")))
        self._session: RpcSession | None = None
        self._lock = asyncio.Lock()
        self._last_ok = 0.0
        self._stopped = False
        self.info: dict[str, str] = {}
        self.rpc_within_s = rules.COMMAND_S
        """How long one RPC frame may take before the exchange counts as broken."""

    # --- the manager's side -------------------------------------------------------------------

    async def start(self) -> None:
        await self._rpc("ping", None, lambda s: s.ping(PING))
        self.info = await self._rpc("device_info", None, lambda s: s.device_info())
        if _first(self.info, "hardware_model", "hardware.model") is None:
            raise CliError("this device answered device_info without a hardware_model")
        hold(self.port, f"Flipper {self.device_name}")

    async def stop(self) -> None:
        self._stopped = True
        release(self.port)
        self._session = None
        await self._link.disconnect()

    def status(self) -> DriverStatus:
        if not self._link.is_connected:
            return DriverStatus("offline", "Flipper is not connected (the Bluetooth link is down)")
        return DriverStatus(
            "online", f"Flipper {self.device_name}, firmware {self.firmware}, over Bluetooth LE"
        )

    async def probe(self) -> bool:
        if self._lock.locked() or time.monotonic() - self._last_ok < 2.0:
            return self._link.is_connected
        if not self._link.is_connected:
            return False
        try:
            async with asyncio.timeout(2.0):
                await self._rpc("ping", None, lambda s: s.ping(PING))
        except (NotConnected, CliError, TimeoutError):
            return False
        return True

    # --- what the tools ask -------------------------------------------------------------------

    @property
    def device_name(self) -> str:
        return _first(self.info, "hardware_name", "hardware.name") or "?"

    @property
    def firmware(self) -> str:
        return _first(self.info, "firmware_version", "firmware.version") or "?"

    async def summary(self) -> dict[str, Any]:
        power = await self._rpc("power_info", None, lambda s: s.power_info())
        return {
            "model": _first(self.info, "hardware_model", "hardware.model"),
            "name": self.device_name,
            "firmware": self.firmware,
            "battery": {
                "level": rules.number(_first(power, "charge.level", "charge_level")),
                "state": _first(power, "charge.state", "charge_state"),
                "voltage_mV": rules.number(_first(power, "battery.voltage", "battery_voltage")),
            },
            "connection": f"Bluetooth LE {self.port}",
        }

    async def _list(self, path: str) -> list[dict[str, Any]]:
        entries = await self._rpc("storage_list", path, lambda s: s.storage_list(path))
        return [{"name": e.name, "dir": e.is_dir, "size": e.size} for e in entries]

    async def _stat(self, path: str) -> dict[str, Any]:
        stat = await self._rpc("storage_stat", path, lambda s: s.storage_stat(path))
        return {"type": "dir"} if stat.is_dir else {"type": "file", "size": stat.size}

    async def read_file(self, path: str) -> bytes:
        """A file's bytes (stat, then read), at most ``READ_MAX_BYTES``."""
        path = rules.checked_path(path)
        stat = await self._rpc("storage_stat", path, lambda s: s.storage_stat(path))
        if stat.is_dir:
            raise FlipperRefused(f"{path} is not a file")
        if stat.size > rules.READ_MAX_BYTES:
            raise FlipperRefused(
                f"{path} is {stat.size} bytes; reads are limited to {rules.READ_MAX_BYTES}"
            )
        data = await self._rpc("storage_read", path, lambda s: s.storage_read(path))
        if len(data) != stat.size:
            raise CliError(f"storage read was cut short: {len(data)} of {stat.size} bytes")
        return data

    async def listen(self, kind: str, seconds: int, frequency: int) -> dict[str, Any]:
        raise NotOverBluetooth(f"listening for {kind} is {USB_ONLY}")

    async def signal(self) -> None:
        """The RPC's audiovisual alert: the Flipper beeps, blinks and vibrates."""
        await self._rpc("play_audiovisual_alert", None, lambda s: s.alert())

    # --- the link -----------------------------------------------------------------------------

    async def _rpc(
        self, request: str, path: str | None, exchange: Callable[[RpcSession], Awaitable[_T]]
    ) -> _T:
        """One audited RPC request; BLE failures become NotConnected / CliError sentences."""
        if request not in rules.RPC_ALLOWED:
            raise FlipperRefused(f"the hub does not send the RPC request {request} to a Flipper")
        async with self._lock, self._ble_errors():
            session = await self._live_session()
            self.audit(f"rpc {request}" + (f" {path}" if path else ""))
            try:
                result = await exchange(session)
            except RpcError as exc:
                if exc.broken or session.broken:
                    log.warning("RPC with %s failed (%s); reconnecting", self.port, exc)
                    await self._drop()
                raise
            except BaseException:
                if session.broken:  # the stream is at an unknown place: start afresh
                    await self._drop()
                raise
        self._last_ok = time.monotonic()
        return result

    async def _live_session(self) -> RpcSession:
        """The open session; (re)connecting when there is none (the firmware opens it)."""
        if self._stopped:
            raise NotConnected("Flipper is not connected (its Bluetooth driver was stopped)")
        if self._session is not None and not self._session.broken and self._link.is_connected:
            return self._session
        await self._drop()
        await self._link.connect(self.port)
        self._session = RpcSession(self._link, within_s=self.rpc_within_s, already_open=True)
        return self._session

    async def _drop(self) -> None:
        self._session = None
        await self._link.disconnect()

    @contextlib.asynccontextmanager
    async def _ble_errors(self) -> AsyncIterator[None]:
        try:
            yield
        except BleTimeout as exc:
            raise CliError(f"the Flipper did not answer over Bluetooth: {exc}") from None
        except BleNotPaired as exc:
            raise NotConnected(str(exc)) from None
        except BleError as exc:
            raise NotConnected(f"Flipper is not connected over Bluetooth ({exc})") from None
