"""A person's model choice against what answers: the embedded models there are to pick, a saved
embedded choice pinned by its key with its own tools, one that follows the hub's config, and
/api/health saying for each caller the model that really answers their turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.bundled_models import QWEN_CODER_1_5B, SMOLLM2
from hub.agent.embedded import EmbeddedModel
from hub.agent.models import ModelRouter, bundled_model_named, choice_from_headers
from hub.api.server import RunningServer, start_server
from hub.people.preferences import SavedModel, save_model
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for

QWEN_INSTALLED = bundled_models.installed(QWEN_CODER_1_5B)


async def call(
    http: aiohttp.ClientSession,
    server: RunningServer,
    method: str,
    path: str,
    body: Any = None,
    signed_in: bool = True,
) -> tuple[int, Any]:
    headers = owner_headers(server) if signed_in else {}
    async with http.request(method, server.url + path, json=body, headers=headers) as response:
        return response.status, await response.json()


async def health_model(
    http: aiohttp.ClientSession, server: RunningServer, signed_in: bool = True
) -> dict[str, Any]:
    status, health = await call(http, server, "GET", "/api/health", signed_in=signed_in)
    assert status == 200
    return dict(health["model"])


async def test_the_embedded_models_are_listed_with_installed_and_tools(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    status, listed = await call(http, server, "GET", "/api/models")
    assert status == 200
    embedded = listed["embedded"]
    assert (embedded["key"], embedded["id"], embedded["tools"]) == (
        SMOLLM2.key,
        SMOLLM2.title,
        False,
    )
    by_key = {m["key"]: m for m in embedded["models"]}
    assert by_key[SMOLLM2.key] == {
        "key": SMOLLM2.key,
        "id": SMOLLM2.title,
        "tools": False,
        "installed": True,
        "install": SMOLLM2.install,
    }
    assert by_key[QWEN_CODER_1_5B.key]["tools"] is True
    assert by_key[QWEN_CODER_1_5B.key]["installed"] is QWEN_INSTALLED
    assert "agent-model" in by_key[QWEN_CODER_1_5B.key]["install"]


async def test_a_saved_embedded_choice_is_pinned_by_key_with_its_own_tools(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    status, refused = await call(
        http, server, "PUT", "/api/model", {"provider": "embedded", "id": "gpt-7"}
    )
    assert status == 400 and "no embedded model 'gpt-7'" in refused["error"]
    assert (await call(http, server, "GET", "/api/model"))[1]["saved"] is None

    picked = {"provider": "embedded", "id": QWEN_CODER_1_5B.title}  # by title or by key
    status, answer = await call(http, server, "PUT", "/api/model", picked)
    if not QWEN_INSTALLED:
        assert status == 400 and "not installed: pip install 'tiny-hub[agent-model]'" in str(answer)
        return
    assert status == 200 and answer["saved"]["id"] == QWEN_CODER_1_5B.key
    assert await health_model(http, server) == {
        "provider": c.PROVIDER_EMBEDDED,
        "id": QWEN_CODER_1_5B.title,
        "toolsCapable": True,
        "reason": "the user's saved choice",
    }
    anonymous = await health_model(http, server, signed_in=False)  # the hub's default
    assert (anonymous["id"], anonymous["toolsCapable"]) == (SMOLLM2.title, False)

    router = server.hub.models
    saved = SavedModel(c.PROVIDER_EMBEDDED, QWEN_CODER_1_5B.key)
    choice = await router.resolve({}, saved)
    assert (choice.model_id, choice.tools) == (QWEN_CODER_1_5B.title, True)
    model = router.build(choice)
    assert isinstance(model, EmbeddedModel)
    runner = router.embedded_runner(QWEN_CODER_1_5B)
    assert runner.spec.bundled == QWEN_CODER_1_5B.key, "the 1.5B runs in a runner of its own"
    assert router.embedded_runner().spec.bundled == SMOLLM2.key, "the default keeps its own"


async def test_an_embedded_choice_without_an_id_follows_the_config(
    home: Path, closed_port: int, http: aiohttp.ClientSession
) -> None:
    """Saving "embedded" does not freeze today's embedded.model: a hub restarted with another
    one in its config answers with that one, tools and all."""
    no_ollama = f"http://127.0.0.1:{closed_port}"
    for configured, tools in ((SMOLLM2, False), (QWEN_CODER_1_5B, True)):
        settings = settings_for(home, ollama_host=no_ollama, embedded_model=configured.key)
        server = await start_server(Hub.open(settings), "127.0.0.1", 0)
        try:
            if configured is SMOLLM2:
                status, _ = await call(http, server, "PUT", "/api/model", {"provider": "embedded"})
                assert status == 200
            model = await health_model(http, server)
            assert (model["id"], model["toolsCapable"]) == (configured.title, tools)
            assert model["reason"] == "the user's saved choice"
        finally:
            await server.stop()
            server.hub.close()


async def test_a_saved_ollama_choice_is_what_health_reports_to_its_owner(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    from fakes.ollama import FakeModel, FakeOllama

    fake = FakeOllama([FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))])
    await fake.start()
    try:
        server = await start_hub(ollama_host=fake.url)
        assert (await health_model(http, server))["id"] == "qwen3:latest"
        await call(http, server, "PUT", "/api/model", {"provider": "ollama", "id": "gemma:2b"})
        model = await health_model(http, server)
        assert (model["id"], model["toolsCapable"]) == ("gemma:2b", False)
        assert (await health_model(http, server, signed_in=False))["id"] == "qwen3:latest"
    finally:
        await fake.stop()


@pytest.mark.parametrize(
    "name", ["qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct", "QWEN2.5-CODER-1.5B"]
)
def test_a_bundled_model_is_named_by_key_or_title(name: str) -> None:
    assert bundled_model_named(name) is QWEN_CODER_1_5B
    assert bundled_model_named("custom GGUF") is None


async def test_headers_naming_the_tool_model_get_its_tools(home: Path, closed_port: int) -> None:
    router = ModelRouter(settings_for(home, ollama_host=f"http://127.0.0.1:{closed_port}"))
    headers = {c.H_MODEL_PROVIDER: "embedded", c.H_MODEL_ID: QWEN_CODER_1_5B.key}
    choice = await router.resolve(headers)
    assert (choice.model_id, choice.tools) == (QWEN_CODER_1_5B.title, True)
    default = choice_from_headers({}, await router.default())
    assert (default.model_id, default.tools) == (SMOLLM2.title, False)


async def test_an_embedded_choice_saved_by_title_follows_the_config(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    """The picker once saved the title of whatever embedded model ran (SmolLM2, tools off):
    such a choice meant "the embedded model" and must not keep the 1.5B away once configured."""
    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}", embedded_model=QWEN_CODER_1_5B.key
    )
    save_model(server.hub.db, server.hub.owner, SavedModel(c.PROVIDER_EMBEDDED, SMOLLM2.title))
    model = await health_model(http, server)
    assert (model["id"], model["toolsCapable"]) == (QWEN_CODER_1_5B.title, True)
