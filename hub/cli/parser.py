"""The ``tiny-hub`` command line: every command, its flags and its help (nothing is imported
here that a command needs to run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from firmware_bridges import emulate as emulated
from hub.cli.hand_parsers import (
    TOKEN_ENV,
    add_jobs_parser,
    add_telegram_parser,
    add_tools_parser,
)
from hub.mcp_server.command import add_mcp_parser

__all__ = ["TOKEN_ENV", "build_parser", "shared_options"]


def shared_options(default: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """``--home``, and ``--host``/``--port`` (where the hub listens, or where a client finds the
    local hub), given before the command or after it: every command takes them (``capture``
    alone has a ``--port`` of its own, the device's serial port). The top-level copies default
    to None; a command's copies set nothing when absent (``argparse.SUPPRESS``): with a default
    of their own they would overwrite the value given before the command (``tiny-hub --home DIR
    serve`` would lose DIR)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--home",
        type=Path,
        default=default,
        help="data dir (default: TINY_HUB_HOME or the platform's user data dir for tiny-hub)",
    )
    listen = argparse.ArgumentParser(add_help=False)
    listen.add_argument("--host", default=default, help="address to listen on (default 0.0.0.0)")
    listen.add_argument(
        "--port", type=int, default=default, help="port (default 8765; 0 picks a free one)"
    )
    return common, listen


def build_parser() -> argparse.ArgumentParser:
    common, listen = shared_options(argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="tiny-hub",
        parents=list(shared_options(None)),
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
        parents=[common, listen],
        help="chat in the terminal, or one turn streamed to stdout",
        description="Chat with your companion: with no text, a conversation in the terminal; "
        "with text (or - for standard input), one turn streamed to stdout. Against a running "
        "hub or, if none answers, an in-process one.",
    )
    chat.add_argument(
        "text",
        nargs="?",
        help="what to say; - reads it from standard input; none starts a conversation "
        "in the terminal (/bye or Ctrl+D ends it, Ctrl+C stops a reply)",
    )
    chat.add_argument("--url", help="a hub's URL (default: the local hub)")
    chat.add_argument("--token", help=f"a token (default: {TOKEN_ENV} or owner.token)")
    chat.add_argument("--model-provider", help="x-tiny-model-provider for this turn")
    chat.add_argument("--model-id", help="x-tiny-model-id for this turn")
    tui = sub.add_parser(
        "tui",
        parents=[common, listen],
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
    doctor = sub.add_parser(
        "doctor",
        parents=[common, listen],
        help="check this machine, one line per check",
        description="Check Python, dependencies, models, devices, data dir and port: what is "
        "installed, what answers and what is free, in a second or two.",
    )
    doctor.add_argument(
        "--model",
        action="store_true",
        help="also load what the hub runs: import every dependency (native code included) and "
        "decode a prompt with the embedded model (several seconds more)",
    )
    sub.add_parser(
        "config",
        parents=[common, listen],
        help="show every setting and where it is set",
        description="Show every setting: its config.toml key, variable, value and where the "
        "value comes from (config.toml and its line, the environment, or the default).",
    )
    memory = sub.add_parser(
        "memory",
        parents=[common, listen],
        help="maintain the memory store",
        description="Maintain the memory store.",
    )
    memory.add_argument(
        "action",
        choices=["reindex", "stats", "forgotten", "undo"],
        help="reindex: rebuild the Chroma collection from SQLite; stats: count facts and "
        "vectors; forgotten: what you forgot that can still be brought back; undo: bring back "
        "a forgetting (the newest, or ID)",
    )
    memory.add_argument(
        "id", nargs="?", help="undo: the forgetting to bring back (default: newest)"
    )
    memory.add_argument("--url", help="forgotten, undo: a hub's URL (default: the local hub)")
    memory.add_argument(
        "--token", help=f"forgotten, undo: a token (default: {TOKEN_ENV} or owner.token)"
    )
    confirm = sub.add_parser(
        "confirm",
        parents=[common, listen],
        help="answer what a chat turn asked to do that only you may (forget facts, delete a job)",
        description="With no ID, list what a chat turn proposed that waits for your answer: "
        "forgetting facts, deleting a job, a forged tool or a Telegram bot. With an ID, confirm "
        "it (or --decline it).",
    )
    confirm.add_argument("id", nargs="?", help="the proposal to answer")
    confirm.add_argument("--decline", action="store_true", help="decline it: nothing happens")
    confirm.add_argument("--url", help="a hub's URL (default: the local hub)")
    confirm.add_argument("--token", help=f"a token (default: {TOKEN_ENV} or owner.token)")
    emulate = sub.add_parser(
        "emulate",
        parents=[common, listen],
        help="run a software device to try the drivers without hardware",
        description=f"{emulated.DESCRIPTION} phone: a phone paired with a running hub by a "
        "pairing code (--code), with emulated Meta glasses (--glasses); it prints the actions "
        "and notifications the hub sends it.",
    )
    emulate.add_argument(
        "device",
        choices=[*(e.device for e in emulated.EMULATIONS), "phone"],
        help="which device",
    )
    emulated.add_arguments(emulate)
    emulate.add_argument("--name", help="the emulated device's name")
    emulate.add_argument("--code", help="phone: the pairing code the hub shows (tiny-hub pair)")
    emulate.add_argument("--glasses", action="store_true", help="phone: with Meta glasses")
    emulate.add_argument("--hub", help="phone: the hub's URL (default: this machine's hub)")
    capture = sub.add_parser(
        "capture",
        parents=[common],
        help="record a real device's answers to a fixed read-only script",
        description="Run a fixed, read-only script against a device on a serial port (nothing "
        "that transmits or writes) and write every byte both ways to a JSON capture; see "
        "docs/hardware.md for the devices a capture can be recorded of and what each holds. "
        "What names the device (a name, a UID, a Bluetooth address) is masked unless "
        "--keep-identity.",
    )
    capture.add_argument("device", help="which device (its driver's name, e.g. as emulate takes)")
    capture.add_argument("--port", required=True, help="its serial port, e.g. /dev/ttyACM0")
    capture.add_argument("--out", required=True, type=Path, help="the capture file to write")
    capture.add_argument(
        "--keep-identity", action="store_true", help="keep what names the device in the capture"
    )
    discover = sub.add_parser(
        "discover",
        parents=[common, listen],
        help="list the hubs advertised on this network",
        description="Browse the LAN (mDNS, _tinyhub._tcp) and print one line per hub: "
        "name, lanUrl, version, id and TLS fingerprint.",
    )
    discover.add_argument(
        "--seconds", type=float, default=3.0, help="how long to listen (default 3)"
    )
    sub.add_parser(
        "pair",
        parents=[common, listen],
        help="show a pairing code and QR for a phone",
        description="Make a one-time pairing offer (a 6-digit code valid 5 minutes) and print "
        "it with a QR code carrying the hub's lanUrl, the code and the TLS fingerprint; the "
        "phone sends the code to POST /api/pair.",
    )
    export = sub.add_parser(
        "export",
        parents=[common, listen],
        help="a conversation of the terminal UI as Markdown",
        description="Write a conversation the terminal UI kept as Markdown (to stdout, or "
        "--out FILE). Name it by its id or by words of its title or text; with no name, list "
        "the conversations there are.",
    )
    export.add_argument("conversation", nargs="?", help="its id, or words it contains")
    export.add_argument("--out", type=Path, help="write here instead of to stdout")
    _add_cloud_parser(sub, [common, listen])
    _add_people_parser(sub, [common, listen])
    add_mcp_parser(sub, [common, listen])
    add_jobs_parser(sub, [common, listen])
    add_telegram_parser(sub, [common, listen])
    add_tools_parser(sub, [common, listen])
    sub.add_parser(
        "version",
        parents=[common, listen],
        help="print the version",
        description="Print the version.",
    )
    return parser


def _add_cloud_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``tiny-hub cloud join|status|adopt|memory``: the shared options on ``cloud`` and on each
    action (neither has a default of its own, so neither overwrites the other)."""
    cloud = sub.add_parser(
        "cloud",
        parents=common,
        help="join the cloud relay as a dial-in device, show the state, adopt a new token",
        description="This hub as a dial-in device of the cloud (the web app): join it, show "
        "the state, or take a new token for the same device after losing the old one.",
    )
    actions = cloud.add_subparsers(dest="cloud_action", metavar="ACTION", required=True)
    token_help = "a file holding the device token (default: asked for, without echo)"
    join = actions.add_parser(
        "join",
        parents=common,
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
        parents=common,
        help="print the cloud url, device id and whether a token is saved",
        description="Print the cloud url, the device id, whether a token is saved (never the "
        "token) and, when the local hub is running, what it reports about the cloud.",
    )
    adopt = actions.add_parser(
        "adopt",
        parents=common,
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
        parents=common,
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


def _add_people_parser(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``tiny-hub people add|code|list|rename|remove`` (the owner's: it opens the data dir)."""
    people = sub.add_parser(
        "people",
        parents=common,
        help="the people of this hub: add, list, rename, remove",
        description="The household on this hub. Each person has their own memory, tinys, "
        "devices, archives and model choice. Adding one prints a pairing code for their phone "
        "(or, with --token, a token for tiny-hub tui --token).",
    )
    actions = people.add_subparsers(dest="people_action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add", parents=common, help="add a person", description="Add a person."
    )
    add.add_argument("name", help="their name, as shown")
    add.add_argument("--login", help="their @login (default: made from the name)")
    add.add_argument("--token", action="store_true", help="print a token instead of a pairing code")
    code = actions.add_parser(
        "code",
        parents=common,
        help="a new pairing code for a person's phone",
        description="A new pairing code (valid 5 minutes, once) for a person's phone.",
    )
    code.add_argument("login", help="their @login")
    actions.add_parser(
        "list", parents=common, help="list the people", description="List the people."
    )
    rename = actions.add_parser(
        "rename", parents=common, help="rename a person", description="Rename a person."
    )
    rename.add_argument("login", help="their @login")
    rename.add_argument("name", help="their new name")
    remove = actions.add_parser(
        "remove",
        parents=common,
        help="remove a person (say --keep-data or --purge-data)",
        description="Remove a person: every token they hold stops working at once. Say what "
        "happens to their memory, tinys, devices and archives: --keep-data or --purge-data.",
    )
    remove.add_argument("login", help="their @login")
    choice = remove.add_mutually_exclusive_group()
    choice.add_argument("--keep-data", action="store_true", help="keep their data on this hub")
    choice.add_argument("--purge-data", action="store_true", help="delete all of their data")
