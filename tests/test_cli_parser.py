"""Every ``tiny-hub`` command takes ``--home``, ``--host`` and ``--port`` before it or after it,
as ``docs/commands.md`` says: one parser case per command (the parser alone, no process)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from hub.cli.main import COMMANDS
from hub.cli.parser import build_parser

DOCS = Path(__file__).resolve().parents[1] / "docs" / "commands.md"

# command -> the words it needs to parse at all (its own positionals and required flags)
NEEDS: dict[str, list[str]] = {
    "serve": [],
    "chat": ["hello"],
    "tui": [],
    "doctor": [],
    "config": [],
    "memory": ["stats"],
    "confirm": [],
    "emulate": ["flipper"],
    "discover": [],
    "pair": [],
    "export": [],
    "cloud": ["status"],
    "people": ["list"],
    "mcp": [],
    "mcp token": ["list"],
    "version": [],
}
SHARED = ["--home", "/data/elsewhere", "--host", "127.0.0.9", "--port", "9123"]


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_every_command_has_a_case_here() -> None:
    listed = set(COMMANDS) - {"hub"} | {"version"}
    assert listed - {"capture"} <= {name.split()[0] for name in NEEDS}, "a command without a case"


@pytest.mark.parametrize("command", sorted(NEEDS))
@pytest.mark.parametrize("where", ["after the command", "before it"])
def test_home_host_and_port_work_in_both_places(command: str, where: str) -> None:
    words = command.split()
    argv = (
        [*words, *NEEDS[command], *SHARED]
        if where == "after the command"
        else [
            *SHARED,
            *words,
            *NEEDS[command],
        ]
    )
    parsed = parse(argv)
    assert (parsed.home, parsed.host, parsed.port) == (Path("/data/elsewhere"), "127.0.0.9", 9123)


@pytest.mark.parametrize("command", ["cloud status", "people list", "mcp token list"])
def test_a_command_with_actions_takes_them_between_the_two_words(command: str) -> None:
    first, *rest = command.split()
    parsed = parse([first, "--home", "/between", "--port", "9124", *rest])
    assert (parsed.home, parsed.port) == (Path("/between"), 9124)


def test_after_the_command_wins_over_before() -> None:
    parsed = parse(["--port", "9000", "--home", "/a", "chat", "--port", "9001", "hi"])
    assert (parsed.port, parsed.home, parsed.text) == (9001, Path("/a"), "hi")


def test_the_emulator_and_chat_of_the_issue_parse() -> None:
    assert parse(["emulate", "flipper", "--home", "/h"]).home == Path("/h")
    chat = parse(["chat", "--port", "9002", "hi"])
    assert (chat.port, chat.text) == (9002, "hi")


def test_capture_keeps_port_for_the_device_and_takes_home() -> None:
    parsed = parse(
        ["capture", "flipper", "--port", "/dev/ttyACM0", "--out", "c.json", "--home", "/h"]
    )
    assert (parsed.port, parsed.home) == ("/dev/ttyACM0", Path("/h"))


def test_the_docs_say_what_the_parser_does() -> None:
    text = DOCS.read_text(encoding="utf-8")
    said = re.search(r"`--home`, `--host` and `--port` may\s+come before the command or", text)
    assert said, "docs/commands.md no longer says where the shared options go"
    assert "`capture`" in text and "serial port" in text, "the exception is documented"
