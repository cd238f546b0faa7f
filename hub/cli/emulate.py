"""``tiny-hub emulate DEVICE``: a software device to try a driver (or a phone app's side of the
hub) without hardware, and the command that points a hub at it (the boards are
``firmware_bridges.emulate``'s); ``tiny-hub capture``: the real device's bytes, recorded for the
emulators to be checked against."""

from __future__ import annotations

import argparse
import asyncio
import functools
from pathlib import Path

import aiohttp

from firmware_bridges.emulate import Attached, emulation
from hub.cli.common import local_url, settings_of
from hub.config import Settings
from hub.core.logs import setup_logging


def emulate_command(args: argparse.Namespace) -> int:
    link = Path(args.link) if args.link else None
    board = emulation(args.device)
    if board is not None and board.serve is not None:
        board.serve(link, args, board.next_step(port_variable(board.driver)))
        return 0
    settings = settings_of(args)
    setup_logging(settings.log_level)
    if board is not None and board.attach is not None:
        return asyncio.run(serve_with(settings, board.attach(args)))
    return asyncio.run(run_phone(local_url(settings, args.hub), args))


def port_variable(driver: str) -> str:
    """The environment variable of the driver's ``port`` setting."""
    return f"TINY_HUB_{driver.upper()}_PORT"


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


async def serve_with(settings: Settings, attached: Attached) -> int:
    """A hub (as ``serve``) with an emulated board attached, and the board's loop beside it."""
    from hub.cli.serve import serve

    hardware, board_loop = attached
    looping = asyncio.create_task(board_loop())
    try:
        return await serve(settings, dict(hardware))
    finally:
        looping.cancel()


def capture_command(args: argparse.Namespace) -> int:
    """``tiny-hub capture DEVICE``: a real device's answers to a fixed read-only script, for the
    emulators to be checked against."""
    from drivers.capture import run_capture

    return run_capture(args.device, args.port, args.out, redact=not args.keep_identity)
