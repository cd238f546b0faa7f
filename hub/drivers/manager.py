"""The driver manager: which hardware is here, which driver runs it, and whether it answers.

Once a second (``scan_interval_s``) it lists the serial ports (and, when given a source, recent
BLE advertisements), matches them to the installed drivers (``matching.py``) and gives each
physical device a :class:`~hub.drivers.supervisor.Supervisor`, which works it in short steps
of its own, so a slow device never holds up the others. The machine's own devices (its camera,
its microphone) are started before the first scan: they need no port, and the hub answers for
them from its first request.

Its settings are one mapping per driver name, the driver's section of config.toml as the
installed driver declares it (``hub/config/drivers.py``), merged with what a test hands the
driver (an emulated radio); the whole mapping is the driver's config.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from drivers.base import UNHEARD, Advertisement, DeviceHost, Driver, PortInfo
from drivers.transports.ble_presence import BleAdvertisements
from drivers.transports.serial import list_ports as serial_list_ports
from hub.config import Settings
from hub.core.tasks import cancel_all
from hub.drivers.catalog import DriverCatalog, OnceLog
from hub.drivers.matching import Survey, Target, match, survey
from hub.drivers.supervisor import Supervisor, Timing

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)

PortLister = Callable[[], Sequence[PortInfo]]
AdvertisementSource = Callable[[], Awaitable[Sequence[Advertisement]]]


class DriverManager:
    def __init__(
        self,
        drivers: Sequence[type[Driver]] | DriverCatalog,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        host: DeviceHost = UNHEARD,
        list_ports: PortLister = serial_list_ports,
        advertisements: AdvertisementSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        scan_interval_s: float = 1.0,
        probe_timeout_s: float = 3.0,
        start_timeout_s: float = 15.0,
        stop_timeout_s: float = 5.0,
        backoff_min_s: float = 1.0,
        backoff_max_s: float = 60.0,
    ) -> None:
        self.catalog = drivers if isinstance(drivers, DriverCatalog) else DriverCatalog(drivers)
        names = {cls.name for cls in self.catalog.installed}
        self._config = {name: dict(section) for name, section in (settings or {}).items()}
        for name, section in self._config.items():
            _check_section(name, section)
            if name not in names:
                log.warning("settings for driver %r, which is not installed", name)
        self._host = host
        self._list_ports = list_ports
        self._advertisements = advertisements
        self._clock = clock
        self._scan_interval_s = scan_interval_s
        self._timing = Timing(
            probe_timeout_s, start_timeout_s, stop_timeout_s, backoff_min_s, backoff_max_s
        )
        self._devices: dict[str, Supervisor] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._say = OnceLog()
        self._scan_problem: str | None = None
        for cls in self.catalog.installed:
            if not self._config.get(cls.name, {}).get("enabled", True):
                log.info("driver %r is disabled in the settings", cls.name)

    # -- the public face ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the machine's own devices, then the scan loop in the background."""
        machine = self._match(Survey([], {}), (), machine_only=True)
        await self._run_steps(machine, only=set(machine))
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.create_task(self._run(), name="driver manager")

    async def stop(self) -> None:
        """Stop the loop, then every running driver."""
        await cancel_all([self._loop_task])
        self._loop_task = None
        steps = [d.task for d in self._devices.values() if d.task is not None and not d.task.done()]
        for step in steps:
            step.cancel()
        await asyncio.gather(*steps, return_exceptions=True)
        await asyncio.gather(*(dev.shut_down() for dev in self._devices.values()))

    async def scan(self) -> None:
        """One scan, waiting for the steps it starts (the loop does not wait; tests do)."""
        await self._run_steps(await self._targets())

    @property
    def host(self) -> DeviceHost:
        """Where the drivers' audit and events go: one path for the drivers, their tools and
        their routes alike."""
        return self._host

    def records(self) -> list[dict[str, Any]]:
        return [dev.record() for dev in self._devices.values()]

    def tools(self) -> list[AgentTool]:
        """The tools of the devices online now."""
        found: list[AgentTool] = []
        for dev in self._online():
            try:
                found.extend(dev.instance.tools() if dev.instance is not None else ())
            except Exception as exc:  # its tools are left out; the device stays usable
                self._say(("tools", dev.device_id), "%s: tools() failed: %s", dev.device_id, exc)
        return found

    def online_family_tools(self) -> list[AgentTool]:
        """The family tools of the drivers with a device online now: what a person asks about
        first (the hub reads their offers ahead before the others)."""
        found: dict[str, AgentTool] = {}
        for dev in self._online():
            try:
                found.update((t.tool_name, t) for t in dev.driver.agent_tools())
            except Exception:  # family_tools() says why, once
                continue
        return list(found.values())

    def online(self, driver_name: str) -> list[Driver]:
        """The running driver instances of one family (what its tools talk to)."""
        return [
            dev.instance
            for dev in self._online()
            if dev.driver.name == driver_name and dev.instance is not None
        ]

    def with_capability(self, capability: str) -> list[Driver]:
        """The running driver instances whose family declares ``capability``, the machine's own
        first."""
        found = [
            dev.instance
            for dev in self._online()
            if capability in dev.driver.capabilities and dev.instance is not None
        ]
        return sorted(found, key=lambda driver: not driver.machine)

    def capabilities(self) -> list[str]:
        """What the devices online now can do, each once, sorted."""
        return sorted({c for dev in self._online() for c in dev.driver.capabilities})

    # -- scanning ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                self._spawn(await self._targets())
                problem = None
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if problem != self._scan_problem:
                if problem is None:
                    log.info("device scan works again")
                else:
                    log.warning("device scan failed (retrying every scan): %s", problem)
                self._scan_problem = problem
            await asyncio.sleep(self._scan_interval_s)

    async def _targets(self) -> dict[str, Target]:
        drivers = self.catalog.installed
        found = await asyncio.to_thread(survey, drivers, self._config, self._list_ports)
        adverts: Sequence[Advertisement] = ()
        if self._advertisements is not None:
            try:
                adverts = await self._advertisements()
            except Exception as exc:
                # No adapter, no D-Bus, ...: BLE devices are unreachable, so they go offline.
                self._say(("ble",), "BLE scan failed: %s", exc)
        return self._match(found, adverts)

    def _match(
        self, found: Survey, adverts: Sequence[Advertisement], *, machine_only: bool = False
    ) -> dict[str, Target]:
        drivers = [c for c in self.catalog.installed if c.machine or not machine_only]
        matched = match(drivers, self._config, found, adverts)
        for note in matched.notes:
            self._say(note.key, note.message, *note.args, level=note.level)
        return matched.targets

    async def _run_steps(self, targets: Mapping[str, Target], only: set[str] | None = None) -> None:
        steps = self._spawn(targets, only)
        if steps:
            await asyncio.wait(steps)

    def _spawn(
        self, targets: Mapping[str, Target], only: set[str] | None = None
    ) -> list[asyncio.Task[None]]:
        """A step for every device not in one (``only``: for those devices alone)."""
        for device_id, target in targets.items():
            if device_id not in self._devices:
                config = self._config.get(target.driver.name, {})
                self._devices[device_id] = Supervisor(
                    target, config, self._host, self._timing, self._clock
                )
                log.info("found %s (%s) on %s", device_id, target.name, target.port)
        spawned = []
        for device_id, dev in self._devices.items():
            if only is not None and device_id not in only:
                continue
            if dev.task is None or dev.task.done():
                dev.task = asyncio.create_task(
                    dev.step(targets.get(device_id)), name=f"driver step {device_id}"
                )
                spawned.append(dev.task)
        return spawned

    def _online(self) -> list[Supervisor]:
        return [dev for dev in self._devices.values() if dev.online]


def _check_section(name: str, section: Mapping[str, Any]) -> None:
    """The manager's own keys must have the right types; a wrong one is a setup error."""
    enabled = section.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"drivers.{name}.enabled must be true or false, not {enabled!r}")
    port = section.get("port")
    if port is not None and not isinstance(port, str):
        raise ValueError(f"drivers.{name}.port must be a path, not {port!r}")
    deny = section.get("deny", ())
    if isinstance(deny, str) or not all(isinstance(item, str) for item in deny):
        raise ValueError(f"drivers.{name}.deny must be a list of serial numbers, not {deny!r}")


def open_manager(
    settings: Settings,
    catalog: DriverCatalog,
    host: DeviceHost,
    *,
    drivers: Mapping[str, Mapping[str, Any]] | None = None,
    **options: Any,
) -> DriverManager:
    """The manager of every installed driver, each configured from its section of the
    settings; ``drivers`` merges more config over that (how tests hand a driver an emulated
    radio), ``options`` go to the manager."""
    config: dict[str, dict[str, Any]] = {}
    for cls in catalog.installed:
        section = settings.drivers.get(cls.section(), {})
        config[cls.name] = {s.key: section.get(s.key, s.default) for s in cls.declared_settings()}
    read = {cls.section() for cls in catalog.installed}
    for unread in settings.drivers:
        if unread not in read:
            log.warning("[drivers.%s] in the settings: no installed driver reads it", unread)
    for name, extra in (drivers or {}).items():
        config.setdefault(name, {}).update(extra)
    options.setdefault("advertisements", BleAdvertisements(seconds=2.0))
    return DriverManager(catalog, config, host=host, **options)
