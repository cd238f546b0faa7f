"""What a driver is, how the hub recognises its hardware, and how drivers are found.

It is one module on purpose: it is the whole contract a driver package imports (the driver
class, its matchers, its host, its result shapes), so a third-party driver imports one stable
module rather than following the hub's internal layout.

A driver is a class that names itself, says which hardware it handles (USB and BLE matchers, in
the spirit of Home Assistant's manifest matchers: every field of one matcher must fit, fnmatch
patterns, and when two drivers claim the same port the matcher constraining more fields wins) and
lists its capabilities. The hub's driver manager (``hub/drivers/``) makes one instance per
physical device and session, starts it, probes it, and stops it when the device goes away.

Drivers are found through the ``tiny_hub.drivers`` entry-point group, so a third-party package
adds one by declaring ``[project.entry-points."tiny_hub.drivers"] name = "package.module:Class"``.
Nothing here touches a port or a radio: that is ``drivers/transports/``.

A driver class also brings what the hub offers for its family: its settings (``settings``,
typed and documented, read from ``[drivers.<name>]`` in config.toml and the environment and
shown by ``tiny-hub config``), the kinds of event its devices put on the owner's event ring
(``event_kinds``), agent tools (``agent_tools``, mounted in every turn whether or not such a
device is attached) and HTTP routes (``http_routes``, each with its access level). A running
driver reaches the hub through its :class:`DeviceHost` (``audit``, ``emit``); its tools and
routes through :class:`DriverHost`, the few things a tool or a route needs (is the caller the
owner, the online drivers of a family, the audit, the result shapes), so ``drivers/`` never
imports the hub and a third-party package gets the same footing as the built-in drivers.
"""

from __future__ import annotations

import abc
import dataclasses
import fnmatch
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s, aiohttp ~0.1 s
    from aiohttp import web
    from strands.types.tools import AgentTool
    from strands.types.tools import ToolContext as StrandsToolContext

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "tiny_hub.drivers"

DriverState = Literal["online", "offline", "error"]

SettingValue = bool | int | float | str | tuple[str, ...]


@dataclass(frozen=True)
class Setting:
    """One setting a driver reads: ``key`` in its ``[drivers.<section>]`` table of config.toml,
    or the environment variable ``env`` (empty: ``TINY_HUB_<SECTION>_<KEY>``).

    ``default``'s type is the setting's type: true/false, a whole number, a number, a string,
    or a list of strings (a tuple; comma-separated in the variable). ``choices``, when given,
    are the only strings allowed. The hub checks both before the driver sees a value, with the
    file, line and key of a bad one; what else a value must be, the driver checks itself.
    """

    key: str
    default: SettingValue
    help: str
    env: str = ""
    choices: tuple[str, ...] = ()

    def variable(self, section: str) -> str:
        """The environment variable that sets it."""
        return self.env or f"TINY_HUB_{section}_{self.key}".upper()


ENABLED = Setting("enabled", True, "use this driver at all")
"""Every driver has it: a disabled driver takes part in nothing."""

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


class _Matcher:
    """What a USB and a BLE matcher share: at least one field set (an empty matcher would claim
    every device), and how many are set (the most specific matcher wins a device)."""

    claimed_when_empty: ClassVar[str]

    def __post_init__(self) -> None:
        if self.specificity == 0:
            raise ValueError(
                f"a {type(self).__name__} with no field set would claim {self.claimed_when_empty}"
            )

    @property
    def specificity(self) -> int:
        """How many fields this matcher constrains (the most specific matcher wins a port)."""
        return sum(getattr(self, f.name) is not None for f in dataclasses.fields(self))  # type: ignore[arg-type]


@dataclass(frozen=True)
class UsbMatcher(_Matcher):
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

    claimed_when_empty: ClassVar[str] = "every USB port"

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
class BleMatcher(_Matcher):
    """A BLE peripheral a driver handles: every field set must fit; None means any.

    ``local_name`` is an fnmatch pattern (case-insensitive); ``service_uuid`` must be among the
    advertised service UUIDs (short SIG forms such as ``"180d"`` are expanded); ``manufacturer_id``
    must be among the advertised manufacturer-data company ids.
    """

    local_name: str | None = None
    service_uuid: str | None = None
    manufacturer_id: int | None = None

    claimed_when_empty: ClassVar[str] = "every advertisement"

    def matches(self, adv: Advertisement) -> bool:
        if not _fits(self.local_name, adv.local_name):
            return False
        if self.service_uuid is not None and normalize_uuid(self.service_uuid) not in {
            normalize_uuid(u) for u in adv.service_uuids
        }:
            return False
        return self.manufacturer_id is None or self.manufacturer_id in adv.manufacturer_ids


ToolResult = dict[str, Any]
"""What a tool returns: ``{"status": "success" | "error", "content": [...]}`` (strands' shape)."""

RouteAccess = Literal["anyone", "user", "owner"]
"""Who may call a driver's route: no sign-in, any signed-in user, or only the hub's owner."""

HOST_STATE_KEY = "tiny_hub"
"""Where a turn's host sits in strands' invocation state (the hub puts it there)."""


class DriverError(Exception):
    """A device could not do what was asked; ``str()`` says why, for a person. Every driver's
    own errors derive from it, so a tool or a route catches one type whatever the family."""


class DriverHostError(Exception):
    """The hub refused what a driver's tool asked of it; the message says why."""


class DeviceHost(Protocol):
    """What the hub lends a running driver (``Driver.host``): the one way its commands reach
    the audit log and its events the owner's event ring. Tools and routes get the same through
    :class:`DriverHost`."""

    def audit(self, driver: str, device_id: str, command: str) -> None:
        """Record a command sent to hardware in the hub's audit log (before it is sent)."""
        ...

    def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
        """Put an event of ``kind`` (one of the driver's ``event_kinds``) on the owner's event
        ring, where ``/api/events`` streams it."""
        ...


class _Unheard:
    """The host of a driver made outside a hub (a test, a capture): nothing is kept."""

    def audit(self, driver: str, device_id: str, command: str) -> None:
        pass

    def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
        pass


UNHEARD: DeviceHost = _Unheard()


class DriverHost(DeviceHost, Protocol):
    """What the hub lends a driver's tools and routes for one turn or one request.

    The hub's tool context satisfies it in a turn, and a per-request object in a route; a
    driver package depends on this and nothing of the hub's.
    """

    def owner_refusal(self, what: str) -> ToolResult | None:
        """The refusal to return when the caller is not the hub's owner (``what`` names the
        thing refused, "the Flipper attached to it"), or None when the caller is the owner."""
        ...

    def online(self, family: str) -> list[Driver]:
        """The running driver instances named ``family`` (``Driver.name``)."""
        ...

    def driver_records(self) -> list[dict[str, Any]]:
        """Every device the driver manager knows: ``driver``, ``status``, ``detail``, ..."""
        ...

    def devices_reporting(self, capability: str) -> list[str]:
        """The names of the caller's enrolled devices (phones, other hubs) that report
        ``capability`` and are not known to be offline; empty for an anonymous caller."""
        ...

    def ok(self, text: str, **data: Any) -> ToolResult:
        """A success: text for the model, and JSON for clients when there is some."""
        ...

    def failed(self, text: str) -> ToolResult:
        """A failure the model reads and can tell the person."""
        ...

    def seen(self, camera: str, device_id: str | None, jpeg: bytes) -> ToolResult:
        """A photo kept in the hub's media store and shown to the model."""
        ...

    def filmed(self, camera: str, device_id: str | None, mp4: bytes, seconds: float) -> ToolResult:
        """A video clip kept in the hub's media store."""
        ...

    async def heard(self, source: str, device_id: str | None, wav: bytes) -> ToolResult:
        """A recording kept, transcribed on the hub and announced."""
        ...

    def dial_in_devices(self, capability: str) -> list[dict[str, Any]]:
        """The owner's dial-in devices (phones) that report ``capability``, online ones first,
        as the device list shows them (``id``, ``name``, ``online``, ...)."""
        ...

    async def ask_device(self, device_id: str, envelope: dict[str, Any]) -> ToolResult:
        """Send one of the owner's dial-in devices ``envelope`` and return its answer."""
        ...

    def recent_events(self, kind: str) -> list[dict[str, Any]]:
        """The owner's recent events of ``kind``, oldest first (``detail``, ``deviceId``,
        ``created_at``)."""
        ...

    def transcripts(self, limit: int) -> list[dict[str, Any]]:
        """The owner's newest recordings' transcripts, newest first."""
        ...

    def transcript(self, transcript_id: str) -> dict[str, Any]:
        """One transcript; raises :class:`DriverHostError` when the owner has none by that id."""
        ...


HintedTool = TypeVar("HintedTool")


@dataclass(frozen=True)
class SmallModelHints:
    """What a tool says about itself to the hub's layer for small on-device models (docs/
    models.md), declared where the tool is defined, as a driver declares its matchers: that
    layer names no tool, and a tool whose hints are the defaults needs none.

    A small model is shown only the few tools nearest the person's message, each with its plain
    arguments; these say how near is near enough for this tool, what it is asked for in a
    person's words, which arguments it never writes, and what the model is asked before a call
    to it runs."""

    # Offered with every message (the person's memory: what they tell it can always be kept).
    always_offered: bool = False
    # How related (the offer's score) a message must be for this tool to be offered; None: the
    # layer's own bar.
    offered_at_least: float | None = None
    # Requests it serves, as a person words them: the offer reads them beside the description.
    asked_like: tuple[str, ...] = ()
    # Arguments a small model never writes (the person sets them, or a larger model).
    withheld: frozenset[str] = frozenset()
    # JSON Schema keywords added to an argument's schema for a small model (a pattern its call
    # grammar enforces), by argument name.
    shaped: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # A yes/no question about the person's message alone, asked before a call runs (a memory
    # write); its examples as (message, "yes" or "no"). Empty: the layer checks that the tool
    # is made for the message.
    confirm: str = ""
    confirm_examples: tuple[tuple[str, str], ...] = ()
    # The argument that states a fact about the person: a call whose fact the memory already
    # holds, word for word, is not made again.
    fact_argument: str = ""
    # Read ahead before the hub says the model is ready, with the families of devices online:
    # what a person asks for on their first day. Other families are read after, in idle time.
    read_first: bool = False
    # Tools of one family are offered together (the offers of messages about one thing repeat,
    # so the model's runner reads each once); "": a family of its own.
    family: str = ""


SMALL_MODEL_HINTS = "small_model_hints"


def hinted(family: str, *tools: HintedTool, **hints: Any) -> tuple[HintedTool, ...]:
    """``tools``, each declaring ``SmallModelHints(family=family, **hints)``."""
    for tool in tools:
        setattr(tool, SMALL_MODEL_HINTS, SmallModelHints(family=family, **hints))
    return tools


def hints_of(tool: object) -> SmallModelHints:
    """What ``tool`` declared for small models; the defaults when it declared nothing."""
    found = getattr(tool, SMALL_MODEL_HINTS, None)
    return found if isinstance(found, SmallModelHints) else SmallModelHints()


def turn_host(tool_context: StrandsToolContext) -> DriverHost:
    """The host of the turn a driver's tool runs in. Tools are built once and find their turn
    in strands' invocation state, which the hub fills for every turn."""
    host: DriverHost = tool_context.invocation_state[HOST_STATE_KEY]
    return host


AttachedDriver = TypeVar("AttachedDriver", bound="Driver")
Attached = TypeVar("Attached")


def first_online(host: DriverHost, kind: type[AttachedDriver]) -> AttachedDriver | None:
    """The first running driver of class ``kind`` (its family is ``kind.name``), or None."""
    for driver in host.online(kind.name):
        if isinstance(driver, kind):
            return driver
    return None


async def with_attached(
    tool_context: StrandsToolContext,
    what: str,
    attached: Callable[[DriverHost], Attached | None],
    missing: Callable[[DriverHost], str],
    action: Callable[[DriverHost, Attached], Awaitable[dict[str, Any]]],
    errors: tuple[type[Exception], ...],
) -> dict[str, Any]:
    """What every owner-only device tool does around its own work: refuse anyone but the owner
    (``what`` names the device), say what is missing when no device is attached, and turn the
    driver's own errors (``errors``) into a failure the model reads."""
    host = turn_host(tool_context)
    refusal = host.owner_refusal(what)
    if refusal is not None:
        return dict(refusal)
    device = attached(host)
    if device is None:
        return dict(host.failed(missing(host)))
    try:
        return await action(host, device)
    except errors as exc:
        return dict(host.failed(str(exc)))


RouteHandler = Callable[["web.Request", DriverHost], Awaitable["web.StreamResponse"]]


@dataclass(frozen=True)
class DriverRoute:
    """One HTTP route a driver adds to the hub's API.

    The hub mounts it under its own middlewares (errors as JSON, rate limits, sign-in), checks
    ``access`` before the handler runs, and hands the handler the request and the host. A
    handler refuses bad input with an ``aiohttp.web.HTTPException`` (4xx/503 with a reason),
    never by letting an exception escape. ``path`` must start with ``/api/drivers/<name>/``.
    """

    method: str
    path: str
    handler: RouteHandler
    access: RouteAccess = "user"


@runtime_checkable
class StillCamera(Protocol):
    """A driver whose device takes photos (capability ``"camera"``): the hub's own snapshot
    route falls back to the first such device online when the machine has no camera."""

    async def snapshot(self) -> bytes:
        """One JPEG."""
        ...


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
    settings: ClassVar[tuple[Setting, ...]] = ()
    """What this driver reads from its section of config.toml, besides :data:`ENABLED` (every
    driver's). Two keys mean something to the hub's driver manager too, for a driver that
    declares them: ``port`` (a string: pin the driver to that path, a device, a pseudo-terminal
    or a symlink; it then starts no other port) and ``deny`` (a list: stable ids never to
    start)."""
    settings_section: ClassVar[str] = ""
    """The section it reads, when it is not ``name``: the drivers of one device reached two
    ways share one (the Flipper over BLE reads ``[drivers.flipper]``)."""
    event_kinds: ClassVar[tuple[str, ...]] = ()
    """The kinds of event its devices put on the owner's event ring (:meth:`emit`); a dial-in
    device may post them too (``POST /api/devices/event``)."""
    machine: ClassVar[bool] = False
    """A device of the machine the hub runs on (its camera, its microphone), found by
    :meth:`machine_devices` rather than by a matcher. Its tools mount after those of the
    hardware people attach, which a request for "the camera" more likely means."""

    def __init__(
        self,
        device_id: str,
        port: str,
        config: Mapping[str, Any],
        host: DeviceHost = UNHEARD,
    ) -> None:
        """``config``: the driver's settings (every key of :meth:`declared_settings`, checked),
        and any seam a test hands it (an emulated radio); ``host``: where its audit and its
        events go."""
        self.device_id = device_id
        self.port = port
        self.config = config
        self.host = host

    def audit(self, command: str) -> None:
        """Hand ``command`` to the hub's audit log: call it before the command is sent."""
        self.host.audit(self.name, self.device_id, command)

    def emit(self, kind: str, detail: Any) -> None:
        """Put ``detail`` on the owner's event ring as ``kind``, one of :attr:`event_kinds`."""
        if kind not in self.event_kinds:
            raise ValueError(f"{self.name} declares no event kind {kind!r}")
        self.host.emit(self.name, kind, self.device_id, detail)

    @classmethod
    def section(cls) -> str:
        """The ``[drivers.<section>]`` table it reads."""
        return cls.settings_section or cls.name

    @classmethod
    def declared_settings(cls) -> tuple[Setting, ...]:
        """Every setting it reads: :data:`ENABLED` first (unless it declares its own), then its
        own."""
        if any(s.key == ENABLED.key for s in cls.settings):
            return cls.settings
        return (ENABLED, *cls.settings)

    @classmethod
    def machine_devices(cls, config: Mapping[str, Any]) -> Sequence[PortInfo]:
        """For a :attr:`machine` driver: the devices the settings ``config`` turn on (none when
        they turn it off), each as what the driver opens (``device``) and a name
        (``product``)."""
        return ()

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
    def agent_tools(cls) -> Sequence[AgentTool]:
        """The agent tools this driver family adds to every turn, attached or not: with no
        device online they should say so at once. They find the hub with :func:`turn_host`."""
        return ()

    @classmethod
    def http_routes(cls) -> Sequence[DriverRoute]:
        """The HTTP routes this driver family adds to the hub's API, each with its access."""
        return ()

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


def _shipped(ep: EntryPoint) -> bool:
    """Whether an entry point names a driver of this repository's own ``drivers`` package."""
    return ep.value.partition(".")[0] == "drivers"


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
    and logged once per process: one broken third-party package never takes the hub down. The
    drivers shipped with the hub (the ``drivers`` package) come first, then the others, each by
    entry-point name; when two register the same driver name the first is kept, so a package
    cannot take the name (and the tools and settings) of a built-in driver.
    """
    found: dict[str, type[Driver]] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: (not _shipped(e), e.name, e.value)):
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
