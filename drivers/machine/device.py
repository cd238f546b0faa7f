"""What the machine's own devices share as drivers: found from one ``device`` setting rather
than a port (the manager starts them with the hub), opened for each capture rather than held,
so there is nothing to open at start and nothing to answer a probe with but yes; whether one is
there, ``status`` says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from drivers.base import Driver, PortInfo


class MachineDevice(Driver):
    machine: ClassVar[bool] = True
    what: ClassVar[str]
    """The device as a person calls it ("this machine's camera"), for the device list."""
    off: ClassVar[str]
    """The ``device`` value that turns it off."""
    default: ClassVar[str]
    """What an empty ``device`` opens ("" when empty is the value that turns it off)."""

    @classmethod
    def machine_devices(cls, config: Mapping[str, Any]) -> Sequence[PortInfo]:
        device = str(config.get("device", "")).strip()
        if device.casefold() == cls.off:
            return ()
        return (PortInfo(device or cls.default, product=cls.what),)

    async def start(self) -> None:
        """Nothing to open: the device is opened for each capture."""

    async def probe(self) -> bool:
        return True
