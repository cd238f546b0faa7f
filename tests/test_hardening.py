"""What a caller sends cannot break the hub: bad bytes in headers and bodies, malformed request
heads, sockets that never finish their head, turns that never end; and the data dir is private.

Requests go over real sockets to a real hub on 127.0.0.1, raw where aiohttp's client would
refuse to send the bytes. Every refusal is checked for its JSON, its status, and for the log
staying free of tracebacks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import logging.handlers
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.api.auth import is_loopback_peer
from hub.api.limits import GUARD, Limits
from hub.api.server import RunningServer
from hub.core.logs import KEPT_LOGS, setup_logging
from hub.runtime.hub import Hub
from tests.conftest import StartHub, error_message, owner_headers, settings_for
from tests.sse import post_chat
from tests.test_route_policy import app_routes, concrete

ROOMY = Limits(address_burst=10_000, token_burst=10_000)


def exchange(port: int, data: bytes, wait_s: float = 30.0) -> bytes:
    """Send raw bytes, read until the hub closes the connection."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(data)
        sock.settimeout(wait_s)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def split(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


async def raw(server: RunningServer, data: bytes) -> tuple[int, dict[str, str], Any]:
    status, headers, body = split(await asyncio.to_thread(exchange, server.port, data))
    assert headers["content-type"].startswith("application/json"), (status, headers, body)
    return status, headers, json.loads(body)


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.exc_info or r.levelno >= logging.ERROR
    ]


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    running = await start_hub(ollama_host=fake_ollama.url, header_timeout_s=0.5)
    running.runner.app[GUARD].limits = ROOMY
    return running


# --- headers that are not UTF-8 ----------------------------------------------------------------


@pytest.mark.parametrize(
    "header", [b"Cookie: tiny_session=\xff\xfe", b"Authorization: Bearer \xc3\x28", b"X-A: \x80"]
)
async def test_a_header_that_is_not_utf8_is_a_400_on_every_route(
    server: RunningServer, caplog: pytest.LogCaptureFixture, header: bytes
) -> None:
    statuses = set()
    for method, path in app_routes(server.runner.app):
        request = (
            f"{method} {concrete(path)} HTTP/1.1\r\nHost: hub\r\n".encode()
            + header
            + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        status, _, body = await raw(server, request)
        statuses.add(status)
        assert "not valid UTF-8" in error_message(body), (method, path, body)
    assert statuses == {400}
    assert no_tracebacks(caplog) == []


async def test_bad_header_bytes_are_counted_by_the_rate_limiter(server: RunningServer) -> None:
    server.runner.app[GUARD].limits = Limits(address_burst=5, address_rate_per_s=0.01)
    request = b"GET /api/health HTTP/1.1\r\nHost: hub\r\nCookie: tiny_session=\xff\r\n"
    request += b"Connection: close\r\n\r\n"
    statuses = [(await raw(server, request))[0] for _ in range(8)]
    assert statuses[:5] == [400] * 5
    assert statuses[5:] == [429] * 3


# --- bodies ------------------------------------------------------------------------------------

LONE = b'"\\ud800"'


async def test_a_lone_surrogate_in_json_is_a_400_on_the_routes_that_store_text(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    owner = owner_headers(server)["Authorization"].encode()
    bodies = {
        "/archive": b'{"messages": [{"role": "user", "content": ' + LONE + b"}]}",
        "/api/devices/invoke": b'{"deviceId": "x", "prompt": ' + LONE + b"}",
        "/api/devices": b'{"name": ' + LONE + b', "kind": "daemon"}',
        "/api/devices/heartbeat": b'{"deviceId": "x", "token": ' + LONE + b"}",
        "/api/chat": b'{"messages": [{"role": "user", "content": ' + LONE + b"}]}",
        "/api/tinys": b'{"name": "t", "description": ' + LONE + b"}",
    }
    for path, body in bodies.items():
        request = (
            f"POST {path} HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n".encode()
            + b"Authorization: "
            + owner
            + f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        status, _, answer = await raw(server, request)
        assert status == 400, (path, answer)
        assert "surrogate" in answer["error"], (path, answer)
    assert no_tracebacks(caplog) == []


async def test_a_body_that_is_not_in_its_content_encoding_is_a_400(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"this is not gzip"
    request = (
        b"POST /api/chat HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n"
        + b"Content-Encoding: gzip\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    status, _, answer = await raw(server, request)
    assert status == 400
    assert "Content-Encoding" in answer["error"]
    assert no_tracebacks(caplog) == []


# --- what aiohttp answers itself ---------------------------------------------------------------

SECRET_MARK = b"ECHO-ME-NOT"


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET / HTTP/1.1\r\nHost: hub\r\nX-Big: " + SECRET_MARK + b"a" * 20_000 + b"\r\n\r\n",
        b"POST /api/chat HTTP/1.1\r\nHost: hub\r\nContent-Length: " + SECRET_MARK + b"\r\n\r\n",
        b"GET" + SECRET_MARK + b"@ / HTTP/1.1\r\nHost: hub\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: hub\r\nBad Header" + SECRET_MARK + b"\r\n\r\n",
    ],
    ids=["huge header", "bad content-length", "unknown method", "malformed header"],
)
async def test_protocol_errors_are_json_without_the_request_or_a_traceback(
    server: RunningServer, caplog: pytest.LogCaptureFixture, request_bytes: bytes
) -> None:
    answer = await asyncio.to_thread(exchange, server.port, request_bytes)
    status, headers, body = split(answer)
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    assert json.loads(body)["error"].startswith("bad request: ")
    assert SECRET_MARK not in answer
    assert no_tracebacks(caplog) == []


# --- sockets that never finish their head ------------------------------------------------------


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


async def test_idle_and_slow_header_sockets_are_closed(server: RunningServer) -> None:
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
    slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    done = [socket.create_connection(("127.0.0.1", server.port))]
    for sock in (*idle, *slow, *done):
        sock.setblocking(False)
    try:
        for sock in slow:
            sock.send(b"GET /api/health HTTP/1.1\r\nHo")
        done[0].send(b"GET /api/health HTTP/1.1\r\nHost: hub\r\n\r\n")
        for _ in range(3):  # a byte now and then does not buy more time
            await asyncio.sleep(0.2)
            for sock in slow:
                with _still_open():
                    sock.send(b"s")
        await until(
            lambda: all(closed_by_peer(sock) for sock in (*idle, *slow)),
            what="idle and slow-header sockets to be closed by the hub",
        )
        await asyncio.sleep(0.2)
        assert done[0].recv(4096).startswith(b"HTTP/1.1 200"), "a complete head was answered"
    finally:
        for sock in (*idle, *slow, *done):
            sock.close()


class _still_open:
    """Sending on a socket the hub already closed is fine here: only the close matters."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, *_: Any) -> bool:
        return kind is not None and issubclass(kind, OSError)


# --- who may chat, and what anonymous callers see ----------------------------------------------


def test_the_loopback_decision_uses_the_peer_address() -> None:
    assert is_loopback_peer("127.0.0.1")
    assert is_loopback_peer("127.8.9.10")
    assert is_loopback_peer("::1")
    assert is_loopback_peer("::ffff:127.0.0.1")
    for peer in ("192.0.2.10", "10.0.0.5", "fe80::1%eth0", "::ffff:192.0.2.1", "", None, "x"):
        assert not is_loopback_peer(peer), peer


async def test_anonymous_chat_on_loopback_still_works(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["hello"]))
    transcript = await post_chat(server.url, {"messages": [{"role": "user", "content": "hi"}]})
    assert transcript.text == "hello"


async def test_anonymous_health_shows_no_paths(server: RunningServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/api/health") as response:
            anonymous = await response.json()
        async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as signed:
            owner = await signed.json()
    assert "dataDir" not in anonymous
    assert str(server.hub.settings.home) not in json.dumps(anonymous)
    # What a client needs to start, and nothing about this machine.
    assert set(anonymous) == {"ok", "version", "id", "model"}
    assert set(anonymous["model"]) == {"provider", "id", "toolsCapable"}
    assert owner["dataDir"] == str(server.hub.settings.home)
    assert {"embedded", "uptime", "lanUrl", "loopbackUrl", "repairs", "cloud"} <= set(owner)
    assert "reason" in owner["model"]


# --- a turn's time limit -----------------------------------------------------------------------


async def test_a_turn_ends_at_its_time_limit_with_an_error_and_done(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, turn_timeout_s=1.0)
    fake_ollama.script(Reply(chunks=["never", " finished"], first_delay_s=3600))
    transcript = await post_chat(server.url, {"messages": [{"role": "user", "content": "hi"}]})
    errors = transcript.of_type(c.EV_ERROR)
    assert [e["error"] for e in errors] == ["turn took longer than 1 s"]
    assert transcript.done
    await until(lambda: fake_ollama.disconnects >= 1, what="the model's stream to be closed")


# --- the data dir ------------------------------------------------------------------------------


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def modes(home: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(home.stat().st_mode)}
    for path in home.rglob("*"):
        if not path.is_symlink():
            found[str(path.relative_to(home))] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_a_fresh_data_dir_is_0700_and_its_files_0600(home: Path, loose_umask: None) -> None:
    hub = Hub.open(settings_for(home))
    hub.close()
    found = modes(home)
    assert found["."] == 0o700
    assert {"hub.db", "owner.token", "chroma", "media"} <= set(found), found
    loose = {
        name: oct(mode)
        for name, mode in found.items()
        if mode & 0o077 or (mode != 0o700 and (home / name).is_dir())
    }
    assert loose == {}
    files = {name for name in found if (home / name).is_file()}
    assert all(found[name] == 0o600 for name in files), {n: oct(found[n]) for n in files}


def test_what_the_hub_makes_while_running_is_private_under_any_umask(home: Path) -> None:
    previous = os.umask(0o000)
    try:
        hub = Hub.open(settings_for(home))
        try:
            hub.memory.learn(hub.owner.id, "a fact: vectors.db and its -wal are written")
            hub.memory.vectors.client.heartbeat()  # embedded Chroma (the universe's) opens
            device, _ = hub.devices.registry.enroll(hub.owner.id, name="cam", kind="daemon")
            hub.devices.media.put(hub.owner.id, device.id, b"\xff\xd8", "image/jpeg")
            found = modes(home)  # before any restart could repair anything
        finally:
            hub.close()
    finally:
        os.umask(previous)
    loose = {name: oct(mode) for name, mode in found.items() if mode & 0o077}
    assert loose == {}, loose
    assert any(name.startswith("chroma/") for name in found)
    assert any(name.startswith("media/") for name in found)


def test_a_loosened_data_dir_is_repaired_at_start(home: Path, loose_umask: None) -> None:
    Hub.open(settings_for(home)).close()
    os.umask(0o022)  # as loose as another program (or a person) may be between two starts
    home.chmod(0o755)
    (home / "hub.db").chmod(0o644)
    (home / "chroma").chmod(0o755)
    (home / "media" / "deep").mkdir(mode=0o755)
    (home / "media" / "deep" / "photo.jpg").write_bytes(b"\xff\xd8")
    (home / "media" / "deep" / "photo.jpg").chmod(0o644)
    (home / "theirs").mkdir(mode=0o755)  # not the hub's folder: left as it is
    (home / "run.sh").write_text("#!/bin/sh\n")
    (home / "run.sh").chmod(0o755)
    Hub.open(settings_for(home)).close()
    found = modes(home)
    assert (found["."], found["hub.db"], found["chroma"]) == (0o700, 0o600, 0o700)
    assert (found["media/deep"], found["media/deep/photo.jpg"]) == (0o700, 0o600)
    assert (found["theirs"], found["run.sh"]) == (0o755, 0o700)


# --- the log -----------------------------------------------------------------------------------


def test_the_log_file_rotates_and_is_private(tmp_path: Path, loose_umask: None) -> None:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    log_file = tmp_path / "hub.log"
    try:
        setup_logging("info", log_file)
        handler = root.handlers[0]
        assert isinstance(handler, logging.handlers.RotatingFileHandler)
        handler.maxBytes = 10_000  # the real cap is MAX_LOG_BYTES; a smaller one rotates sooner
        for i in range(2_000):
            logging.getLogger("hub.test").info("line %d %s", i, "x" * 40)
        handler.close()
    finally:
        root.handlers[:] = saved
        root.setLevel(level)
    logs = sorted(p.name for p in tmp_path.iterdir())
    assert logs == ["hub.log", *(f"hub.log.{i}" for i in range(1, KEPT_LOGS + 1))]
    assert all(p.stat().st_size <= 10_000 for p in tmp_path.iterdir())
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tmp_path.iterdir())


# --- stored strings ----------------------------------------------------------------------------


async def test_a_huge_lan_url_is_refused_and_the_stored_one_kept(server: RunningServer) -> None:
    async with aiohttp.ClientSession() as http:
        enrolled = await (
            await http.post(
                f"{server.url}/api/devices",
                json={"name": "laptop", "kind": "daemon"},
                headers=owner_headers(server),
            )
        ).json()
        me = {"deviceId": enrolled["device_id"], "token": enrolled["device_token"]}
        heartbeat = f"{server.url}/api/devices/heartbeat"
        async with http.post(heartbeat, json={**me, "lanUrl": "http://laptop.lan:9"}) as ok:
            assert ok.status == 200
        huge = "http://x/" + "a" * (11 * 1024 * 1024)
        async with http.post(heartbeat, json={**me, "lanUrl": huge}) as refused:
            assert refused.status == 400
            assert "lanUrl is longer than 2048 characters" in (await refused.json())["error"]
        async with http.get(f"{server.url}/api/devices", headers=owner_headers(server)) as listed:
            devices = await listed.json()
    assert [d["lanUrl"] for d in devices["devices"]] == ["http://laptop.lan:9"]


async def test_a_saved_model_choice_has_length_limits(server: RunningServer) -> None:
    async with aiohttp.ClientSession() as http:
        for field, cap in (("id", 256), ("baseUrl", 2048)):
            body = {"provider": "ollama", field: "x" * (cap + 1)}
            async with http.put(
                f"{server.url}/api/model", json=body, headers=owner_headers(server)
            ) as response:
                assert response.status == 400
                assert (
                    f"{field} is longer than {cap} characters" in (await response.json())["error"]
                )
        async with http.get(f"{server.url}/api/model", headers=owner_headers(server)) as saved:
            assert (await saved.json())["saved"] is None
