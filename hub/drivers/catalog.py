"""What the installed drivers bring to the hub: their order, their tools, their routes and the
event kinds they emit (``Driver.agent_tools``, ``http_routes``, ``event_kinds``).

Nothing here runs a device. The order is the mount order of the drivers' tools: the drivers of
hardware people attach, those shipped with the hub first (in the order they were found, so a
package's tool never takes the name of a built-in one: the first tool of a name is the one
mounted), then those other packages add, then the drivers of the machine's own devices. A driver
whose hook raises is left out of what that hook gives (and logged once); the others still mount.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from drivers.base import Driver, DriverRoute, driver_problem

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)


class OnceLog:
    """A log line for each distinct key, once: a fault that repeats every scan or every turn is
    said when it starts, not every time."""

    def __init__(self) -> None:
        self._said: set[tuple[str, ...]] = set()

    def __call__(
        self, key: tuple[str, ...], message: str, *args: object, level: int = logging.WARNING
    ) -> None:
        if key not in self._said:
            self._said.add(key)
            log.log(level, message, *args)


class DriverCatalog:
    def __init__(self, drivers: Sequence[type[Driver]]) -> None:
        names: set[str] = set()
        for cls in drivers:
            problem = driver_problem(cls)
            if problem is not None:
                raise TypeError(problem)
            if cls.name in names:
                raise ValueError(f"two drivers are named {cls.name!r}")
            names.add(cls.name)
        self.installed: tuple[type[Driver], ...] = tuple(sorted(drivers, key=_mount_order))
        """Every driver class the hub runs, in mount order."""
        self._say = OnceLog()

    def named(self, name: str) -> type[Driver] | None:
        return next((cls for cls in self.installed if cls.name == name), None)

    def family_tools(self, *, machine: bool | None = None) -> list[AgentTool]:
        """The tools every installed driver family adds to each turn, attached or not;
        ``machine`` keeps to the machine's own drivers (True) or the others (False)."""
        found: list[AgentTool] = []
        for cls in self.installed:
            if machine is not None and cls.machine != machine:
                continue
            try:
                found.extend(cls.agent_tools())
            except Exception as exc:  # a plugin's fault must not take every turn's tools
                self._say(("agent_tools", cls.name), "%s: agent_tools() failed: %s", cls.name, exc)
        return found

    def routes(self) -> list[tuple[type[Driver], DriverRoute]]:
        """The HTTP routes every installed driver family adds, with the driver adding each."""
        found: list[tuple[type[Driver], DriverRoute]] = []
        for cls in self.installed:
            try:
                found.extend((cls, route) for route in cls.http_routes())
            except Exception as exc:  # a plugin's fault must not keep the API from starting
                self._say(("http_routes", cls.name), "%s: http_routes() failed: %s", cls.name, exc)
        return found

    def event_kinds(self) -> dict[str, str]:
        """Every event kind an installed driver emits, with the (first) driver emitting it."""
        found: dict[str, str] = {}
        for cls in self.installed:
            for kind in cls.event_kinds:
                found.setdefault(kind, cls.name)
        return found


def shipped(cls: type[Driver]) -> bool:
    """Whether a driver is one of this repository's own (the ``drivers`` package)."""
    return cls.__module__.partition(".")[0] == "drivers"


def _mount_order(cls: type[Driver]) -> tuple[bool, bool]:
    return (cls.machine, not shipped(cls))
