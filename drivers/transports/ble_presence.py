"""Which BLE devices are here: what a scan hears, plus the peripherals a running driver holds.

A peripheral stops advertising once a central connects to it (the Flipper Zero does, and so do
Arduino boards running ArduinoBLE), so while a driver holds its link a plain scan no longer
hears it and the driver manager would take it for gone, stop the driver and drop the link it
needs. A BLE driver therefore calls :func:`hold` once its link is up and :func:`release` when it
stops, and :class:`BleAdvertisements` (the manager's ``advertisements=`` source) keeps reporting
every held address under its last advertisement.

The registry is per process (module state): one hub, one radio.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from drivers.base import Advertisement
from drivers.transports.ble import BleError, BleUnavailable, ScannerBackend, scan

log = logging.getLogger(__name__)

# Address (upper case) -> what to report for it while a running driver holds its link.
_held: dict[str, Advertisement] = {}


def hold(address: str, local_name: str, service_uuids: Sequence[str] = ()) -> None:
    """A driver holds the link to ``address``: keep reporting it although it stops advertising.

    ``local_name`` and ``service_uuids`` are what is reported when no scan of this process heard
    the device before (they must still fit the driver's matcher, or the manager drops it).
    """
    key = address.upper()
    _held[key] = Advertisement(key, local_name=local_name, service_uuids=tuple(service_uuids))


def release(address: str) -> None:
    """The driver let go of ``address`` (idempotent)."""
    _held.pop(address.upper(), None)


def held() -> Mapping[str, Advertisement]:
    """The held addresses now (a live, read-only view, keyed by upper-case address)."""
    return MappingProxyType(_held)


class BleAdvertisements:
    """The driver manager's ``advertisements=`` source: ``scan(seconds, backend)`` each call.

    No usable Bluetooth (no adapter, no BlueZ, no D-Bus) yields no advertisements and is logged
    once (and once more when it works again), so USB keeps working on a machine with no radio.
    A peripheral that a running driver holds (see :func:`hold`) stops advertising; it is
    reported under its last advertisement while the driver holds it, so the manager does not
    take it for gone.
    """

    def __init__(self, seconds: float = 2.0, backend: ScannerBackend | None = None) -> None:
        self.seconds = seconds
        self.backend = backend
        self._seen: dict[str, Advertisement] = {}
        self._problem: str | None = None

    async def __call__(self) -> list[Advertisement]:
        try:
            found = await scan(self.seconds, self.backend)
        except BleError as exc:
            self._say(str(exc), unavailable=isinstance(exc, BleUnavailable))
            return []
        self._say(None)
        for adv in found:
            self._seen[adv.address.upper()] = adv
        addresses = {adv.address.upper() for adv in found}
        for address, advert in list(_held.items()):
            if address not in addresses:
                found.append(self._seen.get(address) or advert)
        return found

    def _say(self, problem: str | None, *, unavailable: bool = False) -> None:
        if problem == self._problem:
            return
        if problem is None:
            log.info("Bluetooth scanning works again")
        elif unavailable:
            log.warning("Bluetooth LE devices are unreachable: %s", problem)
        else:
            log.warning("Bluetooth scan failed (retrying every scan): %s", problem)
        self._problem = problem
