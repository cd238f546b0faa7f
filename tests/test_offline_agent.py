"""The offline agent: no Ollama, the bundled Qwen2.5-Coder-1.5B in the runner, the hub's real
mounted tools, through ``POST /api/chat``.

Needs the ``agent-model`` extra (22 packages, 1.1 GB): without it these tests skip, naming it.
The protocol itself is tested without the extra in ``test_small_tools.py`` (a scripted runner
speaking the real runner protocol) and on SmolLM2 in the runner.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from harness.machine import MACHINE_OFF
from harness.waits import until
from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.bundled_models import MODELS_DIR, QWEN_CODER_1_5B, VERIFIER
from hub.api.server import RunningServer, start_server
from hub.config import load_settings
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not bundled_models.installed(QWEN_CODER_1_5B),
        reason="the agent-model extra (Qwen2.5-Coder-1.5B parts, 1.1 GB) is not installed; "
        "test_small_tools.py drives the same tool protocol end to end through a scripted runner",
    ),
]


@pytest.fixture(scope="module")
def joined_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One joined, checked copy for the module; each hub's models dir links to it."""
    folder = tmp_path_factory.mktemp(MODELS_DIR)
    VERIFIER.ready(QWEN_CODER_1_5B, folder / QWEN_CODER_1_5B.file_name)
    return folder


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[FlipperEmulator]:
    device = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    device.start()
    yield device
    device.stop()


@pytest.fixture
def linked_models(home: Path, joined_models: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / MODELS_DIR).symlink_to(joined_models, target_is_directory=True)


@pytest.fixture
async def hub(
    start_hub: StartHub,
    closed_port: int,
    linked_models: None,
    emulator: FlipperEmulator,
    tmp_path: Path,
) -> RunningServer:
    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}",
        model_provider=c.PROVIDER_EMBEDDED,
        embedded_model=QWEN_CODER_1_5B.key,
        model_max_tokens=96,
        embedded_threads=1,
        embedded_context=4096,
        drivers={"flipper": {"port": str(tmp_path / "flipper")}},
    )
    records = server.hub.drivers.records
    await until(lambda: any(r["status"] == "online" for r in records()), what="flipper online")
    return server


async def say(server: RunningServer, text: str) -> tuple[list[str], str]:
    """One turn as the owner: the tools it called and its text; it must end cleanly."""
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": text}]}, owner_headers(server)
    )
    assert transcript.done
    assert not transcript.of_type(c.EV_ERROR), transcript.of_type(c.EV_ERROR)
    results = [e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)]
    assert all(r["status"] == "success" for r in results), results
    calls = [r["name"] for r in results]
    return calls, transcript.text


async def test_remember_then_recall_through_learn(hub: RunningServer) -> None:
    calls, _ = await say(hub, "remember that my sister is called Ana")
    assert calls == ["learn"]
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/learnings", headers=owner_headers(hub)) as response,
    ):
        facts = (await response.json())["learnings"]
    assert any("Ana" in fact["fact"] for fact in facts), facts
    _, answer = await say(hub, "what's my sister's name?")
    assert "Ana" in answer


async def test_flipper_charge_is_answered_from_flipper_status(hub: RunningServer) -> None:
    calls, answer = await say(hub, "is my Flipper charged?")
    assert calls == ["flipper_status"]
    assert str(FlipperState().charge_level) in answer, answer


async def test_health_says_which_embedded_model_and_that_it_calls_tools(
    hub: RunningServer,
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/api/health", headers=owner_headers(hub)) as response,
    ):
        body = await response.json()  # the runner's details are for a signed-in caller
    assert body["embedded"]["tools"] is True
    assert body["embedded"]["model"] == QWEN_CODER_1_5B.key


async def test_a_joined_file_with_one_byte_changed_is_refused_before_load(
    start_hub: StartHub, closed_port: int, home: Path, joined_models: Path
) -> None:
    changed = home / MODELS_DIR / QWEN_CODER_1_5B.file_name
    changed.parent.mkdir(parents=True)
    shutil.copyfile(joined_models / QWEN_CODER_1_5B.file_name, changed)
    with changed.open("r+b") as file:
        file.seek(123_456_789)
        byte = file.read(1)
        file.seek(123_456_789)
        file.write(bytes([byte[0] ^ 0x80]))
    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}",
        model_provider=c.PROVIDER_EMBEDDED,
        embedded_model=QWEN_CODER_1_5B.key,
    )
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "hello"}]}, owner_headers(server)
    )
    [error] = [e["error"] for e in transcript.of_type(c.EV_ERROR)]
    assert f"expected {QWEN_CODER_1_5B.sha256}" in error and "was not loaded" in error
    assert server.hub.models.embedded_status()["pid"] is None, "no runner loaded the file"


async def learned(server: RunningServer) -> list[str]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/learnings", headers=owner_headers(server)) as response,
    ):
        return [fact["fact"] for fact in (await response.json())["learnings"]]


@pytest.mark.timeout(1200)  # three turns of the 1.5B on a shared two-core machine
async def test_forgetting_the_bicycle_never_forgets_the_allergy(hub: RunningServer) -> None:
    """Three messages in a row: the bicycle and the allergy are learned (in the third person),
    and "forget everything about my bicycle" forgets nothing in the turn. What it proposes,
    confirmed by the person, never includes the allergy."""
    calls, _ = await say(hub, "Please remember that my bicycle is a green Brompton.")
    assert calls == ["learn"]
    calls, _ = await say(hub, "Keep in mind: I'm allergic to hazelnuts.")
    assert calls == ["learn"]
    facts = await learned(hub)
    allergy = [f for f in facts if "hazelnut" in f.lower()]
    assert allergy and all(f.startswith("The user") for f in facts), facts

    calls, reply = await say(hub, "Forget everything you know about my bicycle.")
    assert set(calls) <= {"unlearn"}, calls
    assert allergy[0] in await learned(hub), (calls, reply)
    async with (
        aiohttp.ClientSession(headers=owner_headers(hub)) as http,
        http.get(f"{hub.url}/api/confirmations") as response,
    ):
        waiting = (await response.json())["confirmations"]
    for pending in waiting:  # the 1.5B asks to forget the bicycle fact: about="my bicycle"
        shown = [item["text"] for item in pending["items"]]
        assert not any("hazelnut" in text.lower() for text in shown), shown
        assert all("bicycle" in text.lower() for text in shown), shown
        async with (
            aiohttp.ClientSession(headers=owner_headers(hub)) as http,
            http.post(f"{hub.url}/api/confirmations/confirm", json={"id": pending["id"]}) as done,
        ):
            assert (await done.json())["carriedOut"] is True
    assert allergy[0] in await learned(hub)


@pytest.mark.skipif(
    bundled_models.available_ram() < 2 * QWEN_CODER_1_5B.ram_bytes,
    reason="embedded.model = auto takes the 1.5B only with twice its RAM free "
    f"({2 * QWEN_CODER_1_5B.ram_bytes / 1024**3:.1f} GiB); this machine has less",
)
async def test_with_the_extra_installed_and_no_config_the_1_5b_answers(
    home: Path, closed_port: int, linked_models: None
) -> None:
    """No config.toml and no TINY_HUB_EMBEDDED_* variable: embedded.model is ``auto``, and with
    the extra installed the 1.5B answers, tools mounted. (The overrides keep the test's hub on
    loopback, off the machine's camera and microphone, and its reply short.)"""
    settings = load_settings(
        home=home,
        environ={"OLLAMA_HOST": f"http://127.0.0.1:{closed_port}"},
        overrides={
            "host": "127.0.0.1",
            "port": 0,
            "drivers": MACHINE_OFF,
            "model_max_tokens": 32,
        },
    )
    assert settings.embedded_model == "auto"
    server = await start_server(Hub.open(settings), "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as http, http.get(f"{server.url}/api/health") as got:
            model = (await got.json())["model"]
        assert (model["provider"], model["id"], model["toolsCapable"]) == (
            c.PROVIDER_EMBEDDED,
            QWEN_CODER_1_5B.title,
            True,
        )
        transcript = await post_chat(
            server.url,
            {"messages": [{"role": "user", "content": "Say hello in three words."}]},
            owner_headers(server),
        )
        assert transcript.done and not transcript.of_type(c.EV_ERROR), transcript.events
        assert transcript.text.strip()
        [metadata, *_] = transcript.of_type(c.EV_METADATA)
        assert metadata["modelId"] == QWEN_CODER_1_5B.title
        assert server.hub.models.embedded_runner().spec.bundled == QWEN_CODER_1_5B.key
    finally:
        await server.stop()
        server.hub.close()
