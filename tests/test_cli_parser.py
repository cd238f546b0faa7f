"""Every ``tiny-hub`` command takes ``--home``, ``--host`` and ``--port`` before it or after it,
as ``docs/commands.md`` says: one parser case per command (the parser alone, no process)."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
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
    "jobs": ["list"],
    "telegram": ["status"],
    "tools": ["list"],
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


@pytest.mark.parametrize(
    "command",
    ["cloud status", "people list", "mcp token list", "jobs list", "telegram status", "tools list"],
)
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


# --- every command the README and docs/ print parses as printed -----------------------------------

ROOT = DOCS.parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?:^|\$\(|^(?:[A-Z_]+=\S+\s+)+)(tiny-hub(?:\s.*)?)$")
METAVAR = re.compile(r"^[A-Z][A-Z0-9_]*$")
"""A word in capitals stands for a value (NAME, PORT, ID): any value of the option's kind."""


def printed_commands() -> list[tuple[str, str, bool]]:
    """(file, command, in a code block) for every ``tiny-hub …`` the README and docs print: a
    line of a code block, or a code span in the text (which may name a command without the
    arguments it needs, as "after `tiny-hub cloud join`, …" does)."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for block in FENCE.findall(text):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                found.append((page.name, line.strip(), True))
        found += [(page.name, span, False) for span in SPAN.findall(FENCE.sub("", text))]
    return [
        (name, command, block)
        for name, line, block in found
        if (command := as_argv_text(line)) is not None
    ]


def as_argv_text(line: str) -> str | None:
    """The ``tiny-hub …`` command a line runs, in the parser's terms: no comment, no pipe after
    it, optional ``[parts]`` given, the first of ``a|b``; None when it runs none."""
    line = re.split(r"\s+#\s", line)[0].split(" | ")[0].rstrip(")").strip()
    match = COMMAND.search(line)
    if match is None or "<" in match.group(1):  # `tiny-hub <command>`: any command
        return None
    command = match.group(1).replace("[", "").replace("]", "")
    return re.sub(r"([^\s\\|]+)\\?\|\S+", r"\1", command)


def parse_problem(command: str) -> str:
    """The parser's complaint about a printed command ("" when it parses)."""
    words = [METAVAR.sub("1", word) for word in shlex.split(command)[1:]]
    said = io.StringIO()
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        try:
            parse(words)
        except SystemExit as exit:
            return said.getvalue().strip().splitlines()[-1] if exit.code else ""
    return ""


def test_the_pages_print_commands_to_check() -> None:
    printed = {command for _, command, _ in printed_commands()}
    assert {"tiny-hub doctor", "tiny-hub chat -", "tiny-hub serve --host 127.0.0.1"} <= printed
    assert as_argv_text("TINY_HUB_FLIPPER_PORT=PATH tiny-hub  # the hub") == "tiny-hub"
    assert as_argv_text("tiny-hub serve [--port P] | head") == "tiny-hub serve --port P"
    assert parse_problem("tiny-hub tui --token"), "a flag without its value is caught"


def test_every_command_in_the_readme_and_docs_parses_as_printed() -> None:
    """What a person copies from the pages runs: a command named in the text (not a code
    block) may leave out the arguments it needs; the parser then says which."""
    problems = [
        f"{page}: {command}: {problem}"
        for page, command, in_block in printed_commands()
        if (problem := parse_problem(command))
        and (in_block or "arguments are required" not in problem)
    ]
    assert problems == []


def test_url_and_token_go_before_or_after_the_action() -> None:
    before = parse(["jobs", "--url", "http://127.0.0.1:1", "list", "--token", "t"])
    after = parse(["tools", "run", "my_x", '{"a": 1}', "--url", "http://127.0.0.1:1"])
    install = parse(["tools", "install", "https://raw.example/f.json", "--url", "http://h:1"])
    assert (install.file_url, install.url) == ("https://raw.example/f.json", "http://h:1")
    assert (before.url, before.token, after.url, after.input) == (
        "http://127.0.0.1:1",
        "t",
        "http://127.0.0.1:1",
        '{"a": 1}',
    )


def test_a_job_needs_exactly_one_schedule() -> None:
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse(["jobs", "add", "hi"])
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parse(["jobs", "add", "hi", "--every", "*/5m", "--in", "5"])
    assert parse(["jobs", "add", "hi", "--in", "5"]).in_minutes == 5
