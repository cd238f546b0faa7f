"""``tiny-hub``: the hub with its terminal UI, or one of its subcommands.

Errors a person can fix (bad config, port in use, hub unreachable) are one line on stderr and
exit status 2; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hub import __version__
from hub import contracts as c
from hub.config import (
    HOME_ENV,
    ConfigError,
    Settings,
    default_home,
    describe_settings,
    load_settings,
)
from hub.logs import setup_logging
from hub.mcp_server.command import add_mcp_parser, mcp_command
from hub.runtime import Hub
from hub.server import RunningServer, StartError, bind_socket, start_server
from hub.store.migrations import MigrationError

log = logging.getLogger("tiny_hub")

EXIT_USAGE = 2
TOKEN_ENV = "TINY_HUB_TOKEN"


class CliError(Exception):
    """Stops the command with a one-line message."""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--home",
        type=Path,
        help="data dir (default: TINY_HUB_HOME or the platform's user data dir for tiny-hub)",
    )
    listen = argparse.ArgumentParser(add_help=False)
    listen.add_argument("--host", help="address to listen on (default 0.0.0.0)")
    listen.add_argument("--port", type=int, help="port (default 8765; 0 picks a free one)")

    parser = argparse.ArgumentParser(
        prog="tiny-hub",
        parents=[common, listen],
        description="A local companion hub. With no command: the hub and its terminal UI.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "serve",
        parents=[common, listen],
        help="run the hub headless (HTTP API only)",
        description="Run the hub headless: the HTTP API only, logs on stderr.",
    )
    chat = sub.add_parser(
        "chat",
        parents=[common],
        help="one chat turn, streamed to stdout",
        description="Send one message and stream the reply to stdout, "
        "against a running hub or, if none answers, an in-process one.",
    )
    chat.add_argument("text", help="what to say")
    chat.add_argument("--url", help="a hub's URL (default: the local hub)")
    chat.add_argument("--token", help=f"a token (default: {TOKEN_ENV} or owner.token)")
    chat.add_argument("--model-provider", help="x-tiny-model-provider for this turn")
    chat.add_argument("--model-id", help="x-tiny-model-id for this turn")
    tui = sub.add_parser(
        "tui",
        parents=[common],
        help="the terminal UI against a hub elsewhere",
        description="Attach the terminal UI to a hub, local or on the LAN.",
    )
    tui.add_argument("--url", help="the hub's URL (default: the local hub)")
    tui.add_argument("--token", help=f"a token (default: {TOKEN_ENV} or owner.token)")
    tui.add_argument(
        "--pin",
        help="an https hub's certificate fingerprint (SHA-256 hex, as `tiny-hub discover` and "
        "the pairing QR show it): trust that hub by it (default: the local hub's own)",
    )
    sub.add_parser(
        "doctor",
        parents=[common],
        help="check this machine, one line per check",
        description="Check Python, dependencies, models, devices, data dir and port.",
    )
    sub.add_parser(
        "config",
        parents=[common],
        help="show every setting and where it is set",
        description="Show every setting: its config.toml key, variable and value.",
    )
    memory = sub.add_parser(
        "memory",
        parents=[common],
        help="maintain the memory store",
        description="Maintain the memory store.",
    )
    memory.add_argument(
        "action",
        choices=["reindex", "stats"],
        help="reindex: rebuild the Chroma collection from SQLite; stats: count facts and vectors",
    )
    emulate = sub.add_parser(
        "emulate",
        help="run a software device to try the drivers without hardware",
        description="flipper and nicla-vision: a byte-faithful software device on a "
        "pseudo-terminal; its path is printed (point the hub at it with drivers.<name>.port, "
        "e.g. TINY_HUB_FLIPPER_PORT). nicla-voice: Bluetooth cannot be emulated across "
        "processes, so this starts a hub (like serve) with an emulated Nicla Voice attached, "
        "which says a wake word every --wake-every seconds.",
    )
    emulate.add_argument(
        "device", choices=["flipper", "nicla-vision", "nicla-voice"], help="which device"
    )
    emulate.add_argument(
        "--wake-every",
        type=float,
        default=30.0,
        help="nicla-voice: seconds between wake words (default 30)",
    )
    emulate.add_argument("--host", help="nicla-voice: the hub's address (as for serve)")
    emulate.add_argument("--port", type=int, help="nicla-voice: the hub's port (as for serve)")
    emulate.add_argument("--link", help="keep a symlink here to the current pseudo-terminal")
    emulate.add_argument("--name", default="Unyana", help="the Flipper's name")
    emulate.add_argument(
        "--nfc-style",
        choices=["detect", "scanner"],
        default="scanner",
        help="which NFC command set its firmware has",
    )
    discover = sub.add_parser(
        "discover",
        help="list the hubs advertised on this network",
        description="Browse the LAN (mDNS, _tinyhub._tcp) and print one line per hub: "
        "name, lanUrl, version, id and TLS fingerprint.",
    )
    discover.add_argument(
        "--seconds", type=float, default=3.0, help="how long to listen (default 3)"
    )
    sub.add_parser(
        "pair",
        parents=[common],
        help="show a pairing code and QR for a phone",
        description="Make a one-time pairing offer (a 6-digit code valid 5 minutes) and print "
        "it with a QR code carrying the hub's lanUrl, the code and the TLS fingerprint; the "
        "phone sends the code to POST /api/pair.",
    )
    _add_cloud_parser(sub, common)
    add_mcp_parser(sub, common)
    sub.add_parser("version", help="print the version", description="Print the version.")
    return parser


def _add_cloud_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``tiny-hub cloud join|status|adopt``: --home sits on each action, not on ``cloud``, so a
    value given after the action is not overwritten by the action's default."""
    cloud = sub.add_parser(
        "cloud",
        help="join the cloud relay as a dial-in device, show the state, adopt a new token",
        description="This hub as a dial-in device of the cloud (the web app): join it, show "
        "the state, or take a new token for the same device after losing the old one.",
    )
    actions = cloud.add_subparsers(dest="cloud_action", metavar="ACTION", required=True)
    token_help = "a file holding the device token (default: asked for, without echo)"
    join = actions.add_parser(
        "join",
        parents=[common],
        help="enroll this hub at the cloud and verify with one heartbeat",
        description="Walk through enrolling this hub in the signed-in web app, take the device "
        "id and token, verify them with one heartbeat, then save them (the token in cloud.token, "
        "0600; url and device id in config.toml). With --device-id and --token-file: no "
        "questions, for scripts. Nothing is saved when the verification fails.",
    )
    join.add_argument(
        "--app", required=True, help="the web app's origin, e.g. https://tiny.example"
    )
    join.add_argument("--device-id", help="the device id the web app showed")
    join.add_argument("--token-file", type=Path, help=token_help)
    actions.add_parser(
        "status",
        parents=[common],
        help="print the cloud url, device id and whether a token is saved",
        description="Print the cloud url, the device id, whether a token is saved (never the "
        "token) and, when the local hub is running, what it reports about the cloud.",
    )
    adopt = actions.add_parser(
        "adopt",
        parents=[common],
        help="after losing the token: take a new one for the same device",
        description="A lost or revoked token: the web app gives this same device a new token "
        "(its 'new token' action, POST /api/devices/adopt) instead of enrolling a ghost device. "
        "This takes the new token, verifies it with one heartbeat and saves it.",
    )
    adopt.add_argument("--app", help="the web app's origin (default: the configured cloud.url)")
    adopt.add_argument("--device-id", help="the device id (default: the configured one)")
    adopt.add_argument("--token-file", type=Path, help=token_help)
    memory = actions.add_parser(
        "memory",
        parents=[common],
        help="sync your memory with the cloud: save a user token (or --off)",
        description="Memory is yours, not the device's: syncing it needs a token of your account "
        "at the web app (the device token reads no one's memory). This verifies the token with "
        "one read, saves it in cloud-user.token (0600) and the hub syncs from its next start. "
        "--off forgets the token; your facts stay on both sides.",
    )
    memory.add_argument("--app", help="the web app's origin (default: the configured cloud.url)")
    memory.add_argument(
        "--token-file", type=Path, help="a file holding the user token (default: asked for)"
    )
    memory.add_argument("--off", action="store_true", help="stop syncing: forget the user token")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "hub"
    if command == "version":
        print(f"tiny-hub {__version__}")
        return 0
    if command == "discover":
        from hub.lan.discover import discover_command

        return asyncio.run(discover_command(args.seconds))
    if command == "emulate" and args.device == "flipper":
        from firmware_bridges.emulators import flipper

        forwarded = ["--name", args.name, "--nfc-style", args.nfc_style]
        return flipper.main(forwarded + (["--link", args.link] if args.link else []))
    if command == "emulate" and args.device == "nicla-vision":
        from firmware_bridges.emulators import nicla_vision

        return nicla_vision.main(["--link", args.link] if args.link else [])
    try:
        if command == "doctor":
            return doctor(args)
        settings = load_settings(
            home=args.home,
            overrides={"host": getattr(args, "host", None), "port": getattr(args, "port", None)},
        )
        if command == "config":
            return show_config(settings)
        if command == "memory":
            return memory_command(settings, args.action)
        if command == "pair":
            return pair_command(settings)
        if command == "cloud":
            return cloud_command(settings, args)
        if command == "mcp":
            return _mcp(settings, args)
        if command == "serve":
            setup_logging(settings.log_level)
            return asyncio.run(serve(settings))
        if command == "emulate":  # nicla-voice: a hub with the emulated board attached
            setup_logging(settings.log_level)
            return asyncio.run(serve_with_emulated_voice(settings, args.wake_every))
        if command == "chat":
            settings.home.mkdir(parents=True, exist_ok=True)
            setup_logging(settings.log_level, settings.home / "hub.log")
            return asyncio.run(chat_once(settings, args))
        if command == "tui":
            url = _local_url(settings, args.url)
            token = _token(settings, args.token)
            return run_tui(url, token, settings.home, args.pin or _pin(settings, url))
        return run_hub_with_tui(settings)
    except (ConfigError, StartError, MigrationError, CliError) as exc:
        print(f"tiny-hub: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


async def serve_with_emulated_voice(settings: Settings, wake_every_s: float) -> int:
    from drivers.ble_presence import BleAdvertisements
    from firmware_bridges.emulators.nicla_voice import demo_backend, demo_wakes

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


async def serve(settings: Settings, hardware: dict[str, Any] | None = None) -> int:
    stop = _stop_on_signals()
    sock = bind_socket(settings.host, settings.port)
    hub = Hub.open(settings, hardware=hardware)
    try:
        server = await start_server(hub, settings.host, settings.port, sock)
        model = await hub.models.default()
        print(
            f"tiny-hub {__version__} serving on {server.public_url}"
            f" (model: {model.provider} {model.model_id}; data: {settings.home})",
            flush=True,
        )
        print(f"lanUrl: {server.lan_url or 'none (not on a LAN; lan.url names one)'}", flush=True)
        if hub.lan.fingerprint:
            print(f"TLS SHA-256 {hub.lan.fingerprint}; local clients: {server.url}", flush=True)
        await stop.wait()
        await server.stop()
    finally:
        hub.close()
    return 0


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def chat_once(settings: Settings, args: argparse.Namespace) -> int:
    from tui.client import HubClient, HubError

    headers = {
        name: value
        for name, value in (
            (c.H_MODEL_PROVIDER, args.model_provider),
            (c.H_MODEL_ID, args.model_id),
        )
        if value
    }
    messages = [{"role": "user", "content": args.text}]
    async with _hub_for_chat(settings, args.url) as url:
        client = HubClient(url, _token(settings, args.token), pin=_pin(settings, url))
        replied, failed = False, False
        try:
            async for event in client.stream_chat(messages, headers):
                if event.get("type") == c.EV_BLOCK_DELTA and c.DELTA_TEXT in event:
                    replied = True
                    sys.stdout.write(event[c.DELTA_TEXT])
                    sys.stdout.flush()
                elif event.get("type") == c.EV_ERROR:
                    failed = True
                    print(f"\ntiny-hub: {event.get('error')}", file=sys.stderr)
        except HubError as exc:
            raise CliError(str(exc)) from None
        if replied:
            print()
    return 1 if failed or not replied else 0


@contextlib.asynccontextmanager
async def _hub_for_chat(settings: Settings, url: str | None) -> Any:
    """The given hub, else the local one if it answers, else one started in this process."""
    from tui.client import HubClient, HubError

    if url:
        yield url.rstrip("/")
        return
    local = _local_url(settings, None)
    try:
        await HubClient(local, pin=_pin(settings, local)).health()
        yield local
        return
    except HubError:
        pass
    hub = Hub.open(settings)
    server: RunningServer | None = None
    try:
        server = await start_server(hub, "127.0.0.1", 0)
        yield server.url
    finally:
        if server is not None:
            await server.stop()
        hub.close()


def pair_command(settings: Settings) -> int:
    from hub.lan.address import lan_url
    from hub.lan.pairing import make_offer, render_terminal
    from hub.lan.tls import local_fingerprint

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


def _mcp(settings: Settings, args: argparse.Namespace) -> int:
    try:
        url = _local_url(settings, args.url)
        return mcp_command(settings, args, url, _token(settings, args.token))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _local_url(settings: Settings, url: str | None) -> str:
    if url:
        return url.rstrip("/")
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "", "::") else settings.host
    scheme = "https" if settings.lan_tls else "http"
    return f"{scheme}://{host}:{settings.port}"


def _pin(settings: Settings, url: str) -> str | None:
    """For an https hub on this machine, its own certificate's fingerprint (from the data dir)."""
    from hub.lan.tls import local_fingerprint

    return local_fingerprint(settings.home) if url.startswith("https://") else None


def _token(settings: Settings, given: str | None) -> str | None:
    if given:
        return given
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    with contextlib.suppress(OSError):
        return settings.owner_token_path.read_text(encoding="utf-8").strip() or None
    return None


def run_tui(url: str, token: str | None, home: Path, pin: str | None = None) -> int:
    from tui.app import TinyApp
    from tui.client import HubClient
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
        return run_tui(outcome["url"], _token(settings, None), settings.home)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        print(f"tiny-hub stopped; its log is {log_file}")


def show_config(settings: Settings) -> int:
    print(f"data dir: {settings.home}  (TINY_HUB_HOME)")
    print(
        f"config file: {settings.config_path}"
        f"{'' if settings.config_path.exists() else ' (not present: defaults)'}"
    )
    for key, env, value, help_text in describe_settings(settings):
        print(f"  {key:<24} {env:<28} {value:<28} {help_text}")
    return 0


def memory_command(settings: Settings, action: str) -> int:
    hub = Hub.open(settings)
    try:
        if action == "reindex":
            print(f"rebuilding memory vectors in {hub.memory.vectors.where} ...", flush=True)
            print(f"indexed {hub.memory.reindex()} current fact(s)")
        else:
            facts = hub.db.execute("SELECT COUNT(*) FROM entity WHERE valid_to IS NULL")
            waiting = hub.db.execute(
                "SELECT COUNT(*) FROM entity WHERE valid_to IS NULL AND vec_id IS NULL"
            )
            print(
                f"current facts: {facts.fetchone()[0]}; without a vector: "
                f"{waiting.fetchone()[0]}; vectors: {hub.memory.vectors.count()}"
            )
    finally:
        hub.close()
    return 0


def cloud_command(settings: Settings, args: argparse.Namespace) -> int:
    from hub.cloud.account import CloudAccountError

    try:
        if args.cloud_action == "status":
            return asyncio.run(_cloud_status(settings))
        if args.cloud_action == "memory":
            return _cloud_memory(settings, args)
        return _cloud_join(settings, args, adopting=args.cloud_action == "adopt")
    except CloudAccountError as exc:
        raise CliError(str(exc)) from None


def _cloud_join(settings: Settings, args: argparse.Namespace, *, adopting: bool) -> int:
    """join and adopt share one shape: credentials in, one heartbeat, then (only then) save."""
    from hub.cloud import account
    from hub.lan.advertise import hub_name

    given_app = args.app or (settings.cloud_url if adopting else "")
    if not given_app:
        raise CliError("no cloud configured; give the web app's origin with --app")
    app = account.check_origin(given_app)
    device_id = args.device_id or (settings.cloud_device_id if adopting else None)
    if adopting and not device_id:
        raise CliError("this hub has not joined a cloud; use tiny-hub cloud join --app <origin>")
    if device_id is None or args.token_file is None:
        if adopting:
            print(
                f"A new token for device {device_id}, without enrolling a second one:\n"
                f"  1. open {app} and sign in as the owner\n"
                f"  2. Devices → this hub ({device_id}) → new token\n"
                "     (POST /api/devices/adopt {deviceId} as the owner rotates its token and\n"
                "     shows the new one once; the old token stops working)\n"
                "  3. copy the new token and paste it here",
                flush=True,
            )
        else:
            name = hub_name(settings.lan_name)
            print(
                f"To join the cloud at {app}:\n"
                f"  1. open {app} and sign in as the owner\n"
                f'  2. Devices → add a device: kind "daemon", name "{name}"\n'
                "  3. copy the device id and the device token it shows (the token is shown once)\n"
                "  4. paste them here",
                flush=True,
            )
    if device_id is None:
        device_id = _ask("device id: ")
    device_id = account.check_device_id(device_id)
    token = account.check_token(
        _read_token_file(args.token_file) if args.token_file else _ask_secret("device token: ")
    )
    if not adopting and settings.cloud_device_id and settings.cloud_device_id != device_id:
        print(
            f"note: this hub was device {settings.cloud_device_id}; it is now {device_id} "
            "(remove the old one in the web app; a lost token is tiny-hub cloud adopt)",
            flush=True,
        )
    print(asyncio.run(account.verify(app, device_id, token)), flush=True)
    account.save_token(settings.cloud_token_path, token)
    account.write_cloud_config(settings, app, device_id)
    print(
        f"saved: the token in {settings.cloud_token_path} (readable by this user only), "
        f"url and device id in {settings.config_path}; restart the hub to dial in",
        flush=True,
    )
    return 0


def _cloud_memory(settings: Settings, args: argparse.Namespace) -> int:
    from hub.cloud import account

    path = settings.cloud_user_token_path
    if args.off:
        path.unlink(missing_ok=True)
        print(f"memory sync off: removed {path}; restart the hub to stop syncing", flush=True)
        return 0
    given_app = args.app or settings.cloud_url
    if not given_app:
        raise CliError("no cloud configured; give the web app's origin with --app")
    app = account.check_origin(given_app)
    if args.token_file is None:
        print(
            f"To sync your memory with {app}:\n"
            f"  1. open {app} and sign in\n"
            "  2. Settings → tokens → new token (a token of your account, not a device's)\n"
            "  3. paste it here",
            flush=True,
        )
    token = account.check_token(
        _read_token_file(args.token_file) if args.token_file else _ask_secret("user token: ")
    )
    print(asyncio.run(account.verify_user(app, token)), flush=True)
    account.save_token(path, token)
    if not settings.cloud_url:
        account.write_cloud_config(settings, app, settings.cloud_device_id)
    print(
        f"saved: the user token in {path} (readable by this user only); restart the hub to sync",
        flush=True,
    )
    return 0


def _ask(prompt: str) -> str:
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    if not sys.stdin.isatty():
        print(flush=True)  # a piped answer is not echoed: end the prompt's line ourselves
    if not line.strip():
        raise CliError(f"no {prompt.rstrip(': ')} given")
    return line.strip()


def _ask_secret(prompt: str) -> str:
    """Without echo on a terminal; a plain line from a pipe (getpass would go to /dev/tty)."""
    import getpass

    if sys.stdin.isatty():
        try:
            line = getpass.getpass(prompt)
        except EOFError:
            line = ""
        if not line.strip():
            raise CliError(f"no {prompt.rstrip(': ')} given")
        return line.strip()
    return _ask(prompt)


def _read_token_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CliError(f"cannot read the token file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"the token file {path} is not text") from None


async def _cloud_status(settings: Settings) -> int:
    from hub.cloud.account import load_token
    from tui.client import HubClient, HubError

    token_path = settings.cloud_token_path
    present = load_token(token_path) is not None
    print(f"cloud url: {settings.cloud_url or '(not joined)'}")
    print(f"device id: {settings.cloud_device_id or '(none)'}")
    print(f"token: {'present' if present else 'missing'} ({token_path})")
    user_token = load_token(settings.cloud_user_token_path) is not None
    print(f"memory sync: {'on' if user_token else 'off (tiny-hub cloud memory)'}")
    local = _local_url(settings, None)
    try:
        health = await HubClient(local, pin=_pin(settings, local)).health()
    except (HubError, TimeoutError):
        print("hub: the hub is not running")
        return 0
    cloud = health.get("cloud")
    shown = cloud if isinstance(cloud, str) else json.dumps(cloud) if cloud is not None else None
    print(f"hub: running at {local}; cloud: {shown or '(the hub reports no cloud state)'}")
    return 0


def doctor(args: argparse.Namespace) -> int:
    from hub.doctor import run_checks

    error = ""
    try:
        settings = load_settings(home=args.home)
    except ConfigError as exc:
        error = str(exc)
        settings = Settings(home=Path(args.home or os.environ.get(HOME_ENV) or default_home()))
    failed = False
    for check in run_checks(settings, error):
        print(check.line(), flush=True)
        failed = failed or check.status == "FAIL"
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
