"""``tiny-hub chat``'s answer on a terminal breaks between words: the wrapping itself, fed the
way a stream arrives (pieces of any size), and the real command on a 40-column pty."""

from __future__ import annotations

import asyncio
import random
import re
import subprocess
from pathlib import Path

import pytest
from rich.cells import cell_len

from fakes.ollama import FakeOllama, Reply
from hub.cli.word_wrap import WordWrap
from tests.test_cli import SCRIPT, cli_env, no_local_hub
from tests.test_cli_chat import Terminal

STORY = (
    "Once upon a time a small robot named Pixel lived in a workshop full of brushes, "
    "paints and half-finished canvases. Every night it watched the painter work; "
    "every morning it tried to copy what it had seen, and failed, and tried again. "
    "Well-hyphenated words stay whole too, when they fit."
)


def wrapped(text: str, width: int, pieces: list[int]) -> str:
    """``text`` through a WordWrap of ``width``, fed in pieces of these sizes (cycled)."""
    wrap, shown, at, index = WordWrap(width), [], 0, 0
    while at < len(text):
        size = pieces[index % len(pieces)]
        shown.append(wrap.feed(text[at : at + size]))
        at, index = at + size, index + 1
    shown.append(wrap.end())
    return "".join(shown)


@pytest.mark.parametrize("width", [20, 40, 79])
def test_lines_break_between_words_however_the_text_arrives(width: int) -> None:
    pieces = [random.Random(width).randint(1, 9) for _ in range(50)]
    for feed in ([1], [3], [1000], pieces):
        shown = wrapped(STORY, width, feed)
        assert shown.split() == STORY.split(), "every word whole, in order"
        assert all(cell_len(line) <= width for line in shown.splitlines()), shown
        assert len(shown.splitlines()) > 1


def test_the_models_own_lines_and_blank_lines_stay() -> None:
    text = "First line.\n\nSecond paragraph here.\nThird."
    assert wrapped(text, 80, [2]) == text


def test_a_list_items_next_lines_start_under_its_text() -> None:
    text = "Ideas:\n1. Walk to the park by the river and feed the ducks there\n- Read a book"
    lines = wrapped(text, 24, [4]).splitlines()
    assert lines[:4] == [
        "Ideas:",
        "1. Walk to the park by",
        "   the river and feed",
        "   the ducks there",
    ]
    assert lines[4] == "- Read a book"


def test_a_word_written_before_a_pause_goes_on_after_it() -> None:
    wrap = WordWrap(80)
    shown = wrap.feed("Hello wor") + wrap.flush() + wrap.feed("ld, again") + wrap.end()
    assert shown == "Hello world, again"


def test_a_word_wider_than_the_terminal_gets_a_line_of_its_own() -> None:
    shown = wrapped("see https://example.org/a/very/long/path/indeed ok", 20, [5])
    assert shown.splitlines() == ["see", "https://example.org/a/very/long/path/indeed", "ok"]


def test_wide_characters_count_two_cells() -> None:
    shown = wrapped("日本語 日本語 日本語", 14, [1])
    assert shown.splitlines() == ["日本語 日本語", "日本語"]


CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def as_seen(raw: bytes) -> list[str]:
    """The lines a terminal shows for ``raw``: escape sequences done, a carriage return
    writing over its line (the progress line is erased that way; the pty ends lines "\\r\\n")."""
    text = CSI.sub("", raw.decode("utf-8", "replace"))
    return [line.removesuffix("\r").rsplit("\r", 1)[-1] for line in text.split("\n")]


@pytest.mark.slow
async def test_chat_on_a_narrow_terminal_breaks_lines_between_words(
    home: Path, closed_port: int, fake_ollama: FakeOllama
) -> None:
    chunks = re.findall(r"\s*\S+", STORY)
    fake_ollama.script(Reply(chunks=chunks))
    env = cli_env(home, closed_port, OLLAMA_HOST=fake_ollama.url)
    no_local_hub(home, closed_port)  # the command starts a hub of its own
    terminal = Terminal(["chat", "tell me a story"], env, columns=40)
    try:
        await asyncio.to_thread(terminal.read_until, b"fit.")
    finally:
        status = await asyncio.to_thread(terminal.close)
    assert status == 0
    answer = [line for line in as_seen(terminal.seen) if line.strip()]
    assert " ".join(answer).split() == STORY.split(), answer
    assert all(cell_len(line) <= 40 for line in answer), answer
    assert len(answer) >= len(STORY) // 40


@pytest.mark.slow
async def test_piped_output_is_the_models_text_as_written(
    home: Path, closed_port: int, fake_ollama: FakeOllama
) -> None:
    """Not on a terminal nothing is wrapped: a script gets what the model wrote."""
    fake_ollama.script(Reply(chunks=re.findall(r"\s*\S+", STORY)))
    env = cli_env(home, closed_port, OLLAMA_HOST=fake_ollama.url)
    no_local_hub(home, closed_port)  # the command starts a hub of its own
    result = await asyncio.to_thread(
        subprocess.run,
        [str(SCRIPT), "chat", "tell me a story"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == STORY + "\n"
