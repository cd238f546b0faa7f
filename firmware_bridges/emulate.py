"""``tiny-hub emulate``: the software boards of ``emulators/``, served so a person can try a
driver without the hardware.

A board on a USB serial line is served on a pseudo-terminal: its path is printed, then the
setting that points a hub at it. A board on Bluetooth LE cannot be reached across processes, so
it is attached to a hub started in the same process (``Emulation.attach``: the hardware seams
for ``Hub.open`` and the board's own loop). Importing this module loads no emulator: each is
imported when it is asked for, so the command line that lists them stays quick.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Attached = tuple[Mapping[str, Any], Callable[[], Coroutine[Any, Any, None]]]
"""The hardware seams a hub opens with, and the board's loop (run beside the hub)."""


@dataclass(frozen=True)
class Emulation:
    device: str
    """What ``tiny-hub emulate`` takes."""
    driver: str
    """The driver it stands in for: its ``port`` setting points a hub at a served board."""
    serve: Callable[[Path | None, argparse.Namespace, str], None] | None = None
    """Serve the board on a pseudo-terminal until Ctrl+C (the last argument: what to run next)."""
    attach: Callable[[argparse.Namespace], Attached] | None = None
    """The board attached to a hub in this process, instead of served."""

    def next_step(self, env: str) -> str:
        """What to run once the board is served (``{path}`` is filled in by the board)."""
        return (
            "a hub running as this user finds it by itself within a second; to point one at "
            f"this port instead:  {env}={{path}} tiny-hub   "
            f"(or drivers.{self.driver}.port in config.toml)"
        )


def _serve_flipper(link: Path | None, args: argparse.Namespace, next_step: str) -> None:
    from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState

    state = FlipperState(name=args.name or "Unyana", nfc_style=args.nfc_style)
    FlipperEmulator(state, link=link).serve(next_step)


def _serve_nicla_vision(link: Path | None, args: argparse.Namespace, next_step: str) -> None:
    from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator

    NiclaVisionEmulator(link=link).serve(next_step)


def _attach_nicla_voice(args: argparse.Namespace) -> Attached:
    from drivers.transports.ble_presence import BleAdvertisements
    from firmware_bridges.emulators.nicla_voice import demo_backend, demo_wakes

    client, scanner, board = demo_backend()
    print(
        f"emulated Nicla Voice {board.address}: a wake word every {args.wake_every:g} s",
        flush=True,
    )
    hardware = {
        "drivers": {"nicla_voice": {"backend": client}},
        "advertisements": BleAdvertisements(0.5, scanner),
    }
    return hardware, lambda: demo_wakes(board, args.wake_every)


EMULATIONS = (
    Emulation("flipper", "flipper", serve=_serve_flipper),
    Emulation("nicla-vision", "nicla_vision", serve=_serve_nicla_vision),
    Emulation("nicla-voice", "nicla_voice", attach=_attach_nicla_voice),
)

DESCRIPTION = (
    "flipper and nicla-vision: a byte-faithful software device on a pseudo-terminal; its path "
    "is printed (point the hub at it with drivers.<name>.port, e.g. TINY_HUB_FLIPPER_PORT). "
    "nicla-voice: Bluetooth cannot be emulated across processes, so this starts a hub (like "
    "serve) with an emulated Nicla Voice attached, which says a wake word every --wake-every "
    "seconds."
)


def emulation(device: str) -> Emulation | None:
    return next((e for e in EMULATIONS if e.device == device), None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The emulated boards' own options on ``tiny-hub emulate``."""
    parser.add_argument(
        "--wake-every",
        type=float,
        default=30.0,
        help="nicla-voice: seconds between wake words (default 30)",
    )
    parser.add_argument("--link", help="keep a symlink here to the current pseudo-terminal")
    parser.add_argument(
        "--nfc-style",
        choices=["detect", "scanner", "shell"],
        help="flipper: which NFC command set its firmware has (default: that of the firmware "
        "it claims, the official 1.4.3: shell)",
    )
