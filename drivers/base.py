"""What a driver is, how the hub recognises its hardware, and how drivers are found.

A driver is a class that names itself, says which hardware it handles (USB and BLE matchers, in
the spirit of Home Assistant's manifest matchers: every field of one matcher must fit, fnmatch
patterns, and when two drivers claim the same port the matcher constraining more fields wins) and
lists its capabilities. The hub's driver manager (``hub/drivers.py``) makes one instance per
physical device and session, starts it, probes it, and stops it when the device goes away.

Drivers are found through the ``tiny_hub.drivers`` entry-point group, so a third-party package
adds one by declaring ``[project.entry-points."tiny_hub.drivers"] name = "package.module:Class"``.
Nothing here touches a port or a radio: that is ``drivers/transports/``.
"""

from __future__ import annotations

import abc
import dataclasses
import fnmatch
import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "tiny_hub.drivers"

DriverState = Literal["online", "offline", "error"]

# Bluetooth SIG base UUID: a 16- or 32-bit UUID ("3080", "0x180d") is short for this.
_BASE_UUID_TAIL = "-0000-1000-8000-00805f9b34fb"


@lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern[str]:
    """fnmatch pattern → compiled case-insensitive regex (compiled once per pattern)."""
    return re.compile(fnmatch.translate(pattern.casefold()))


def _fits(pattern: str | None, value: str | None) -> bool:
    if pattern is None:
        return True
    if value is None:
        return False
    return _pattern(pattern).match(value.casefold()) is not None


def normalize_uuid(uuid: str) -> str:
    """Lower-case 128-bit form; 16/32-bit SIG short forms are expanded onto the base UUID."""
    text = uuid.strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if len(text) in (4, 8) and all(c in "0123456789abcdef" for c in text):
        return f"{int(text, 16):08x}{_BASE_UUID_TAIL}"
    return text


@dataclass(frozen=True)
class PortInfo:
    """One serial port as the OS describes it (see ``drivers.transports.serial.list_ports``).

    The USB fields are None for a port that is not USB (a built-in UART, a pseudo-terminal).
    """

    device: str
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None
    manufacturer: str | None = None
    description: str | None = None
    product: str | None = None
    hwid: str | None = None

    @property
    def is_usb(self) -> bool:
        return self.vid is not None and self.pid is not None


@dataclass(frozen=True)
class Advertisement:
    """The parts of a BLE advertisement a matcher reads (bleak's AdvertisementData, trimmed).

    ``address`` is the MAC address on Linux and Windows and a per-host UUID on macOS; both are
    stable for a given peripheral on a given host, which is what a device record needs.
    """

    address: str
    local_name: str | None = None
    service_uuids: tuple[str, ...] = ()
    manufacturer_ids: tuple[int, ...] = ()


def _constrained(matcher: Any) -> int:
    """How many of a matcher's fields are set."""
    return sum(getattr(matcher, f.name) is not None for f in dataclasses.fields(matcher))


def _require_a_field(matcher: Any, claims: str) -> None:
    if _constrained(matcher) == 0:
        raise ValueError(f"a {type(matcher).__name__} with no field set would claim {claims}")


@dataclass(frozen=True)
class UsbMatcher:
    """A USB serial device a driver handles: every field set must fit; None means any.

    ``vid``/``pid`` compare as integers; the text fields are fnmatch patterns compared without
    regard to case (``serial_number="flip_*"``). A matcher only ever matches a USB port.
    """

    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None
    manufacturer: str | None = None
    description: str | None = None
    product: str | None = None

    def __post_init__(self) -> None:
        _require_a_field(self, "every USB port")

    @property
    def specificity(self) -> int:
        """How many fields this matcher constrains (the most specific matcher wins a port)."""
        return _constrained(self)

    def matches(self, port: PortInfo) -> bool:
        if not port.is_usb:
            return False
        if self.vid is not None and port.vid != self.vid:
            return False
        if self.pid is not None and port.pid != self.pid:
            return False
        return (
            _fits(self.serial_number, port.serial_number)
            and _fits(self.manufacturer, port.manufacturer)
            and _fits(self.description, port.description)
            and _fits(self.product, port.product)
        )


@dataclass(frozen=True)
class BleMatcher:
    """A BLE peripheral a driver handles: every field set must fit; None means any.

    ``local_name`` is an fnmatch pattern (case-insensitive); ``service_uuid`` must be among the
    advertised service UUIDs (short SIG forms such as ``"180d"`` are expanded); ``manufacturer_id``
    must be among the advertised manufacturer-data company ids.
    """

    local_name: str | None = None
    service_uuid: str | None = None
    manufacturer_id: int | None = None

    def __post_init__(self) -> None:
        _require_a_field(self, "every advertisement")

    @property
    def specificity(self) -> int:
        return _constrained(self)

    def matches(self, adv: Advertisement) -> bool:
        if not _fits(self.local_name, adv.local_name):
            return False
        if self.service_uuid is not None and normalize_uuid(self.service_uuid) not in {
            normalize_uuid(u) for u in adv.service_uuids
        }:
            return False
        return self.manufacturer_id is None or self.manufacturer_id in adv.manufacturer_ids


@dataclass(frozen=True)
class DriverStatus:
    state: DriverState
    detail: str = ""


class Driver(abc.ABC):
    """One physical device, driven. Subclasses set the class attributes and the four methods.

    The manager creates a fresh instance for each session with a device (a replug, a retry after
    a failure), so an instance never has to be restarted: ``start`` once, ``stop`` once (``stop``
    must also be safe after a ``start`` that raised or was cancelled half way). ``port`` is a
    serial path (``/dev/ttyACM0``, a pinned symlink) or, for a BLE device, its address.
    """

    name: ClassVar[str]
    """Short, unique, lower-case; the key of this driver's config section and of device ids."""
    usb: ClassVar[tuple[UsbMatcher, ...]] = ()
    ble: ClassVar[tuple[BleMatcher, ...]] = ()
    capabilities: ClassVar[tuple[str, ...]]
    """What the hub can ask of such a device ("camera", "subghz", ...); shown to the agent."""

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        self.device_id = device_id
        self.port = port
        self.config = config

    @abc.abstractmethod
    async def start(self) -> None:
        """Open the transport and check the device answers; raise with a readable message if not."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Release the transport. Idempotent; must not raise because the device is already gone."""

    @abc.abstractmethod
    def status(self) -> DriverStatus:
        """What the driver knows now (e.g. online, "Flipper Unyana, firmware 1.4.3")."""

    @abc.abstractmethod
    async def probe(self) -> bool:
        """Is the device still answering? Called about once a second while online.

        Cheap, and must not queue behind a long command (a streaming read holds the line for
        seconds): a driver whose line is busy, or that heard from the device a moment ago,
        should answer True from that. Return False (not raise) when the device is silent or its
        transport is gone; raise only for a driver fault.
        """

    def tools(self) -> list[AgentTool]:
        """The agent tools this device contributes while online (may be empty)."""
        return []

    @classmethod
    def stable_id(cls, info: PortInfo | Advertisement) -> str | None:
        """The key of this device's record: the same physical device → the same key, always.

        Never the port path: ``/dev/ttyACM0`` is handed out in plug order, so it names a
        different board after a replug. None when the device cannot be told apart at all.
        """
        if isinstance(info, Advertisement):
            return info.address
        if info.serial_number:
            return info.serial_number
        if info.is_usb:
            # Some boards (cheap CH340/CP210x bridges, some CDC gadgets) report no USB serial
            # number, and USB offers nothing else that survives a replug: the port path and the
            # bus location (hwid LOCATION=) both change when the cable moves. A hash of the
            # descriptors is stable across replugs but cannot tell two identical serial-less
            # boards apart; it is the least bad key, and pinning ``port`` in the config is the
            # way to tell such twins apart.
            text = f"{info.vid}:{info.pid}:{info.manufacturer}:{info.product}:{info.description}"
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            return f"usb-{info.vid:04x}-{info.pid:04x}-{digest}"
        return None

    @classmethod
    def display_name(cls, info: PortInfo | Advertisement) -> str:
        """A name a person recognises, for the device list."""
        if isinstance(info, Advertisement):
            return info.local_name or info.address
        return info.product or info.description or f"{cls.name} on {info.device}"

    @classmethod
    def usb_score(cls, port: PortInfo) -> int:
        """The specificity of this driver's best matcher for ``port``; 0 when none matches."""
        return max((m.specificity for m in cls.usb if m.matches(port)), default=0)

    @classmethod
    def ble_score(cls, adv: Advertisement) -> int:
        return max((m.specificity for m in cls.ble if m.matches(adv)), default=0)


def driver_problem(candidate: object) -> str | None:
    """Why ``candidate`` cannot be used as a driver class, or None when it can."""
    if not (isinstance(candidate, type) and issubclass(candidate, Driver)):
        return f"{candidate!r} is not a Driver subclass"
    if getattr(candidate, "__abstractmethods__", None):
        missing = ", ".join(sorted(candidate.__abstractmethods__))
        return f"{candidate.__qualname__} does not implement {missing}"
    name = getattr(candidate, "name", None)
    if not isinstance(name, str) or not name:
        return f"{candidate.__qualname__} has no name"
    capabilities = getattr(candidate, "capabilities", None)
    if not isinstance(capabilities, tuple) or not all(isinstance(c, str) for c in capabilities):
        return f"{candidate.__qualname__}.capabilities is not a tuple of strings"
    return None


_reported: set[tuple[str, str, str]] = set()


def _report_once(ep: EntryPoint, problem: str) -> None:
    key = (ep.group, ep.name, ep.value)
    if key in _reported:
        return
    _reported.add(key)
    dist = f" (from {ep.dist.name})" if ep.dist is not None else ""
    log.warning("driver %r%s skipped: %s", ep.name, dist, problem)


def load_drivers(group: str = ENTRY_POINT_GROUP) -> list[type[Driver]]:
    """Every driver class registered under ``group``, in a stable order.

    An entry point that fails to import, or that does not name a usable Driver class, is skipped
    and logged once per process: one broken third-party package never takes the hub down. When
    two entry points register the same driver name, the first (by entry-point name) is kept.
    """
    found: dict[str, type[Driver]] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        try:
            candidate = ep.load()
        except (Exception, SystemExit) as exc:  # a plugin's import must not end the hub
            _report_once(ep, f"import failed: {type(exc).__name__}: {exc}")
            continue
        problem = driver_problem(candidate)
        if problem is not None:
            _report_once(ep, problem)
            continue
        driver: type[Driver] = candidate
        kept = found.get(driver.name)
        if kept is not None and kept is not driver:
            _report_once(ep, f"driver name {driver.name!r} is already taken by {kept!r}")
            continue
        found[driver.name] = driver
    return list(found.values())
