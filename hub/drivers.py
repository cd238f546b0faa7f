"""The driver manager: which hardware is here, which driver runs it, and whether it answers.

It is one module on purpose: discovery, start, health, back-off and the tools and routes of the
drivers are all decisions about the same set of running drivers.

Once a second (``scan_interval_s``) it lists the serial ports (and, when given a source, recent
BLE advertisements), gives each port to the driver whose matcher is most specific, and keeps
one record per physical device, keyed by the device's stable id (its serial number or BLE
address, never the port path: the same Flipper replugged as ``ttyACM1`` keeps its record).

Each record is worked by its own short step (start, probe or stop, each under a timeout), so a
slow device never holds up the others. A device whose port vanished or whose probe fails is
stopped and marked offline by the next step (within about scan interval + probe timeout); it is
started again when it is back. A driver that raises is marked ``error`` with its message, and
retried with exponential backoff (``backoff_min_s`` doubling up to ``backoff_max_s``); the log
gets a line when a device's state changes, not on every attempt.

Per-driver settings (one mapping per driver name)::

    {"flipper": {"enabled": True, "port": "/dev/serial/by-id/usb-Flipper...", "deny": ["flip_X"]}}

``enabled`` (default True) — a disabled driver takes part in nothing; ``port`` pins the driver
to that path (a device, a pty, or a symlink to either; it is used whenever the path exists, with
or without USB details, and the driver then auto-starts no other port); ``deny`` lists stable ids
never to start. The whole mapping is also handed to the driver as its config.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from drivers.base import (
    Advertisement,
    Driver,
    DriverRoute,
    DriverState,
    PortInfo,
    driver_problem,
)
from drivers.transports.serial import list_ports as serial_list_ports
from hub.core.tasks import cancel_all

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)

Transport = Literal["usb", "serial", "ble"]
PortLister = Callable[[], Sequence[PortInfo]]
AdvertisementSource = Callable[[], Awaitable[Sequence[Advertisement]]]


@dataclass(frozen=True)
class _Target:
    """A device seen in this scan, and the driver that should run it."""

    driver: type[Driver]
    device_id: str
    port: str  # what the driver opens: a path, or a BLE address
    real: str  # the path behind ``port`` (symlinks resolved): a change means a new port
    name: str
    transport: Transport


@dataclass
class _Device:
    """One physical device, across plugs, paths and driver sessions."""

    device_id: str
    driver: type[Driver]
    name: str
    transport: Transport
    state: DriverState = "offline"
    detail: str = "found, starting"
    instance: Driver | None = None
    port: str | None = None
    real: str | None = None
    failures: int = 0
    retry_at: float = 0.0
    task: asyncio.Task[None] | None = None


@dataclass(frozen=True)
class _Survey:
    ports: list[tuple[PortInfo, str]]  # each listed port with its resolved path
    pins: dict[str, tuple[bool, str]]  # driver name -> (pinned path exists, resolved path)


def _describe(exc: BaseException, what: str, limit_s: float) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"{what} did not finish within {limit_s:g} s"
    text = str(exc)
    return f"{what} failed: {text}" if text else f"{what} failed: {type(exc).__name__}"


class DriverManager:
    def __init__(
        self,
        drivers: Sequence[type[Driver]],
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        *,
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
        names: set[str] = set()
        for cls in drivers:
            problem = driver_problem(cls)
            if problem is not None:
                raise TypeError(problem)
            if cls.name in names:
                raise ValueError(f"two drivers are named {cls.name!r}")
            names.add(cls.name)
        self._drivers = tuple(drivers)
        self._settings = {name: dict(section) for name, section in (settings or {}).items()}
        for name, section in self._settings.items():
            _check_section(name, section)
            if name not in names:
                log.warning("settings for driver %r, which is not installed", name)
        self._list_ports = list_ports
        self._advertisements = advertisements
        self._clock = clock
        self._scan_interval_s = scan_interval_s
        self._probe_timeout_s = probe_timeout_s
        self._start_timeout_s = start_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._backoff_min_s = backoff_min_s
        self._backoff_max_s = backoff_max_s
        self._devices: dict[str, _Device] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._said: set[tuple[str, ...]] = set()
        self._scan_problem: str | None = None
        for cls in self._drivers:
            if not self._enabled(cls):
                log.info("driver %r is disabled in the settings", cls.name)

    # -- the public face ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the scan loop in the background (returns at once)."""
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
        await asyncio.gather(*(self._shut_down(d) for d in self._devices.values()))

    async def scan(self) -> None:
        """One scan, waiting for the steps it starts (the loop does not wait; tests do)."""
        steps = self._spawn(await self._targets())
        if steps:
            await asyncio.wait(steps)

    def records(self) -> list[dict[str, Any]]:
        return [
            {
                "driver": dev.driver.name,
                "device_id": dev.device_id,
                "name": dev.name,
                "transport": dev.transport,
                "status": state,
                "detail": detail,
                "capabilities": list(dev.driver.capabilities),
            }
            for dev in self._devices.values()
            for state, detail in [self._effective(dev)]
        ]

    @property
    def installed(self) -> tuple[type[Driver], ...]:
        """Every driver class the hub runs, the ones shipped with it first (in the order they
        were found), then the ones other packages add: a package's tool never takes the name
        of a built-in one, since the first tool of a name is the one mounted."""
        return tuple(sorted(self._drivers, key=lambda cls: not _shipped(cls)))

    def family_tools(self) -> list[AgentTool]:
        """The tools every installed driver family adds to each turn, attached or not. A driver
        whose ``agent_tools`` raises is left out (and logged once); the others still mount."""
        found: list[AgentTool] = []
        for cls in self.installed:
            try:
                found.extend(cls.agent_tools())
            except Exception as exc:  # a plugin's fault must not take every turn's tools
                self._say_once(
                    ("agent_tools", cls.name), "%s: agent_tools() failed: %s", cls.name, exc
                )
        return found

    def routes(self) -> list[tuple[type[Driver], DriverRoute]]:
        """The HTTP routes every installed driver family adds, with the driver adding each."""
        found: list[tuple[type[Driver], DriverRoute]] = []
        for cls in self.installed:
            try:
                found.extend((cls, route) for route in cls.http_routes())
            except Exception as exc:  # a plugin's fault must not keep the API from starting
                self._say_once(
                    ("http_routes", cls.name), "%s: http_routes() failed: %s", cls.name, exc
                )
        return found

    def tools(self) -> list[AgentTool]:
        """The tools of the devices online now."""
        found: list[AgentTool] = []
        for dev in self._online():
            if dev.instance is None:
                continue
            try:
                found.extend(dev.instance.tools())
            except Exception as exc:  # its tools are left out; the device stays usable
                self._say_once(
                    ("tools", dev.device_id), "%s: tools() failed: %s", dev.device_id, exc
                )
        return found

    def online(self, driver_name: str) -> list[Driver]:
        """The running driver instances of one family (what its tools talk to)."""
        return [
            dev.instance
            for dev in self._online()
            if dev.driver.name == driver_name and dev.instance is not None
        ]

    def with_capability(self, capability: str) -> list[Driver]:
        """The running driver instances whose family declares ``capability``."""
        return [
            dev.instance
            for dev in self._online()
            if capability in dev.driver.capabilities and dev.instance is not None
        ]

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

    async def _targets(self) -> dict[str, _Target]:
        survey = await asyncio.to_thread(self._survey)
        adverts: Sequence[Advertisement] = ()
        if self._advertisements is not None:
            try:
                adverts = await self._advertisements()
            except Exception as exc:
                # No adapter, no D-Bus, ...: BLE devices are unreachable, so they go offline.
                self._say_once(("ble",), "BLE scan failed: %s", exc)
        return self._match(survey, adverts)

    def _survey(self) -> _Survey:
        """What is plugged in (blocking: sysfs and the filesystem; runs on a thread)."""
        ports = [(info, os.path.realpath(info.device)) for info in self._list_ports()]
        pins: dict[str, tuple[bool, str]] = {}
        for cls in self._drivers:
            pin = self._pin(cls)
            if pin is not None and self._enabled(cls):
                # exists() follows symlinks: a symlink to a pty that has closed does not exist
                pins[cls.name] = (os.path.exists(pin), os.path.realpath(pin))
        return _Survey(ports, pins)

    def _match(self, survey: _Survey, adverts: Sequence[Advertisement]) -> dict[str, _Target]:
        targets: dict[str, _Target] = {}

        def add(target: _Target) -> None:
            kept = targets.get(target.device_id)
            if kept is None:
                targets[target.device_id] = target
            elif kept.real != target.real:
                self._say_once(
                    ("twin", target.device_id),
                    "%s and %s both identify as %s; only the first is used (pin one by port)",
                    kept.port,
                    target.port,
                    target.device_id,
                )

        pinned_paths = {real for _, real in survey.pins.values()}
        for cls in self._drivers:
            pin = self._pin(cls)
            if cls.name not in survey.pins or pin is None:
                continue
            exists, real = survey.pins[cls.name]
            if not exists:
                continue
            listed = next((info for info, path in survey.ports if path == real), None)
            stable = cls.stable_id(listed) if listed is not None else None
            if stable is None:
                # Nothing on the port identifies the device (a pty, a UART, a serial-less
                # board): the pinned path the person configured is the only name that stays
                # the same across replugs, so it stands in for the stable id.
                stable = f"port:{pin}"
            if self._denied(cls, stable):
                continue
            info = listed or PortInfo(device=pin)
            add(
                _Target(
                    cls,
                    f"{cls.name}:{stable}",
                    pin,
                    real,
                    cls.display_name(info),
                    "usb" if info.is_usb else "serial",
                )
            )

        for info, real in survey.ports:
            if real in pinned_paths:
                continue
            winner = self._winner(info.device, [(cls, cls.usb_score(info)) for cls in self._live()])
            if winner is None or self._pin(winner) is not None:
                continue  # a pinned driver claims its kind of port but starts only its pin
            stable = winner.stable_id(info)
            if stable is None:
                self._say_once(
                    ("anonymous", info.device),
                    "%s matches driver %r but has nothing to identify it by; pin it by port",
                    info.device,
                    winner.name,
                )
                continue
            if self._denied(winner, stable):
                continue
            add(
                _Target(
                    winner,
                    f"{winner.name}:{stable}",
                    info.device,
                    real,
                    winner.display_name(info),
                    "usb",
                )
            )

        for adv in adverts:
            winner = self._winner(adv.address, [(cls, cls.ble_score(adv)) for cls in self._live()])
            if winner is None:
                continue
            stable = winner.stable_id(adv)
            if stable is None or self._denied(winner, stable):
                continue
            add(
                _Target(
                    winner,
                    f"{winner.name}:{stable}",
                    adv.address,
                    adv.address,
                    winner.display_name(adv),
                    "ble",
                )
            )
        return targets

    def _winner(self, where: str, scores: list[tuple[type[Driver], int]]) -> type[Driver] | None:
        """The driver whose matcher is most specific; on a tie the first listed, with a warning."""
        best = max((score for _, score in scores), default=0)
        if best == 0:
            return None
        tied = [cls for cls, score in scores if score == best]
        if len(tied) > 1:
            names = tuple(cls.name for cls in tied)
            self._say_once(
                ("tie", where, *names),
                "%s is claimed by drivers %s equally; using %r",
                where,
                ", ".join(names),
                names[0],
            )
        return tied[0]

    def _spawn(self, targets: Mapping[str, _Target]) -> list[asyncio.Task[None]]:
        for device_id, target in targets.items():
            if device_id not in self._devices:
                self._devices[device_id] = _Device(
                    device_id, target.driver, target.name, target.transport
                )
                log.info("found %s (%s) on %s", device_id, target.name, target.port)
        spawned = []
        for device_id, dev in self._devices.items():
            if dev.task is None or dev.task.done():
                dev.task = asyncio.create_task(
                    self._step(dev, targets.get(device_id)), name=f"driver step {device_id}"
                )
                spawned.append(dev.task)
        return spawned

    # -- one device ----------------------------------------------------------------------------

    async def _step(self, dev: _Device, target: _Target | None) -> None:
        try:
            if target is None:
                await self._gone(dev)
                return
            dev.name, dev.transport = target.name, target.transport
            if dev.instance is not None and (dev.port, dev.real) != (target.port, target.real):
                moved = f"moved from {dev.port} to {target.port}"
                if not await self._retire(dev, "offline", moved, failed=False):
                    return
                dev.failures, dev.retry_at = 0, 0.0
            if dev.instance is None:
                if self._clock() >= dev.retry_at:
                    await self._start(dev, target)
                return
            await self._probe(dev)
        except Exception as exc:  # a fault here must never end the scan loop
            log.exception("driver manager fault on %s", dev.device_id)
            self._fail(dev, "error", f"internal error: {exc}")

    async def _gone(self, dev: _Device) -> None:
        """The port (or advertisement) is no longer there; when it is back, start at once."""
        dev.failures, dev.retry_at = 0, 0.0
        if dev.instance is not None:
            await self._retire(dev, "offline", f"{dev.port} is gone", failed=False)
        elif dev.state != "offline":
            self._set(dev, "offline", "not connected")

    async def _start(self, dev: _Device, target: _Target) -> None:
        try:
            config = MappingProxyType(dict(self._settings.get(target.driver.name, {})))
            instance = target.driver(dev.device_id, target.port, config)
        except Exception as exc:
            self._fail(dev, "error", _describe(exc, "creating the driver", 0))
            return
        try:
            async with asyncio.timeout(self._start_timeout_s):
                await instance.start()
        except asyncio.CancelledError:
            await self._abandon(instance)
            raise
        except Exception as exc:
            await self._abandon(instance)
            self._fail(dev, "error", _describe(exc, "start", self._start_timeout_s))
            return
        dev.instance, dev.port, dev.real = instance, target.port, target.real
        dev.failures, dev.retry_at = 0, 0.0
        self._set(dev, "online", self._status_detail(instance) or f"on {target.port}")

    async def _probe(self, dev: _Device) -> None:
        instance = dev.instance
        assert instance is not None
        state: DriverState
        try:
            async with asyncio.timeout(self._probe_timeout_s):
                answered = await instance.probe()
        except TimeoutError:
            state, detail = "offline", f"no answer within {self._probe_timeout_s:g} s"
        except Exception as exc:
            state, detail = "error", _describe(exc, "probe", self._probe_timeout_s)
        else:
            if answered:
                self._set(dev, "online", self._status_detail(instance) or dev.detail)
                return
            state, detail = "offline", "not answering"
        await self._retire(dev, state, detail, failed=True)

    async def _retire(self, dev: _Device, state: DriverState, detail: str, *, failed: bool) -> bool:
        """Mark the device first (it reads offline at once), then stop its driver.

        ``failed`` schedules the next start after a backoff. False when the driver's stop
        raised or hung: the device is then in ``error``.
        """
        if failed:
            self._fail(dev, state, detail)
        else:
            self._set(dev, state, detail)
        problem = await self._stop_instance(dev)
        if problem is None:
            return True
        self._fail(dev, "error", f"{detail}; {problem}")
        return False

    async def _stop_instance(self, dev: _Device) -> str | None:
        """Stop the running driver; the problem, if its stop raised or hung."""
        instance = dev.instance
        if instance is None:
            return None
        try:
            async with asyncio.timeout(self._stop_timeout_s):
                await instance.stop()
        except Exception as exc:
            dev.instance = None
            return _describe(exc, "stop", self._stop_timeout_s)
        dev.instance = None  # not on cancellation: then stop() is called again at shutdown
        return None

    async def _abandon(self, instance: Driver) -> None:
        """Stop an instance whose start failed; its own error is the one worth reporting."""
        try:
            async with asyncio.timeout(self._stop_timeout_s):
                await instance.stop()
        except Exception:
            log.debug("stop after a failed start raised", exc_info=True)

    async def _shut_down(self, dev: _Device) -> None:
        if dev.instance is None:
            return
        problem = await self._stop_instance(dev)
        if problem is not None:
            self._set(dev, "error", problem)
        else:
            self._set(dev, "offline", "the hub stopped")

    # -- bookkeeping ---------------------------------------------------------------------------

    def _set(self, dev: _Device, state: DriverState, detail: str, note: str = "") -> None:
        """Record the state; log only when it changes (not on every retry of the same state)."""
        changed = state != dev.state
        dev.state, dev.detail = state, detail
        if changed:
            level = logging.WARNING if state == "error" else logging.INFO
            log.log(level, "%s is %s: %s%s", dev.device_id, state, detail, note)

    def _fail(self, dev: _Device, state: DriverState, detail: str) -> None:
        """A failed attempt: the next one waits backoff_min_s, doubling to backoff_max_s."""
        dev.failures += 1
        delay = min(self._backoff_max_s, self._backoff_min_s * 2 ** (dev.failures - 1))
        dev.retry_at = self._clock() + delay
        log.debug("%s: attempt %d failed, next in %g s", dev.device_id, dev.failures, delay)
        self._set(dev, state, detail, f" (retrying in {delay:g} s, then less often)")

    def _effective(self, dev: _Device) -> tuple[DriverState, str]:
        """The record's state, or the running driver's own word for it."""
        if dev.instance is None or dev.state != "online":
            return dev.state, dev.detail
        try:
            status = dev.instance.status()
        except Exception as exc:
            return "error", _describe(exc, "status", 0)
        return status.state, status.detail or dev.detail

    def _status_detail(self, instance: Driver) -> str:
        try:
            return instance.status().detail
        except Exception:
            return ""

    def _online(self) -> list[_Device]:
        return [d for d in self._devices.values() if self._effective(d)[0] == "online"]

    def _section(self, cls: type[Driver]) -> Mapping[str, Any]:
        return self._settings.get(cls.name, {})

    def _enabled(self, cls: type[Driver]) -> bool:
        return bool(self._section(cls).get("enabled", True))

    def _live(self) -> list[type[Driver]]:
        return [cls for cls in self._drivers if self._enabled(cls)]

    def _pin(self, cls: type[Driver]) -> str | None:
        pin = self._section(cls).get("port")
        return str(pin) if pin else None

    def _denied(self, cls: type[Driver], stable: str) -> bool:
        deny = {str(item).casefold() for item in self._section(cls).get("deny", ())}
        if stable.casefold() not in deny:
            return False
        self._say_once(
            ("deny", cls.name, stable),
            "not starting %s:%s: denied in the settings",
            cls.name,
            stable,
            level=logging.INFO,
        )
        return True

    def _say_once(
        self, key: tuple[str, ...], message: str, *args: object, level: int = logging.WARNING
    ) -> None:
        if key not in self._said:
            self._said.add(key)
            log.log(level, message, *args)


def _shipped(cls: type[Driver]) -> bool:
    """Whether a driver is one of this repository's own (the ``drivers`` package)."""
    return cls.__module__.partition(".")[0] == "drivers"


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
