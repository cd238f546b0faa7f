"""Which driver runs which device: the survey of what is plugged in, and the match.

:func:`match` is pure: the same survey, advertisements and settings give the same targets, and
what is worth telling a person (two drivers claiming one port, a device nothing can tell apart)
comes back as :class:`Note` s for the caller to log once. Every physical device is named by its
stable id (its serial number or BLE address, never the port path), so the same board
replugged as ``ttyACM1`` is the same target.

A driver's config decides three things here: ``enabled`` (default True; a disabled driver
takes part in nothing), ``port`` (pin the driver to that path: it is used whenever the path
exists, with or without USB details, and the driver then claims no other port) and ``deny``
(stable ids never to start). A machine driver's devices come from ``machine_devices``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from drivers.base import Advertisement, Driver, PortInfo

Transport = Literal["usb", "serial", "ble", "machine"]
Config = Mapping[str, Mapping[str, Any]]
"""Each driver's config, by driver name."""


@dataclass(frozen=True)
class Target:
    """A device seen in this scan, and the driver that should run it."""

    driver: type[Driver]
    device_id: str
    port: str  # what the driver opens: a path, a BLE address, a machine device's name
    real: str  # the path behind ``port`` (symlinks resolved): a change means a new port
    name: str
    transport: Transport


@dataclass(frozen=True)
class Survey:
    """What is plugged in: each listed port with its resolved path, and each enabled pinned
    driver's pin (whether the path exists, and its resolved path)."""

    ports: list[tuple[PortInfo, str]]
    pins: dict[str, tuple[bool, str]]


@dataclass(frozen=True)
class Note:
    """Something a person should read once (``key`` says which once)."""

    key: tuple[str, ...]
    message: str
    args: tuple[object, ...] = ()
    level: int = logging.WARNING


@dataclass
class Matched:
    targets: dict[str, Target] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)


def enabled(cls: type[Driver], config: Config) -> bool:
    return bool(config.get(cls.name, {}).get("enabled", True))


def pin(cls: type[Driver], config: Config) -> str | None:
    found = config.get(cls.name, {}).get("port")
    return str(found) if found else None


def survey(
    drivers: Sequence[type[Driver]], config: Config, list_ports: Callable[[], Sequence[PortInfo]]
) -> Survey:
    """What is plugged in (blocking: sysfs and the filesystem; run it on a thread)."""
    ports = [(info, os.path.realpath(info.device)) for info in list_ports()]
    pins: dict[str, tuple[bool, str]] = {}
    for cls in drivers:
        pinned = pin(cls, config)
        if pinned is not None and enabled(cls, config):
            # exists() follows symlinks: a symlink to a pty that has closed does not exist
            pins[cls.name] = (os.path.exists(pinned), os.path.realpath(pinned))
    return Survey(ports, pins)


def match(
    drivers: Sequence[type[Driver]],
    config: Config,
    found: Survey,
    adverts: Sequence[Advertisement] = (),
) -> Matched:
    """Every device to run now, by device id: pinned ports first, then the listed ports each
    given to the driver whose matcher is most specific, then BLE advertisements, then the
    machine's own devices."""
    matched = Matched()
    live = [cls for cls in drivers if enabled(cls, config)]

    def add(target: Target) -> None:
        kept = matched.targets.get(target.device_id)
        if kept is None:
            matched.targets[target.device_id] = target
        elif kept.real != target.real:
            matched.notes.append(
                Note(
                    ("twin", target.device_id),
                    "%s and %s both identify as %s; only the first is used (pin one by port)",
                    (kept.port, target.port, target.device_id),
                )
            )

    def denied(cls: type[Driver], stable: str) -> bool:
        deny = {str(item).casefold() for item in config.get(cls.name, {}).get("deny", ())}
        if stable.casefold() not in deny:
            return False
        matched.notes.append(
            Note(
                ("deny", cls.name, stable),
                "not starting %s:%s: denied in the settings",
                (cls.name, stable),
                logging.INFO,
            )
        )
        return True

    def winner(where: str, scores: list[tuple[type[Driver], int]]) -> type[Driver] | None:
        """The driver whose matcher is most specific; on a tie the first, with a note."""
        best = max((score for _, score in scores), default=0)
        if best == 0:
            return None
        tied = [cls for cls, score in scores if score == best]
        if len(tied) > 1:
            names = tuple(cls.name for cls in tied)
            matched.notes.append(
                Note(
                    ("tie", where, *names),
                    "%s is claimed by drivers %s equally; using %r",
                    (where, ", ".join(names), names[0]),
                )
            )
        return tied[0]

    pinned_paths = {real for _, real in found.pins.values()}
    for cls in drivers:
        pinned = pin(cls, config)
        if cls.name not in found.pins or pinned is None:
            continue
        exists, real = found.pins[cls.name]
        if not exists:
            continue
        listed = next((info for info, path in found.ports if path == real), None)
        stable = cls.stable_id(listed) if listed is not None else None
        if stable is None:
            # Nothing on the port identifies the device (a pty, a UART, a serial-less
            # board): the pinned path the person configured is the only name that stays
            # the same across replugs, so it stands in for the stable id.
            stable = f"port:{pinned}"
        if denied(cls, stable):
            continue
        info = listed or PortInfo(device=pinned)
        transport: Transport = "usb" if info.is_usb else "serial"
        add(Target(cls, f"{cls.name}:{stable}", pinned, real, cls.display_name(info), transport))

    for info, real in found.ports:
        if real in pinned_paths:
            continue
        chosen = winner(info.device, [(cls, cls.usb_score(info)) for cls in live])
        if chosen is None or pin(chosen, config) is not None:
            continue  # a pinned driver claims its kind of port but starts only its pin
        stable = chosen.stable_id(info)
        if stable is None:
            matched.notes.append(
                Note(
                    ("anonymous", info.device),
                    "%s matches driver %r but has nothing to identify it by; pin it by port",
                    (info.device, chosen.name),
                )
            )
            continue
        if denied(chosen, stable):
            continue
        name = chosen.display_name(info)
        add(Target(chosen, f"{chosen.name}:{stable}", info.device, real, name, "usb"))

    for adv in adverts:
        chosen = winner(adv.address, [(cls, cls.ble_score(adv)) for cls in live])
        if chosen is None:
            continue
        stable = chosen.stable_id(adv)
        if stable is None or denied(chosen, stable):
            continue
        name = chosen.display_name(adv)
        add(Target(chosen, f"{chosen.name}:{stable}", adv.address, adv.address, name, "ble"))

    for cls in live:
        for info in cls.machine_devices(config.get(cls.name, {})) if cls.machine else ():
            name = cls.display_name(info)
            add(Target(cls, f"{cls.name}:{info.device}", info.device, info.device, name, "machine"))
    return matched
