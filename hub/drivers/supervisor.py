"""One physical device across plugs, paths and driver sessions: its driver started, probed and
stopped, each step under a timeout, with back-off after a failure.

A device whose port vanished or whose probe fails is stopped and marked offline by the next
step (within about a scan interval and a probe timeout); it is started again when it is back,
on a fresh driver instance. A driver that raises is marked ``error`` with its message and
retried with exponential backoff (``backoff_min_s`` doubling up to ``backoff_max_s``); the log
gets a line when a device's state changes, not on every attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from drivers.base import DeviceHost, Driver, DriverState
from hub.drivers.matching import Target, Transport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timing:
    """How long each step may take, and how long a failed device waits before the next try."""

    probe_timeout_s: float = 3.0
    start_timeout_s: float = 15.0
    stop_timeout_s: float = 5.0
    backoff_min_s: float = 1.0
    backoff_max_s: float = 60.0


def describe(exc: BaseException, what: str, limit_s: float) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"{what} did not finish within {limit_s:g} s"
    text = str(exc)
    return f"{what} failed: {text}" if text else f"{what} failed: {type(exc).__name__}"


class Supervisor:
    """The record of one device and the driver instance that runs it now (if any)."""

    def __init__(
        self,
        target: Target,
        config: Mapping[str, Any],
        host: DeviceHost,
        timing: Timing,
        clock: Callable[[], float],
    ) -> None:
        self.device_id = target.device_id
        self.driver: type[Driver] = target.driver
        self.name = target.name
        self.transport: Transport = target.transport
        self.state: DriverState = "offline"
        self.detail = "found, starting"
        self.instance: Driver | None = None
        self.port: str | None = None
        self.real: str | None = None
        self.task: asyncio.Task[None] | None = None
        self._config = config
        self._host = host
        self._timing = timing
        self._clock = clock
        self._failures = 0
        self._retry_at = 0.0

    def record(self) -> dict[str, Any]:
        state, detail = self.effective()
        return {
            "driver": self.driver.name,
            "device_id": self.device_id,
            "name": self.name,
            "transport": self.transport,
            "status": state,
            "detail": detail,
            "capabilities": list(self.driver.capabilities),
        }

    def effective(self) -> tuple[DriverState, str]:
        """The record's state, or the running driver's own word for it."""
        if self.instance is None or self.state != "online":
            return self.state, self.detail
        try:
            status = self.instance.status()
        except Exception as exc:
            return "error", describe(exc, "status", 0)
        return status.state, status.detail or self.detail

    @property
    def online(self) -> bool:
        return self.effective()[0] == "online"

    async def step(self, target: Target | None) -> None:
        """One step: stop it when its device is gone, start it when it is due, else probe."""
        try:
            if target is None:
                await self._gone()
                return
            self.name, self.transport = target.name, target.transport
            if self.instance is not None and (self.port, self.real) != (target.port, target.real):
                moved = f"moved from {self.port} to {target.port}"
                if not await self._retire("offline", moved, failed=False):
                    return
                self._failures, self._retry_at = 0, 0.0
            if self.instance is None:
                if self._clock() >= self._retry_at:
                    await self._start(target)
                return
            await self._probe()
        except Exception as exc:  # a fault here must never end the scan loop
            log.exception("driver manager fault on %s", self.device_id)
            self._fail("error", f"internal error: {exc}")

    async def shut_down(self) -> None:
        """The hub stops: stop the running driver."""
        if self.instance is None:
            return
        problem = await self._stop_instance()
        if problem is not None:
            self._set("error", problem)
        else:
            self._set("offline", "the hub stopped")

    async def _gone(self) -> None:
        """The port (or advertisement) is no longer there; when it is back, start at once."""
        self._failures, self._retry_at = 0, 0.0
        if self.instance is not None:
            await self._retire("offline", f"{self.port} is gone", failed=False)
        elif self.state != "offline":
            self._set("offline", "not connected")

    async def _start(self, target: Target) -> None:
        try:
            config = MappingProxyType(dict(self._config))
            instance = target.driver(self.device_id, target.port, config)
            instance.host = self._host  # so a driver whose __init__ takes no host gets it too
        except Exception as exc:
            self._fail("error", describe(exc, "creating the driver", 0))
            return
        limit = self._timing.start_timeout_s
        try:
            async with asyncio.timeout(limit):
                await instance.start()
        except asyncio.CancelledError:
            await self._abandon(instance)
            raise
        except Exception as exc:
            await self._abandon(instance)
            self._fail("error", describe(exc, "start", limit))
            return
        self.instance, self.port, self.real = instance, target.port, target.real
        self._failures, self._retry_at = 0, 0.0
        self._set("online", _status_detail(instance) or f"on {target.port}")

    async def _probe(self) -> None:
        instance = self.instance
        assert instance is not None
        limit = self._timing.probe_timeout_s
        state: DriverState
        try:
            async with asyncio.timeout(limit):
                answered = await instance.probe()
        except TimeoutError:
            state, detail = "offline", f"no answer within {limit:g} s"
        except Exception as exc:
            state, detail = "error", describe(exc, "probe", limit)
        else:
            if answered:
                self._set("online", _status_detail(instance) or self.detail)
                return
            state, detail = "offline", "not answering"
        await self._retire(state, detail, failed=True)

    async def _retire(self, state: DriverState, detail: str, *, failed: bool) -> bool:
        """Mark the device first (it reads offline at once), then stop its driver.

        ``failed`` schedules the next start after a backoff. False when the driver's stop
        raised or hung: the device is then in ``error``.
        """
        if failed:
            self._fail(state, detail)
        else:
            self._set(state, detail)
        problem = await self._stop_instance()
        if problem is None:
            return True
        self._fail("error", f"{detail}; {problem}")
        return False

    async def _stop_instance(self) -> str | None:
        """Stop the running driver; the problem, if its stop raised or hung."""
        instance = self.instance
        if instance is None:
            return None
        limit = self._timing.stop_timeout_s
        try:
            async with asyncio.timeout(limit):
                await instance.stop()
        except Exception as exc:
            self.instance = None
            return describe(exc, "stop", limit)
        self.instance = None  # not on cancellation: then stop() is called again at shutdown
        return None

    async def _abandon(self, instance: Driver) -> None:
        """Stop an instance whose start failed; its own error is the one worth reporting."""
        try:
            async with asyncio.timeout(self._timing.stop_timeout_s):
                await instance.stop()
        except Exception:
            log.debug("stop after a failed start raised", exc_info=True)

    def _set(self, state: DriverState, detail: str, note: str = "") -> None:
        """Record the state; log only when it changes (not on every retry of the same state)."""
        changed = state != self.state
        self.state, self.detail = state, detail
        if changed:
            level = logging.WARNING if state == "error" else logging.INFO
            log.log(level, "%s is %s: %s%s", self.device_id, state, detail, note)

    def _fail(self, state: DriverState, detail: str) -> None:
        """A failed attempt: the next one waits backoff_min_s, doubling to backoff_max_s."""
        self._failures += 1
        timing = self._timing
        delay = min(timing.backoff_max_s, timing.backoff_min_s * 2 ** (self._failures - 1))
        self._retry_at = self._clock() + delay
        log.debug("%s: attempt %d failed, next in %g s", self.device_id, self._failures, delay)
        self._set(state, detail, f" (retrying in {delay:g} s, then less often)")


def _status_detail(instance: Driver) -> str:
    try:
        return instance.status().detail
    except Exception:
        return ""
