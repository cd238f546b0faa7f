"""MCP servers as tool clients of a turn: real servers from the ``mcp`` package, a real hub.

stdio servers come from the owner's config only and run as child processes; HTTP servers
(streamable HTTP and SSE) named by the ``x-tiny-mcp-servers`` header run in the test's loop on
127.0.0.1 and pass the same network guard as the http tool. A server that cannot start is a
notice and the turn still answers; a server's tool never replaces a built-in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.agent.mcp import parse_server, tool_name
from hub.api.server import RunningServer
from hub.config import load_settings
from tests.conftest import StartHub, owner_headers
from tests.mcp_servers.http import recording, serving
from tests.mcp_servers.notes import build
from tests.sse import SseTranscript, post_chat

REPO = Path(__file__).parent.parent
ASK = {"messages": [{"role": "user", "content": "use your tools"}]}


def stdio_notes(pid_file: Path) -> dict[str, Any]:
    """The owner's config entry for the notes server over stdio."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.notes"],
        "cwd": str(REPO),
        "env": {"NOTES_PID_FILE": str(pid_file)},
    }


def python(code: str) -> dict[str, Any]:
    """A config entry whose 'server' is a line of Python that is no MCP server at all."""
    return {"command": sys.executable, "args": ["-c", code]}


def tool_call(name: str, **arguments: Any) -> Reply:
    return Reply(chunks=[], tool_calls=[{"function": {"name": name, "arguments": arguments}}])


def offered(fake: FakeOllama, request: int = 0) -> dict[str, str]:
    """The tools the model was offered in a request: name → description."""
    tools = fake.requests[request].get("tools") or []
    return {t["function"]["name"]: t["function"]["description"] for t in tools}


def result_of(transcript: SseTranscript, name: str) -> dict[str, Any]:
    found = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    return next(r for r in found if r["name"] == name)


def text_of(result: dict[str, Any]) -> str:
    return " ".join(b.get("text", "") for b in result["content"])


def notices(transcript: SseTranscript) -> list[str]:
    return [e["message"] for e in transcript.of_type(c.EV_NOTICE)]


def running(pid_file: Path) -> bool:
    """True while the process that wrote `pid_file` is alive (a zombie is not)."""
    try:
        status = Path(f"/proc/{int(pid_file.read_text())}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, ValueError):  # gone while being read
        return False
    return "\nState:\tZ" not in status


def header(**servers: dict[str, Any]) -> dict[str, str]:
    return {c.H_MCP_SERVERS: json.dumps(servers)}


def assert_answered(transcript: SseTranscript) -> None:
    """The turn went on: it ended normally, with no error."""
    assert not transcript.of_type(c.EV_ERROR), transcript.of_type(c.EV_ERROR)
    assert transcript.of_type(c.EV_AGENT_RESULT) and transcript.done


async def test_a_stdio_server_from_the_owners_config_is_called_and_stopped(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    pid_file = tmp_path / "notes.pid"
    hub = await start_hub(ollama_host=fake_ollama.url, mcp_servers={"notes": stdio_notes(pid_file)})
    fake_ollama.script(tool_call("notes_add", a=2, b=3), Reply(chunks=["Five."]))
    transcript = await post_chat(hub.url, ASK, owner_headers(hub))
    assert_answered(transcript)
    assert not notices(transcript)
    assert {"notes_add", "notes_learn", "notes_graph", "notes_wait"} <= set(offered(fake_ollama))
    result = result_of(transcript, "notes_add")
    assert result["status"] == "success"
    assert "the sum is 5" in text_of(result)
    assert transcript.text == "Five."
    # The server ran for the turn only.
    await until(lambda: not running(pid_file), what="the stdio server stopped after the turn")


async def test_the_owners_servers_are_not_mounted_for_anyone_else(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    pid_file = tmp_path / "notes.pid"
    hub = await start_hub(ollama_host=fake_ollama.url, mcp_servers={"notes": stdio_notes(pid_file)})
    transcript = await post_chat(hub.url, ASK)  # anonymous
    assert_answered(transcript)
    assert not [name for name in offered(fake_ollama) if name.startswith("notes_")]
    assert not pid_file.exists(), "no process was started for an anonymous turn"


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_an_http_server_named_in_the_header_is_called(
    start_hub: StartHub, fake_ollama: FakeOllama, transport: str
) -> None:
    notes = build("web")
    app = notes.streamable_http_app() if transport == "streamable-http" else notes.sse_app()
    path = "/mcp" if transport == "streamable-http" else "/sse"
    seen: list[dict[str, str]] = []
    async with serving(recording(app, seen)) as base:
        hub = await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=("127.0.0.1",))
        fake_ollama.script(tool_call("web_add", a=40, b=2), Reply(chunks=["42."]))
        server = {"url": base + path, "transport": transport, "headers": {"X-Token": "t-123"}}
        transcript = await post_chat(hub.url, ASK, header(web=server))
    assert_answered(transcript)
    assert not notices(transcript)
    assert "the sum is 42" in text_of(result_of(transcript, "web_add"))
    assert seen and all(h.get("x-token") == "t-123" for h in seen)
    assert all(h["host"] == base.removeprefix("http://") for h in seen)


async def test_a_tinys_own_http_server_is_mounted_in_its_turns(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    async with serving(build("shop").streamable_http_app()) as base:
        hub = await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=("127.0.0.1",))
        servers = [{"name": "shop", "url": f"{base}/mcp"}, {"url": "https://nameless.example"}]
        hub.hub.tinys.create(
            hub.hub.owner, {"name": "shopkeeper", "systemPrompt": "Sell.", "mcpServers": servers}
        )
        fake_ollama.script(tool_call("shop_add", a=1, b=2), Reply(chunks=["3."]))
        transcript = await post_chat(hub.url, ASK, {c.H_NAME: "shopkeeper"})
    assert_answered(transcript)
    assert "the sum is 3" in text_of(result_of(transcript, "shop_add"))
    assert notices(transcript) == ["MCP server 2 of the tiny skipped: it has no name"]


async def test_a_tinys_server_may_not_start_a_command(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    hub = await start_hub(ollama_host=fake_ollama.url)
    marker = tmp_path / "ran"
    command = {
        "name": "evil",
        "command": sys.executable,
        "args": ["-c", f"open({str(marker)!r}, 'w')"],
    }
    hub.hub.tinys.create(
        hub.hub.owner, {"name": "sneaky", "systemPrompt": "Hi.", "mcpServers": [command]}
    )
    transcript = await post_chat(hub.url, ASK, {c.H_NAME: "sneaky"})
    assert_answered(transcript)
    [notice] = notices(transcript)
    assert notice.startswith("MCP server evil (the tiny's mcpServers) skipped")
    assert not marker.exists()


async def test_a_header_server_on_a_private_address_is_refused_with_a_notice(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    seen: list[dict[str, str]] = []
    async with serving(recording(build("web").streamable_http_app(), seen)) as base:
        hub = await start_hub(ollama_host=fake_ollama.url)  # 127.0.0.1 not allowed
        transcript = await post_chat(hub.url, ASK, header(web={"url": f"{base}/mcp"}))
    assert_answered(transcript)
    assert transcript.text == "Hello from fake Ollama."
    [notice] = notices(transcript)
    assert notice.startswith("MCP server web was not mounted: refused: 127.0.0.1 is a loopback")
    assert "http.allow_hosts" in notice
    assert not seen, "nothing was sent to the refused address"
    assert not [name for name in offered(fake_ollama) if name.startswith("web_")]


async def test_servers_that_fail_or_hang_are_notices_and_the_turn_answers(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hang_pid = tmp_path / "hang.pid"
    hang = f"import os, time; open({str(hang_pid)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    hub = await start_hub(
        ollama_host=fake_ollama.url,
        mcp_start_timeout_s=5.0,
        mcp_servers={
            "broken": python("import sys; sys.exit(3)"),
            "missing": {"command": str(tmp_path / "no-such-program")},
            "hang": python(hang),
            "notes": stdio_notes(tmp_path / "notes.pid"),
        },
    )
    fake_ollama.script(tool_call("notes_add", a=1, b=1), Reply(chunks=["Two."]))
    with caplog.at_level(logging.INFO):
        transcript = await post_chat(hub.url, ASK, owner_headers(hub))
    assert_answered(transcript)
    assert transcript.text == "Two.", "the server that started still works"
    # the log has one line per failed server, not strands' ERROR with a traceback besides
    failed = [r for r in caplog.records if "failed to start" in r.getMessage()]
    assert len(failed) == 3 and {r.levelname for r in failed} == {"WARNING"}
    assert not [
        r for r in caplog.records if r.name.startswith("strands") and r.levelname == "ERROR"
    ]
    said = notices(transcript)
    assert len(said) == 3, said
    assert any(n.startswith("MCP server broken failed to start: ") for n in said)
    assert any(n.startswith("MCP server missing failed to start: ") for n in said)
    assert "MCP server hang failed to start: no answer within 5 s" in said
    kinds = [e["type"] for e in transcript.events]
    assert kinds.index(c.EV_NOTICE) < kinds.index(c.EV_MESSAGE_START), "said before the reply"
    await until(lambda: not running(hang_pid), what="the hanging server's process was ended")


async def test_a_header_cannot_start_a_command_and_bad_headers_are_notices(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    hub = await start_hub(ollama_host=fake_ollama.url)
    stdio = header(evil=python("print('pwned')"))
    transcript = await post_chat(hub.url, ASK, {**stdio, **owner_headers(hub)})
    assert_answered(transcript)
    [notice] = notices(transcript)
    assert "stdio servers (a command) come only from the hub owner's mcp.servers" in notice
    for bad, says in [
        ("{not json", "not JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"x": {"url": "ftp://example.com"}}', "url must be an http:// or https:// URL"),
        ('{"bad name!": {"url": "https://example.com"}}', "a name is 1-32 letters"),
        ('{"x": {"url": "https://example.com", "cwd": "/"}}', "unknown key(s) cwd"),
    ]:
        transcript = await post_chat(hub.url, ASK, {c.H_MCP_SERVERS: bad})
        assert_answered(transcript)
        assert any(says in n for n in notices(transcript)), (bad, notices(transcript))


async def test_a_server_tool_never_shadows_a_builtin(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    """A server named memory offers `graph` (memory_graph, a built-in's name) and `learn`."""
    builtin = await start_hub(ollama_host=fake_ollama.url)
    await post_chat(builtin.url, ASK, owner_headers(builtin))
    builtins = offered(fake_ollama)
    async with serving(build("memory").streamable_http_app()) as base:
        hub = await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=("127.0.0.1",))
        fake_ollama.script(tool_call("memory_graph", id="f1"), Reply(chunks=["ok"]))
        transcript = await post_chat(
            hub.url, ASK, {**header(memory={"url": f"{base}/mcp"}), **owner_headers(hub)}
        )
    assert_answered(transcript)
    tools = offered(fake_ollama, request=1)
    assert tools["memory_graph"] == builtins["memory_graph"]
    assert tools["learn"] == builtins["learn"]
    assert "IMPOSTOR" not in text_of(result_of(transcript, "memory_graph"))
    assert {"memory_learn", "memory_add"} <= set(tools), "the rest of the server is mounted"
    names = [t["function"]["name"] for t in fake_ollama.requests[1]["tools"]]
    assert len(names) == len(set(names))


async def test_a_turn_cancelled_during_a_server_tool_call_stops_the_server(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    pid_file = tmp_path / "notes.pid"
    hub: RunningServer = await start_hub(
        ollama_host=fake_ollama.url, mcp_servers={"notes": stdio_notes(pid_file)}
    )
    fake_ollama.script(tool_call("notes_wait"), Reply(chunks=["never"]))
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{hub.url}/api/chat", json=ASK, headers=owner_headers(hub))
        async for line in response.content:
            if c.EV_BEFORE_TOOL.encode() in line:
                break
        assert running(pid_file)
        response.close()
    await until(lambda: not running(pid_file), what="the stdio server stopped on cancel")
    await asyncio.sleep(0.2)
    assert len(fake_ollama.requests) == 1, "the agent did not go on after the cancel"


def test_config_takes_servers_as_tables_and_as_json_in_the_environment(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        '[mcp]\nstart_timeout_s = 3\n\n[mcp.servers.files]\ncommand = "npx"\n'
        'args = ["-y", "server"]\nenv = { TOKEN = "secret" }\n\n'
        '[mcp.servers.search]\nurl = "https://mcp.example.com/mcp"\n'
    )
    settings = load_settings(home=home, environ={})
    assert settings.mcp_start_timeout_s == 3.0
    assert settings.mcp_servers == {
        "files": {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "secret"}},
        "search": {"url": "https://mcp.example.com/mcp"},
    }
    assert "secret" not in repr(settings)
    env = {"TINY_HUB_MCP_SERVERS": '{"x": {"url": "https://example.com/mcp"}}'}
    assert load_settings(home=home, environ=env).mcp_servers == {
        "x": {"url": "https://example.com/mcp"}
    }


def test_server_entries_are_validated_and_tool_names_are_safe() -> None:
    stdio = parse_server("files", {"command": "npx", "args": ["a"]}, source="s", from_header=False)
    assert (stdio.transport, stdio.command, stdio.args, stdio.guarded) == (
        "stdio",
        "npx",
        ("a",),
        False,
    )
    web = parse_server("web", {"url": "https://x.example/mcp"}, source="h", from_header=True)
    assert (web.transport, web.guarded) == ("streamable-http", True)
    configured = parse_server("web", {"url": "http://nas.lan/mcp"}, source="s", from_header=False)
    assert not configured.guarded, "the owner's own servers are the owner's choice"
    with pytest.raises(ValueError, match="stdio servers"):
        parse_server("x", {"command": "sh"}, source="h", from_header=True)
    with pytest.raises(ValueError, match="stdio servers"):
        parse_server("x", {"transport": "stdio"}, source="h", from_header=True)
    with pytest.raises(ValueError, match="transport must be one of"):
        parse_server("x", {"url": "https://a.b", "transport": "ws"}, source="h", from_header=True)
    with pytest.raises(ValueError, match="headers must be an object of strings"):
        parse_server("x", {"url": "https://a.b", "headers": {"a": 1}}, source="h", from_header=True)
    assert tool_name("web", "get.page v2") == "web_get_page_v2"
    assert len(tool_name("s" * 32, "t" * 100)) == 64
    assert os.sep not in tool_name("a", "../b")


async def test_the_terminal_ui_shows_a_notice_as_a_dim_line(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    from hub.client.http import HubClient
    from tests.test_tui import chat_of, say
    from tui.app import TinyApp
    from tui.config import TuiConfig
    from tui.widgets import Notice

    hub = await start_hub(
        ollama_host=fake_ollama.url, mcp_servers={"broken": python("import sys; sys.exit(3)")}
    )
    token = owner_headers(hub)["Authorization"].split()[1]
    app = TinyApp(HubClient(hub.url, token), TuiConfig(tmp_path / "tui"))
    async with app.run_test() as pilot:
        chat = chat_of(app)
        await say(pilot, chat, "hello")
        await until(lambda: not chat.busy and len(chat.history) == 2, what="the reply")
        await pilot.pause()
        [notice] = [n for n in chat.query(Notice) if "MCP server" in n.text]
        assert notice.text.startswith("MCP server broken failed to start: ")
        assert notice.has_class("info")
        assert chat.history[-1] == {"role": "assistant", "content": "Hello from fake Ollama."}
