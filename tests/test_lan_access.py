"""Who may chat from the LAN (``/api/chat`` and the OpenAI API under ``/v1``), asked through a real
non-loopback peer address.

A network namespace gets a TEST-NET address (192.0.2.10) on its loopback device: a client in the
namespace that dials that address arrives from it, so the hub sees a peer that is not loopback,
exactly as a phone on the LAN would look, without leaving this machine. Without the namespace,
``tests/test_hardening.py`` tests the decision through ``is_loopback_peer``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAN_PEER = "192.0.2.10"
WITHOUT_NS = "without one, test_hardening.py tests the loopback decision through its seam"


def _ip(*args: str, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["ip", "netns", "exec", ns] if ns else []
    return subprocess.run([*prefix, "ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def lan_ns() -> Iterator[str]:
    if shutil.which("ip") is None:
        pytest.skip(f"needs the `ip` command (iproute2) for a network namespace; {WITHOUT_NS}")
    if os.geteuid() != 0:
        pytest.skip(f"needs root to create a network namespace (ip netns add); {WITHOUT_NS}")
    name = f"tinyhub-{secrets.token_hex(4)}"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {made.stderr.strip()}; {WITHOUT_NS}")
    try:
        for step in (("link", "set", "lo", "up"), ("addr", "add", f"{LAN_PEER}/32", "dev", "lo")):
            done = _ip(*step, ns=name)
            if done.returncode != 0:
                pytest.skip(f"cannot set up the namespace ({done.stderr.strip()}); {WITHOUT_NS}")
        yield name
    finally:
        _ip("netns", "delete", name)


PROBE = """
import asyncio, json, sys
from pathlib import Path

import aiohttp

from hub.runtime.hub import Hub
from hub.api.server import start_server
from tests.conftest import settings_for
from fakes.ollama import FakeOllama, Reply

CHAT = {"messages": [{"role": "user", "content": "hi"}]}
BODIES = {"/api/chat": CHAT, "/v1/chat/completions": {"model": "tiny", **CHAT}}
OPENAI_ROUTES = ("/v1/chat/completions", "/v1/models")


async def status(url: str, path: str, headers: dict[str, str] | None = None) -> list:
    async with aiohttp.ClientSession() as http:
        method = http.post if path in BODIES else http.get
        kwargs = {"json": BODIES[path]} if path in BODIES else {}
        async with method(url + path, headers=headers or {}, **kwargs) as response:
            return [response.status, await response.text()]


async def main(home: Path) -> None:
    fake = FakeOllama()
    await fake.start()
    found = {}
    for opened in (False, True):
        fake.script(*[Reply(chunks=["hello"]) for _ in range(6)])
        settings = settings_for(
            home / str(opened), host="0.0.0.0", ollama_host=fake.url, lan_anonymous_chat=opened
        )
        hub = Hub.open(settings)
        server = await start_server(hub, "0.0.0.0", 0)
        token = settings.owner_token_path.read_text().strip()
        lan = f"http://LAN_PEER:{server.port}"
        loopback = f"http://127.0.0.1:{server.port}"
        found[f"lan anonymous, opened={opened}"] = await status(lan, "/api/chat")
        found[f"lan token, opened={opened}"] = await status(
            lan, "/api/chat", {"Authorization": f"Bearer {token}"}
        )
        found[f"loopback anonymous, opened={opened}"] = await status(loopback, "/api/chat")
        found[f"lan health, opened={opened}"] = await status(lan, "/api/health")
        for path in OPENAI_ROUTES:
            found[f"lan anonymous {path}, opened={opened}"] = await status(lan, path)
            found[f"lan token {path}, opened={opened}"] = await status(
                lan, path, {"Authorization": f"Bearer {token}"}
            )
        await server.stop()
        hub.close()
    await fake.stop()
    print(json.dumps(found))


asyncio.run(main(Path(sys.argv[1])))
""".replace("LAN_PEER", LAN_PEER)


def test_anonymous_lan_chat_is_401_by_default_and_200_when_opened(
    lan_ns: str, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        ["ip", "netns", "exec", lan_ns, sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = {key: (status, text) for key, (status, text) in json.loads(done.stdout).items()}
    refused_status, refused_text = found["lan anonymous, opened=False"]
    assert refused_status == 401
    assert "sign in required from the LAN" in json.loads(refused_text)["error"]
    assert found["lan token, opened=False"][0] == 200
    assert found["loopback anonymous, opened=False"][0] == 200
    assert found["lan anonymous, opened=True"][0] == 200
    assert "hello" in found["lan anonymous, opened=True"][1]
    for path in ("/v1/chat/completions", "/v1/models"):  # the OpenAI API: the same rule
        refused_status, refused_text = found[f"lan anonymous {path}, opened=False"]
        assert refused_status == 401, path
        assert "sign in required from the LAN" in json.loads(refused_text)["error"]["message"]
        assert found[f"lan token {path}, opened=False"][0] == 200, path
        assert found[f"lan anonymous {path}, opened=True"][0] == 200, path
    health_status, health_text = found["lan health, opened=False"]
    assert health_status == 200 and "dataDir" not in json.loads(health_text)
