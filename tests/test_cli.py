"""The ``tiny-hub`` command as a person runs it: a real process, real ports, real model."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.waits import until_sync
from hub.cli.parser import build_parser

SCRIPT = Path(sys.executable).with_name("tiny-hub")
COMMANDS = (
    "serve",
    "chat",
    "tui",
    "doctor",
    "config",
    "memory",
    "emulate",
    "discover",
    "pair",
    "export",
    "capture",
    "version",
)


def cli_env(home: Path, closed_port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINY_HUB_", "OLLAMA_"))}
    env.update(
        {
            "TINY_HUB_HOME": str(home),
            "OLLAMA_HOST": f"http://127.0.0.1:{closed_port}",
            "TINY_HUB_MODEL_MAX_TOKENS": "48",
            "TINY_HUB_EMBEDDED_MODEL": "smollm2",  # as settings_for: never the 1.5B by surprise
            **extra,
        }
    )
    return env


def no_local_hub(home: Path, closed_port: int) -> None:
    """Where this data dir's hub would listen (config.toml, not a flag or the environment,
    which would name a hub that must answer): a port nobody listens on."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[server]\nport = {closed_port}\n", encoding="utf-8")


def run(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class Served:
    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process, self.port = process, port
        self.url = f"http://127.0.0.1:{port}"


def start_serve(env: dict[str, str], *args: str, command: tuple[str, ...] = ("serve",)) -> Served:
    process = subprocess.Popen(
        [str(SCRIPT), *command, "--host", "127.0.0.1", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    said = []
    for line in process.stdout:  # what comes before the 'serving on' line is the command's own
        said.append(line)
        match = re.search(r"serving on http://127\.0\.0\.1:(\d+)", line)
        if match:
            return Served(process, int(match.group(1)))
    raise AssertionError(
        f"no 'serving on' line: {said} {process.stderr.read() if process.stderr else ''}"
    )


@pytest.fixture
def served(home: Path, closed_port: int) -> Iterator[Served]:
    server = start_serve(cli_env(home, closed_port))
    yield server
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=30)


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_version() -> None:
    result = subprocess.run([str(SCRIPT), "version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"tiny-hub \d+\.\d+\.\d+\n", result.stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_help(command: str) -> None:
    result = subprocess.run([str(SCRIPT), command, "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert f"usage: tiny-hub {command}" in result.stdout


@pytest.mark.parametrize("before", [True, False], ids=["before the command", "after it"])
def test_home_is_kept_before_or_after_the_command(tmp_path: Path, before: bool) -> None:
    home = tmp_path / "elsewhere"
    args = ["--home", str(home), "config"] if before else ["config", "--home", str(home)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINY_HUB_")}
    result = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"data dir: {home} "), result.stdout[:200]


@pytest.mark.parametrize(
    ("args", "home", "port"),
    [
        (["--home", "/a", "--port", "9000", "serve"], "/a", 9000),
        (["serve", "--home", "/b", "--port", "0"], "/b", 0),
        (["--home", "/a", "serve", "--home", "/b"], "/b", None),
        (["--home", "/a", "cloud", "status"], "/a", None),
        (["serve"], None, None),
    ],
)
def test_the_options_before_a_command_are_not_lost_to_its_defaults(
    args: list[str], home: str | None, port: int | None
) -> None:
    parsed = build_parser().parse_args(args)
    assert parsed.home == (Path(home) if home else None)
    assert parsed.port == port


def test_top_level_help_lists_every_subcommand() -> None:
    result = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    for command in COMMANDS:
        assert command in result.stdout


def test_serve_with_port_zero_reports_the_port_and_embedded_model(served: Served) -> None:
    health = get_json(f"{served.url}/api/health")
    assert health["ok"] is True
    assert health["model"]["provider"] == "embedded"  # type: ignore[index]


def test_sigterm_stops_serve_cleanly(home: Path, closed_port: int) -> None:
    server = start_serve(cli_env(home, closed_port))
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0


def test_port_in_use_is_one_line_not_a_traceback(home: Path, closed_port: int) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(
            ["serve", "--host", "127.0.0.1", "--port", str(port)], cli_env(home, closed_port)
        )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"port {port}" in result.stderr and "already in use" in result.stderr


@pytest.mark.parametrize("command", [["tui"], []], ids=["tui", "the hub with its tui"])
def test_the_terminal_ui_without_a_terminal_is_one_line_and_exit_2(
    home: Path, closed_port: int, command: list[str]
) -> None:
    """``tiny-hub tui < /dev/null``: said at once, instead of waiting for keys forever."""
    result = run(command, cli_env(home, closed_port))  # standard input is /dev/null
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "standard input and standard output are not terminals" in result.stderr
    assert "tiny-hub serve" in result.stderr, "it says what works without a terminal"
    assert not (home / "hub.db").exists(), "no hub was started for a UI that cannot run"


def test_the_terminal_ui_needs_its_output_on_a_terminal_too(home: Path, closed_port: int) -> None:
    keys, typing_end = pty.openpty()
    try:
        result = subprocess.run(
            [str(SCRIPT), "tui"],
            env=cli_env(home, closed_port),
            stdin=typing_end,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        os.close(keys)
        os.close(typing_end)
    assert result.returncode == 2, result
    assert "standard output is not one" in result.stderr, result.stderr


def test_bad_config_stops_with_file_line_and_key(home: Path, closed_port: int) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[server]\nport = "x"\n')
    result = run(["serve"], cli_env(home, closed_port))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{home / 'config.toml'}, line 2, key 'server.port'" in result.stderr


@pytest.mark.slow
def test_chat_hello_streams_a_reply_from_the_running_hub(
    served: Served, home: Path, closed_port: int
) -> None:
    result = run(["chat", "hello", "--url", served.url], cli_env(home, closed_port))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


@pytest.mark.slow
def test_chat_hello_without_a_running_hub_starts_one_in_process(
    home: Path, closed_port: int
) -> None:
    no_local_hub(home, closed_port)
    result = run(["chat", "hello"], cli_env(home, closed_port))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert (home / "owner.token").exists()


def test_doctor_prints_every_check_honestly(home: Path, closed_port: int) -> None:
    result = run(["doctor"], cli_env(home, closed_port))
    lines = result.stdout.splitlines()
    names = (
        "config",
        "python",
        "import aiohttp",
        "import llama_cpp",
        "microphone",
        "camera",
        "speech model (tiny.en)",
        "ollama",
        "chat model",
        "embedded model",
        "prompt cache",
        "embedding model",
        "serial ports",
        "bluetooth",
        "data dir",
        "port",
    )
    for name in names:
        assert any(
            re.match(rf"(OK|WARN|FAIL)\s+{re.escape(name)}(?!\w)", line) for line in lines
        ), name
    by_name = {re.split(r"\s{2,}", line)[1]: line for line in lines}
    assert by_name["ollama"].startswith("WARN") and "fix:" in by_name["ollama"]
    assert by_name["embedded model"].startswith("OK")
    assert "1024 MB in RAM and on disk; 0 state(s)" in by_name["prompt cache"]
    chat_model = by_name["chat model"]  # as /api/health would say it: SmolLM2 (cli_env), no tools
    assert (
        chat_model.startswith("WARN") and "SmolLM2-135M-Instruct · offline, tools off" in chat_model
    )
    assert by_name["speech model (tiny.en)"].startswith("OK")
    assert "unavailable" in by_name["microphone"] or by_name["microphone"].startswith("OK")
    assert by_name["embedding model"].startswith("OK")
    assert by_name["data dir"].startswith("OK")
    assert not home.exists(), "doctor only looks; it creates nothing"
    assert result.returncode == (1 if any(line.startswith("FAIL") for line in lines) else 0)


def test_doctor_reports_a_bad_config_instead_of_crashing(home: Path, closed_port: int) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[server\n")
    result = run(["doctor"], cli_env(home, closed_port))
    assert result.stdout.startswith("FAIL  config")
    assert "line 1" in result.stdout
    assert "Traceback" not in result.stderr


def test_sigkill_at_any_moment_restarts_cleanly(home: Path, closed_port: int) -> None:
    env = cli_env(home, closed_port)
    for delay in (0.0, 0.05, 0.3):
        process = subprocess.Popen(
            [str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
    server = start_serve(env)
    try:
        assert get_json(f"{server.url}/api/health")["ok"] is True
        token = (home / "owner.token").read_text().strip()
        request = urllib.request.Request(
            f"{server.url}/api/health", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
    finally:
        if server.process.poll() is None:
            server.process.kill()
    conn = sqlite3.connect(home / "hub.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT COUNT(*) FROM users WHERE role = 'owner'").fetchone()[0] == 1


SMOKE_BODY = '{"messages":[{"role":"user","content":"Reply with exactly the word: pong"}]}'


def check_smoke_stream(raw: str) -> None:
    """What a client that follows only the contract relies on."""
    frames = [f for f in raw.split("\n\n") if f and not f.startswith(":")]
    assert frames[-1] == "data: [DONE]"
    events = [json.loads(f.removeprefix("data: ")) for f in frames[:-1]]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "modelMessageStartEvent"
    assert events[-1]["type"] == "agentResultEvent"
    assert "".join(e.get("textDelta", "") for e in events).strip(), "a non-empty reply"


@pytest.mark.slow
def test_seed_smoke_test_against_the_embedded_model(served: Served) -> None:
    """The contract's smoke test, as its curl sends it (with -H content-type: application/json:
    a form is refused)."""
    request = urllib.request.Request(
        f"{served.url}/api/chat",
        data=SMOKE_BODY.encode(),
        headers={
            "x-tiny-name": "tiny",
            "x-tiny-session": "s1",
            "content-type": "application/json",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        check_smoke_stream(response.read().decode())


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("curl") is None,
    reason="no curl binary on this machine (the same request is sent by urllib in the test above)",
)
def test_seed_smoke_test_with_curl(served: Served) -> None:
    result = subprocess.run(
        [
            "curl",
            "-s",
            "-N",
            "-X",
            "POST",
            f"{served.url}/api/chat",
            "-H",
            "content-type: application/json",
            "-H",
            "x-tiny-name: tiny",
            "-H",
            "x-tiny-session: s1",
            "-d",
            SMOKE_BODY,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    check_smoke_stream(result.stdout)


def test_emulate_flipper_prints_a_port_the_driver_can_use(tmp_path: Path) -> None:
    import serial

    process = subprocess.Popen(
        [str(SCRIPT), "emulate", "flipper", "--link", str(tmp_path / "flipper")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        path = process.stdout.readline().strip()
        assert path.startswith("/dev/pts/")
        assert "linked at" in process.stderr.readline()
        next_step = process.stderr.readline()
        assert f"TINY_HUB_FLIPPER_PORT={tmp_path / 'flipper'} tiny-hub" in next_step
        with serial.Serial(str(tmp_path / "flipper"), timeout=5) as port:
            port.write(b"device_info\r")
            answer = port.read_until(b"protobuf_version_minor")
        assert b"hardware_model                : Flipper Zero" in answer
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_running_hub_finds_an_emulated_flipper_by_itself(
    home: Path, closed_port: int, tmp_path: Path
) -> None:
    """Started after the hub, with no setting naming its port: the hub's next scan lists it
    as the OS lists a real one, and it is shown by the name it reports."""
    env = cli_env(home, closed_port, XDG_RUNTIME_DIR=str(tmp_path))
    served = start_serve(env)
    board = subprocess.Popen(
        [str(SCRIPT), "emulate", "flipper", "--name", "Kitsune"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert board.stdout is not None and board.stdout.readline().startswith("/dev/pts/")
        token = (home / "owner.token").read_text().strip()
        request = urllib.request.Request(
            f"{served.url}/api/drivers", headers={"Authorization": f"Bearer {token}"}
        )

        def flipper_online() -> list[dict[str, object]]:
            with urllib.request.urlopen(request, timeout=5) as response:
                drivers = json.load(response)["drivers"]
            return [d for d in drivers if d["driver"] == "flipper" and d["status"] == "online"]

        until_sync(flipper_online, within_s=60, what="the emulated Flipper online")
        [flipper] = flipper_online()
        assert "Kitsune" in str(flipper["name"]), flipper
    finally:
        board.terminate()
        board.wait(timeout=10)
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=30)


def test_emulate_nicla_vision_prints_a_port_the_driver_can_use(tmp_path: Path) -> None:
    import asyncio

    from drivers.nicla_vision.driver import NiclaVisionDriver
    from media.video import is_jpeg

    async def photograph(path: str) -> bytes:
        driver = NiclaVisionDriver("cli", path, {})
        await driver.start()
        try:
            return await driver.snapshot()
        finally:
            await driver.stop()

    process = subprocess.Popen(
        [str(SCRIPT), "emulate", "nicla-vision", "--link", str(tmp_path / "nicla")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip().startswith("/dev/pts/")
        assert is_jpeg(asyncio.run(photograph(str(tmp_path / "nicla"))))
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_emulate_nicla_voice_serves_a_hub_with_the_board_attached(
    home: Path, closed_port: int
) -> None:
    served = start_serve(
        cli_env(home, closed_port), "--wake-every", "0.2", command=("emulate", "nicla-voice")
    )
    try:
        token = (home / "owner.token").read_text().strip()
        request = urllib.request.Request(
            f"{served.url}/api/drivers", headers={"Authorization": f"Bearer {token}"}
        )

        def board_online() -> bool:
            with urllib.request.urlopen(request, timeout=5) as response:
                drivers = json.load(response)["drivers"]
            return any(d["driver"] == "nicla_voice" and d["status"] == "online" for d in drivers)

        until_sync(board_online, within_s=30, what="the emulated Nicla Voice online")
        events = urllib.request.Request(
            f"{served.url}/api/events", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(events, timeout=10) as stream:
            line = stream.readline()
            while not line.startswith(b"data: "):
                line = stream.readline()
        assert json.loads(line[len(b"data: ") :])["kind"] == "nicla_wake"
    finally:
        served.process.send_signal(signal.SIGINT)
        served.process.wait(timeout=30)


def test_pair_prints_a_code_a_phone_trades_for_a_token(home: Path, closed_port: int) -> None:
    env = cli_env(home, closed_port)
    result = run(["pair"], env)
    assert result.returncode == 0, result.stderr
    match = re.search(r"pairing code: (\d{6}) \(valid 5 minutes, once\)", result.stdout)
    assert match, result.stdout
    assert "▀" in result.stdout or "█" in result.stdout  # the QR, drawn in the terminal
    served = start_serve(env)
    try:
        body = json.dumps({"code": match.group(1), "name": "Pixel", "platform": "android"})
        request = urllib.request.Request(
            f"{served.url}/api/pair",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            paired = json.load(response)
        assert paired["token"] and paired["deviceId"]
    finally:
        served.process.send_signal(signal.SIGINT)
        served.process.wait(timeout=30)
