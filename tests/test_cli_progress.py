"""``tiny-hub chat`` on a real terminal (a pty) during a slow turn: a progress line with the
seconds before the first token, the tool it calls and that it is still working after it; and
none of it when standard error is not a terminal. The fake Ollama holds each reply until the
test lets it go, so the turn is slow on cue, on any machine."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from tests.test_cli import SCRIPT, cli_env, no_local_hub
from tests.test_cli_chat import PROMPT, Terminal
from tests.test_tui_chat import tool_turn

MIDDLE_DOT = "·".encode()


async def shown_until(terminal: Terminal, wanted: bytes) -> bytes:
    return await asyncio.to_thread(terminal.read_until, wanted)


@pytest.mark.slow
async def test_a_progress_line_comes_before_the_first_token_of_a_slow_turn(
    home: Path, closed_port: int, fake_ollama: FakeOllama
) -> None:
    call, answer = tool_turn(
        ("suggest_followups", {"suggestions": ["More", "Thanks"]}), then="Done."
    )
    slow = Reply(chunks=["Hello", " there."], held=asyncio.Event())
    call.held, answer.held = asyncio.Event(), asyncio.Event()
    fake_ollama.script(slow, call, answer)
    no_local_hub(home, closed_port)  # so the chat starts its hub in-process
    env = cli_env(home, closed_port, OLLAMA_HOST=fake_ollama.url)
    terminal = Terminal(["chat"], env)
    try:
        await shown_until(terminal, PROMPT)
        terminal.type(b"hi\r")
        before = await shown_until(terminal, b"reading the prompt " + MIDDLE_DOT + b" 1 s")
        assert b"Hello" not in before, "the progress line comes before the first token"
        assert re.search(rb"reading the prompt \xc2\xb7 0 s", before), "from Enter on"
        await until(lambda: len(fake_ollama.requests) == 1)
        assert slow.held is not None
        slow.held.set()
        reply = await shown_until(terminal, PROMPT)
        assert b"Hello there." in reply

        terminal.type(b"any ideas?\r")
        await until(lambda: len(fake_ollama.requests) == 2)
        call.held.set()  # the tool runs; the answer is held
        await until(lambda: len(fake_ollama.requests) == 3)
        after_tool = await shown_until(terminal, b"reading suggest_followups's result")
        assert b"suggest_followups: done" in after_tool
        answer.held.set()
        reply = await shown_until(terminal, PROMPT)
        assert b"Done." in reply
        terminal.type(b"/bye\r")
    finally:
        for reply in (slow, call, answer):
            assert reply.held is not None
            reply.held.set()
        status = await asyncio.to_thread(terminal.close)
    assert status == 0


@pytest.mark.slow
def test_no_progress_line_when_standard_error_is_not_a_terminal(
    home: Path, closed_port: int
) -> None:
    no_local_hub(home, closed_port)
    result = subprocess.run(
        [str(SCRIPT), "chat", "hello"],
        env=cli_env(home, closed_port),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "reading the prompt" not in result.stderr + result.stdout
    assert "\x1b[" not in result.stdout + result.stderr
