"""``tiny-hub`` (the hub and its terminal UI), ``tiny-hub serve`` and ``tiny-hub tui``."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from hub import __version__
from hub.api.listen_socket import bind_socket
from hub.api.server import RunningServer, start_server
from hub.cli.common import CliError, is_terminal, local_url, pin, settings_of, token
from hub.config import Settings
from hub.core.collector import settle
from hub.core.logs import setup_logging
from hub.runtime.hub import Hub


def serve_command(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    setup_logging(settings.log_level)
    return asyncio.run(serve(settings))


def tui_command(args: argparse.Namespace) -> int:
    need_a_terminal("tiny-hub tui")
    settings = settings_of(args)
    url = local_url(settings, args.url)
    return run_tui(url, token(settings, args.token), settings.home, args.pin or pin(settings, url))


def hub_with_tui(args: argparse.Namespace) -> int:
    need_a_terminal("tiny-hub")
    return run_hub_with_tui(settings_of(args))


def need_a_terminal(command: str) -> None:
    """The terminal UI reads keys from standard input and draws on standard output: without a
    terminal on both it would wait for keys that never come. Said before anything starts."""
    named = {"standard input": sys.stdin, "standard output": sys.stdout}
    missing = [name for name, stream in named.items() if not is_terminal(stream)]
    if missing:
        what = " and ".join(missing) + (" are not terminals" if len(missing) > 1 else " is not one")
        raise CliError(
            f"{command} draws its screens on a terminal and {what}; without the UI, "
            'tiny-hub serve runs the hub and tiny-hub chat "…" sends one message'
        )


async def serve(settings: Settings, hardware: dict[str, Any] | None = None) -> int:
    stop = stop_on_signals()
    sock = bind_socket(settings.host, settings.port)
    hub = Hub.open(settings, hardware=hardware)
    try:
        server = await start_server(hub, settings.host, settings.port, sock)
        model = await hub.models.default()
        print(
            f"tiny-hub {__version__} serving on {server.main_url}"
            f" (model: {model.provider} {model.model_id}; data: {settings.home})",
            flush=True,
        )
        for line in where_to_reach(server):
            print(line, flush=True)
        # What the start made (stores, the embedder, the tools) lives as long as the process:
        # frozen with the code, so a full collection during a turn walks only what came after.
        settle()
        await stop.wait()
        await server.stop()
    finally:
        hub.close()
    return 0


def where_to_reach(server: RunningServer) -> list[str]:
    """Addresses a person can paste: this machine's, the LAN's, and what to run with them."""
    lines = [f"  this machine: {server.url}    (tiny-hub tui --url {server.url})"]
    if server.lan_url:
        lines.append(f"  your LAN:     {server.lan_url}    (pair a phone: tiny-hub pair)")
        lines.append(f"lanUrl: {server.lan_url}")
    else:
        lines.append("lanUrl: none (not on a LAN; lan.url names one)")
    if server.hub.lan.fingerprint:
        lines.append(f"TLS SHA-256 {server.hub.lan.fingerprint}; local clients: {server.url}")
    return lines


def stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


def run_tui(url: str, token: str | None, home: Path, pin: str | None = None) -> int:
    from hub.client.http import HubClient
    from tui.app import TinyApp
    from tui.config import TuiConfig

    TinyApp(HubClient(url, token, pin=pin), TuiConfig.load(home / "tui")).run()
    return 0


def run_hub_with_tui(settings: Settings) -> int:
    """The hub in a background thread (logging to hub.log), the TUI in the foreground."""
    settings.home.mkdir(parents=True, exist_ok=True)
    log_file = settings.home / "hub.log"
    setup_logging(settings.log_level, log_file)
    started = threading.Event()
    outcome: dict[str, Any] = {}
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    sock = bind_socket(settings.host, settings.port)

    async def run() -> None:
        hub = Hub.open(settings)
        try:
            server = await start_server(hub, settings.host, settings.port, sock)
            outcome["url"] = server.url
            await hub.models.default()
            started.set()
            await stop.wait()
            await server.stop()
        finally:
            hub.close()

    def thread_main() -> None:
        try:
            loop.run_until_complete(run())
        except BaseException as exc:
            outcome["error"] = exc
            started.set()

    thread = threading.Thread(target=thread_main, name="tiny-hub", daemon=True)
    thread.start()
    started.wait()
    if "error" in outcome:
        raise outcome["error"]
    try:
        return run_tui(outcome["url"], token(settings, None), settings.home)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        print(f"tiny-hub stopped; its log is {log_file}")
