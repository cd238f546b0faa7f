"""``tiny-hub doctor`` as a person runs it: it looks (what is installed, what answers, what is
free) without loading the model, says which check it is waiting for on a terminal, and knows
this data dir's own running hub from someone else's program on the port."""

from __future__ import annotations

import os
import pty
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub.cli.progress_line import ERASE
from tests.test_cli import SCRIPT, Served, cli_env, run, start_serve


def line_of(output: str, name: str) -> str:
    found = [line for line in output.splitlines() if re.match(rf"\w+\s+{re.escape(name)}\s", line)]
    assert len(found) == 1, output
    return found[0]


@pytest.fixture
def hub_of_home(home: Path, closed_port: int) -> Iterator[Served]:
    server = start_serve(cli_env(home, closed_port))
    yield server
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=30)


def test_doctor_looks_without_loading_the_model(home: Path, closed_port: int) -> None:
    result = run(["doctor"], cli_env(home, closed_port))
    embedded = line_of(result.stdout, "embedded model")
    assert embedded.startswith("OK") and "installed; tiny-hub doctor --model decodes" in embedded
    assert "tok/s" not in result.stdout
    assert line_of(result.stdout, "import llama_cpp").startswith("OK  ")
    assert "llama-cpp-python " in line_of(result.stdout, "import llama_cpp"), "with its version"
    assert result.stderr == "", "no spinner when standard error is not a terminal"


def test_doctor_with_model_decodes(home: Path, closed_port: int) -> None:
    result = run(["doctor", "--model"], cli_env(home, closed_port))
    embedded = line_of(result.stdout, "embedded model")
    assert embedded.startswith("OK"), embedded
    assert re.search(r"\d+ tokens at [\d.]+ tok/s after a \d+-token prompt", embedded)


def test_doctor_knows_this_data_dirs_running_hub(
    hub_of_home: Served, home: Path, closed_port: int
) -> None:
    port = str(hub_of_home.port)
    result = run(["doctor", "--host", "127.0.0.1", "--port", port], cli_env(home, closed_port))
    said = line_of(result.stdout, "port")
    assert said.startswith("OK"), said
    assert f"127.0.0.1:{port}: this data dir's hub is running (version " in said


def test_doctor_tells_another_hub_on_the_port(
    hub_of_home: Served, tmp_path: Path, closed_port: int
) -> None:
    port = str(hub_of_home.port)
    other = cli_env(tmp_path / "another-home", closed_port)
    said = line_of(run(["doctor", "--host", "127.0.0.1", "--port", port], other).stdout, "port")
    assert said.startswith("WARN") and "held by another tiny-hub" in said
    assert "fix: stop that hub, or give this one another --port" in said


def test_doctor_warns_of_a_port_held_by_something_else(home: Path, closed_port: int) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = str(listener.getsockname()[1])
        result = run(["doctor", "--host", "127.0.0.1", "--port", port], cli_env(home, closed_port))
    said = line_of(result.stdout, "port")
    assert said.startswith("WARN") and "is already in use" in said, said
    assert "tiny-hub" not in said.split(" — fix:")[0], "nothing answered as a hub"


def test_doctor_spins_on_a_terminal_and_prints_plain_lines(home: Path, closed_port: int) -> None:
    """Standard error on a terminal gets the spinner, which names the check it waits for;
    standard output (piped here) gets exactly the check lines."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.run(
            [str(SCRIPT), "doctor"],
            env=cli_env(home, closed_port),
            stdout=subprocess.PIPE,
            stderr=terminal,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=300,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65_536)
            except OSError:  # the terminal's other end is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    spinner = shown.decode()
    assert "checking " in spinner, spinner
    assert spinner.endswith(ERASE), "the spinner is erased at the end"
    assert "\x1b" not in process.stdout
    assert all(re.match(r"(OK|WARN|FAIL)  ", line) for line in process.stdout.splitlines())
