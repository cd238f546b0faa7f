"""``tiny-hub chat`` as a person types it: a conversation on a terminal (a real pty), one turn
from standard input, and a hub that cannot be reached; ``serve``'s URLs and ``config``'s
sources, read from the real process."""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from fakes.ollama import FakeOllama, Reply
from hub.cli.chat import Conversation, stream_reply
from hub.client.http import HubClient
from tests.conftest import StartHub
from tests.test_cli import SCRIPT, cli_env, no_local_hub, run, start_serve
from tests.test_tui_chat import tool_turn

PROMPT = b">>> "


class Terminal:
    """A process on a pseudo-terminal ``columns`` wide, read as a person would see it."""

    def __init__(self, args: list[str], env: dict[str, str], columns: int = 80) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))

        def own_terminal() -> None:
            """A session of its own with the pty as its controlling terminal, so Ctrl+C
            typed there is a SIGINT to it, as in a real terminal."""
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            [str(SCRIPT), *args],
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=own_terminal,
        )
        os.close(slave)
        self.seen = b""
        self.shown_up_to = 0  # what read_until has returned ends here; the rest is still to see

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def read_until(self, wanted: bytes, within_s: float = 300.0) -> bytes:
        """Everything shown up to and including ``wanted``, from where the last call ended (one
        read from the terminal can hold the text of several calls)."""
        start = self.shown_up_to
        deadline = time.monotonic() + within_s
        while wanted not in self.seen[start:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"not shown within {within_s} s: {wanted!r} in {self.seen!r}")
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # the process ended and closed the terminal
                    break
        end = self.seen.index(wanted, start) + len(wanted)
        self.shown_up_to = end
        return self.seen[start:end]

    def close(self) -> int:
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            os.close(self.master)


@pytest.mark.slow
def test_an_interactive_chat_streams_stops_on_ctrl_c_and_ends_on_bye(
    home: Path, closed_port: int
) -> None:
    env = cli_env(home, closed_port, TINY_HUB_MODEL_MAX_TOKENS="300")
    no_local_hub(home, closed_port)
    terminal = Terminal(["chat"], env)
    try:
        terminal.read_until(PROMPT)
        terminal.type(b"hello\r")
        reply = terminal.read_until(PROMPT)
        text = reply.split(b"hello", 1)[1].replace(PROMPT, b"").strip()
        assert text, "a reply streams between the question and the next prompt"
        terminal.type(b"Write a long story about a robot who learns to paint.\r")
        terminal.read_until(b"paint.\r\n")  # the line as typed
        terminal.read_until(b" ")  # the reply has begun
        terminal.type(b"\x03")  # Ctrl+C
        stopped = terminal.read_until(PROMPT)
        assert b"(stopped)" in stopped, "Ctrl+C stops the reply, not the session"
        terminal.type(b"/bye\r")
    finally:
        status = terminal.close()
    assert status == 0


@pytest.mark.slow
def test_chat_dash_reads_the_message_from_standard_input(home: Path, closed_port: int) -> None:
    env = cli_env(home, closed_port)
    no_local_hub(home, closed_port)
    result = subprocess.run(
        [str(SCRIPT), "chat", "-"],
        input="hello\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and result.stdout.strip() != "-"


def test_an_empty_standard_input_is_a_clear_error(home: Path, closed_port: int) -> None:
    result = subprocess.run(
        [str(SCRIPT), "chat", "-"],
        input="",
        env=cli_env(home, closed_port),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "standard input was empty" in result.stderr


def test_a_hub_that_never_answered_could_not_be_reached(home: Path, closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    result = run(["chat", "hello", "--url", url], cli_env(home, closed_port))
    assert result.returncode == 2
    assert f"could not reach the hub at {url}: " in result.stderr
    assert result.stderr.count("reach the hub") == 1, "said once, not twice"
    assert "lost" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("named_by", ["flag", "environment"])
def test_a_hub_named_by_its_port_must_answer(home: Path, closed_port: int, named_by: str) -> None:
    """A port given on the command line or in TINY_HUB_PORT means a hub that is running there:
    none answering is an error, not a hub started in this process."""
    url = f"http://127.0.0.1:{closed_port}"
    if named_by == "flag":
        result = run(["chat", "--port", str(closed_port), "hello"], cli_env(home, closed_port))
    else:
        result = run(["chat", "hello"], cli_env(home, closed_port, TINY_HUB_PORT=str(closed_port)))
    assert result.returncode == 2, result.stdout
    assert f"could not reach the hub at {url}: " in result.stderr
    assert result.stderr.count("reach the hub") == 1
    assert not (home / "owner.token").exists(), "no hub was started in this process"


def test_serve_prints_urls_a_person_can_paste(home: Path, closed_port: int) -> None:
    env = cli_env(home, closed_port, TINY_HUB_LAN_ADVERTISE="false")
    served = start_serve(env)
    try:
        assert served.process.stdout is not None
        this_machine = served.process.stdout.readline()
        assert f"this machine: {served.url}" in this_machine
        assert f"tiny-hub tui --url {served.url}" in this_machine
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)


def test_config_says_where_each_value_comes_from(home: Path, closed_port: int) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[model]\nmax_tokens = 99\n\n[embedded]\nthreads = 1\n")
    env = cli_env(home, closed_port, TINY_HUB_EMBEDDED_CTX="2048")
    result = run(["--port", "9123", "config"], env)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert re.search(r"\b9123\s+flag\b", rows["server.port"])
    assert "env TINY_HUB_EMBEDDED_CTX" in rows["embedded.context_size"]
    assert "config.toml:5" in rows["embedded.threads"]
    assert "env TINY_HUB_MODEL_MAX_TOKENS" in rows["model.max_tokens"], "env wins over the file"
    assert re.search(r"\bdefault\b", rows["server.host"])


def test_memory_reindex_shows_its_progress(home: Path, closed_port: int) -> None:
    from hub.runtime.hub import Hub
    from tests.conftest import settings_for

    hub = Hub.open(settings_for(home))
    try:
        for i in range(12):
            hub.memory.learn(hub.owner.id, f"fact number {i} about the garden")
    finally:
        hub.close()
    result = run(["memory", "reindex"], cli_env(home, closed_port))
    assert result.returncode == 0, result.stderr
    assert "rebuilding the vectors of 12 fact(s)" in result.stdout
    assert re.search(r"12/12 .*fact", result.stderr), result.stderr
    assert "indexed 12 current fact(s)" in result.stdout
    stats = run(["memory", "stats"], cli_env(home, closed_port))
    assert "current facts: 12; without a vector: 0; vectors: 12" in stats.stdout


def test_export_writes_a_conversation_the_tui_kept(home: Path, closed_port: int) -> None:
    from tui.config import TuiConfig
    from tui.conversations import Conversation, ConversationStore

    store = ConversationStore(TuiConfig.load(home / "tui").conversations_dir)
    store.directory.mkdir(parents=True, exist_ok=True)
    kept = Conversation(
        messages=[
            {"role": "user", "content": "what do tomatoes need?"},
            {"role": "assistant", "content": "Sun, **water** every second evening."},
        ]
    )
    store.save(kept)
    listed = run(["export"], cli_env(home, closed_port))
    assert kept.id in listed.stdout and "what do tomatoes need?" in listed.stdout
    by_words = run(["export", "tomatoes"], cli_env(home, closed_port))
    assert by_words.returncode == 0, by_words.stderr
    assert "## You\n\nwhat do tomatoes need?" in by_words.stdout
    assert "## Companion\n\nSun, **water** every second evening." in by_words.stdout
    out = home / "export.md"
    run(["export", kept.id, "--out", str(out)], cli_env(home, closed_port))
    assert out.read_text() == by_words.stdout
    missing = run(["export", "cucumbers"], cli_env(home, closed_port))
    assert missing.returncode == 2 and "no conversation" in missing.stderr


async def test_a_chat_session_sends_each_turn_back_with_its_tool_calls(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    """``tiny-hub chat`` keeps the session as the TUI does: turn 2's body carries turn 1's
    call and result before its text, and the terminal shows only the text."""
    server = await start_hub(ollama_host=fake_ollama.url)
    chips = {"suggestions": ["More", "Thanks"]}
    fake_ollama.script(
        *tool_turn(("suggest_followups", chips), then="Here you go."), Reply(chunks=["Again."])
    )
    args = argparse.Namespace(model_provider=None, model_id=None)
    conversation = Conversation()
    shown = io.StringIO()
    async with HubClient(server.url) as client:
        for line in ("suggest something", "and again?"):
            reply = await stream_reply(
                client, conversation.ask(line), args, shown, err=io.StringIO()
            )
            conversation.answered(reply)
    assert shown.getvalue() == "Here you go.\nAgain.\n"
    roles = ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert [m["role"] for m in conversation.messages] == roles
    sent = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "suggest_followups", "arguments": chips}
    assert sent[2]["role"] == "tool" and "follow-up chips" in sent[2]["content"]
    assert sent[3:] == [
        {"role": "assistant", "content": "Here you go."},
        {"role": "user", "content": "and again?"},
    ]


async def test_a_chat_turn_that_did_nothing_leaves_nothing(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    fake_ollama.script(Reply(http_status=500, error="llama runner process has terminated"))
    conversation = Conversation()
    args = argparse.Namespace(model_provider=None, model_id=None)
    async with HubClient(server.url) as client:
        reply = await stream_reply(
            client, conversation.ask("hello"), args, io.StringIO(), err=io.StringIO()
        )
    conversation.answered(reply)
    assert "llama runner" in reply.error and conversation.messages == []
