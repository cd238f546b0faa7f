"""``tiny-hub cloud join|adopt|memory|status``: this hub as a dial-in device of the cloud, and
the owner's memory synced with it. Credentials are verified before anything is saved."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from hub.cli.common import CliError, local_url, pin, settings_of, token
from hub.config import Settings


def cloud_command(args: argparse.Namespace) -> int:
    from hub.cloud.account import CloudAccountError

    settings = settings_of(args)

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
    from hub.client.http import HubClient, HubError
    from hub.cloud.account import load_token

    token_path = settings.cloud_token_path
    present = load_token(token_path) is not None
    print(f"cloud url: {settings.cloud_url or '(not joined)'}")
    print(f"device id: {settings.cloud_device_id or '(none)'}")
    print(f"token: {'present' if present else 'missing'} ({token_path})")
    user_token = load_token(settings.cloud_user_token_path) is not None
    print(f"memory sync: {'on' if user_token else 'off (tiny-hub cloud memory)'}")
    local = local_url(settings, None)
    try:
        health = await HubClient(local, token(settings, None), pin=pin(settings, local)).health()
    except (HubError, TimeoutError):
        print("hub: the hub is not running")
        return 0
    cloud = health.get("cloud")
    shown = cloud if isinstance(cloud, str) else json.dumps(cloud) if cloud is not None else None
    print(f"hub: running at {local}; cloud: {shown or '(the hub reports no cloud state)'}")
    return 0
