"""The machine's own camera and microphone turned off for a hub a test or a benchmark starts (a
developer's webcam must not be opened by the suite), unless the caller's driver settings say
otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MACHINE_OFF: dict[str, dict[str, Any]] = {"camera": {"device": ""}, "microphone": {"device": "off"}}


def drivers_with_machine_off(
    drivers: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """``drivers`` (the ``drivers`` override of the settings) over :data:`MACHINE_OFF`."""
    merged = {name: dict(section) for name, section in MACHINE_OFF.items()}
    for name, section in (drivers or {}).items():
        merged.setdefault(name, {}).update(section)
    return merged


def camera_on(capture: Any) -> dict[str, Any]:
    """``start_hub``'s arguments for a hub whose camera is on, its OpenCV capture ``capture``
    (an emulated one): the driver setting, and the seam the capture enters through."""
    return {
        "drivers": {"camera": {"device": "0"}},
        "hardware": {"drivers": {"camera": {"capture": capture}}},
    }


def microphone_on(sounddevice: Any) -> dict[str, Any]:
    """The same for the microphone (the default input), through an emulated PortAudio."""
    return {
        "drivers": {"microphone": {"device": ""}},
        "hardware": {"drivers": {"microphone": {"sounddevice": sounddevice}}},
    }
