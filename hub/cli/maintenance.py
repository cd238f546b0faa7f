"""``doctor``, ``config``, ``memory``, ``pair`` and ``discover``: looking after the hub."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hub.cli.common import settings_of
from hub.cli.waiting import waiting_line
from hub.config import HOME_ENV, ConfigError, Settings, default_home, describe_settings

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

PROGRESS_EVERY_S = 0.5


def doctor_command(args: argparse.Namespace) -> int:
    from hub.cli.doctor import guarded, planned_checks
    from hub.config import load_settings

    error = ""
    overrides = {"host": getattr(args, "host", None), "port": getattr(args, "port", None)}
    try:
        settings = load_settings(home=args.home, overrides=overrides)
    except ConfigError as exc:
        error = str(exc)
        try:  # the other checks as the environment says, without the broken file
            settings = load_settings(home=args.home, read_file=False, overrides=overrides)
        except ConfigError:
            settings = Settings(home=Path(args.home or os.environ.get(HOME_ENV) or default_home()))
    failed = False
    with waiting_line(sys.stderr) as waiting:
        for name, run in planned_checks(settings, error, model=args.model):
            waiting.waiting_for(f"checking {name}")
            check = guarded(name, run)
            waiting.clear()
            print(check.line(), flush=True)
            failed = failed or check.status == "FAIL"
    return 1 if failed else 0


def config_command(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    print(f"data dir: {settings.home}  (TINY_HUB_HOME)")
    print(
        f"config file: {settings.config_path}"
        f"{'' if settings.config_path.exists() else ' (not present: defaults)'}"
    )
    rows = [("key", "variable", "value", "from", "meaning")]
    rows += describe_settings(settings)
    widths = [min(30, max(len(row[i]) for row in rows)) for i in range(4)]
    for *cells, meaning in rows:
        fitted = [_fit(text, width) for text, width in zip(cells, widths, strict=True)]
        print("  " + "  ".join(fitted) + "  " + meaning)
    return 0


def _fit(text: str, width: int) -> str:
    """A cell of exactly ``width`` characters: a longer value is cut with an ellipsis."""
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


def memory_command(args: argparse.Namespace) -> int:
    from hub.runtime.hub import Hub

    if args.action in ("forgotten", "undo"):
        from hub.cli.forgotten import forgotten_command

        return forgotten_command(args)
    hub = Hub.open(settings_of(args))
    try:
        if args.action == "reindex":
            return _reindex(hub)
        current, waiting, vectors = hub.memory.stats()
        print(f"current facts: {current}; without a vector: {waiting}; vectors: {vectors}")
    finally:
        hub.close()
    return 0


def _reindex(hub: Hub) -> int:
    """Rebuild Chroma from SQLite with a progress bar: count, rate and time left."""
    from tqdm import tqdm

    total = hub.memory.stats()[0]
    print(f"rebuilding the vectors of {total} fact(s) in {hub.memory.vectors.where}", flush=True)
    outcome: dict[str, int | BaseException] = {}

    def work() -> None:
        try:
            outcome["done"] = hub.memory.reindex()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="reindex")
    worker.start()
    with tqdm(total=total, unit="fact", dynamic_ncols=True) as bar:
        while worker.is_alive():
            worker.join(PROGRESS_EVERY_S)
            bar.update(min(total, hub.memory.vectors.count()) - bar.n)
        bar.update(total - bar.n if "error" not in outcome else 0)
    if isinstance(error := outcome.get("error"), BaseException):
        raise error
    print(f"indexed {outcome['done']} current fact(s)")
    return 0


def pair_command(args: argparse.Namespace) -> int:
    from hub.lan.address import lan_url
    from hub.lan.pairing import make_offer, render_terminal
    from hub.lan.tls import local_fingerprint
    from hub.runtime.hub import Hub

    settings = settings_of(args)
    url = lan_url(settings.lan_url, settings.host, settings.port, tls=settings.lan_tls)
    fingerprint = local_fingerprint(settings.home) if settings.lan_tls else None
    hub = Hub.open(settings)
    try:
        offer = make_offer(hub, lan_url=url, fingerprint=fingerprint)
    finally:
        hub.close()
    print(render_terminal(offer))
    minutes = max(1, round((offer.expires_at - time.time()) / 60))
    print(f"pairing code: {offer.code} (valid {minutes} minutes, once)")
    print(f"the phone dials: {url or 'no LAN address (set lan.url)'}")
    if fingerprint:
        print(f"certificate SHA-256: {fingerprint}")
    return 0


def discover_command(args: argparse.Namespace) -> int:
    from hub.lan.discover import discover_command as discover

    return asyncio.run(discover(args.seconds))
