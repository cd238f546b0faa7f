"""``tiny-hub emulate flipper|nicla-vision|nicla-voice|phone``: a software device to try the
drivers (or a phone app's side of the hub) without hardware, and the command that points a hub
at it; ``tiny-hub capture``: the real device's bytes, recorded for the emulators to be checked
against."""

from __future__ import annotations

import argparse
import asyncio
import functools
from pathlib import Path

import aiohttp

from hub.cli.common import local_url, settings_of
from hub.config import Settings
from hub.logs import setup_logging

NEXT_STEP = {
    "flipper": "now run the hub on it, in another terminal:  TINY_HUB_FLIPPER_PORT={path} "
    "tiny-hub   (or drivers.flipper.port in config.toml)",
    "nicla-vision": "now run the hub on it, in another terminal:  "
    "TINY_HUB_NICLA_VISION_PORT={path} tiny-hub   (or drivers.nicla_vision.port in config.toml)",
}


def emulate_command(args: argparse.Namespace) -> int:
    link = Path(args.link) if args.link else None
    if args.device == "flipper":
        from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState

        state = FlipperState(name=args.name or "Unyana", nfc_style=args.nfc_style)
        FlipperEmulator(state, link=link).serve(NEXT_STEP["flipper"])
        return 0
    if args.device == "nicla-vision":
        from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator

        NiclaVisionEmulator(link=link).serve(NEXT_STEP["nicla-vision"])
        return 0
    settings = settings_of(args)
    setup_logging(settings.log_level)
    if args.device == "phone":
        return asyncio.run(run_phone(local_url(settings, args.hub), args))
    return asyncio.run(serve_with_emulated_voice(settings, args.wake_every))


async def run_phone(hub_url: str, args: argparse.Namespace) -> int:
    """An emulated phone paired with the hub at ``hub_url``, until Ctrl-C."""
    from firmware_bridges.emulators.phone import EmulatedPhone, Glasses, PhoneError

    if not args.code:
        print("emulate phone needs --code: make one with  tiny-hub pair  (or POST /api/pair/offer)")
        return 2
    phone = EmulatedPhone(
        hub_url,
        code=args.code,
        name=args.name or "Emulated phone",
        glasses=Glasses() if args.glasses else None,
        say=functools.partial(print, flush=True),
    )
    glasses = "with" if args.glasses else "without"
    print(f"emulated phone for {hub_url}: {glasses} Meta glasses", flush=True)
    try:
        await phone.run()
    except PhoneError as exc:
        print(f"emulate phone: {exc}")
        return 1
    except (OSError, aiohttp.ClientError) as exc:
        print(f"emulate phone: cannot reach the hub at {hub_url}: {exc}")
        return 1
    return 0


async def serve_with_emulated_voice(settings: Settings, wake_every_s: float) -> int:
    """Bluetooth cannot be emulated across processes: a hub with the emulated board attached,
    which says a wake word every ``wake_every_s`` seconds."""
    from drivers.ble_presence import BleAdvertisements
    from firmware_bridges.emulators.nicla_voice import demo_backend, demo_wakes
    from hub.cli.serve import serve

    client, scanner, board = demo_backend()
    hardware = {
        "drivers": {"nicla_voice": {"backend": client}},
        "advertisements": BleAdvertisements(0.5, scanner),
    }
    wakes = asyncio.create_task(demo_wakes(board, wake_every_s))
    print(f"emulated Nicla Voice {board.address}: a wake word every {wake_every_s:g} s", flush=True)
    try:
        return await serve(settings, hardware)
    finally:
        wakes.cancel()


def capture_command(args: argparse.Namespace) -> int:
    """``tiny-hub capture flipper|nicla-vision``: a real device's answers to a fixed read-only
    script, for the emulators to be checked against."""
    from drivers.capture import run_capture

    return run_capture(args.device, args.port, args.out, redact=not args.keep_identity)
