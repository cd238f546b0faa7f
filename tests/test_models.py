"""Model selection order: Ollama with a tool-capable model, without one, not answering."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from fakes.ollama import FakeModel, FakeOllama
from hub.agent.embedded import EmbeddedModel
from hub.agent.models import (
    OLLAMA_PROBE_TIMEOUT_S,
    ModelRouter,
    ModelUnavailable,
    build_cloud_model,
    choice_from_headers,
    embedded_choice,
    probe_ollama,
)
from tests.conftest import StartHub, owner_headers, settings_for


async def test_ollama_with_a_tool_capable_model_is_chosen_with_tools(
    home: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [
        FakeModel("gemma:2b", ("completion",)),
        FakeModel("qwen3:latest", ("completion", "tools")),
    ]
    choice = await ModelRouter(settings_for(home, ollama_host=fake_ollama.url)).default()
    assert (choice.provider, choice.model_id, choice.tools) == ("ollama", "qwen3:latest", True)
    assert "tool-capable" in choice.reason


async def test_ollama_without_a_tool_capable_model_is_chosen_without_tools(
    home: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [FakeModel("gemma:2b", ("completion",))]
    choice = await ModelRouter(settings_for(home, ollama_host=fake_ollama.url)).default()
    assert (choice.provider, choice.model_id, choice.tools) == ("ollama", "gemma:2b", False)
    assert "cannot call tools" in choice.reason


async def test_ollama_not_answering_falls_back_to_embedded(home: Path, closed_port: int) -> None:
    router = ModelRouter(settings_for(home, ollama_host=f"http://127.0.0.1:{closed_port}"))
    choice = await router.default()
    assert (choice.provider, choice.tools) == ("embedded", False)
    assert "not answering" in choice.reason
    assert isinstance(router.build(choice), EmbeddedModel)


async def test_ollama_with_no_models_falls_back_to_embedded(
    home: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = []
    choice = await ModelRouter(settings_for(home, ollama_host=fake_ollama.url)).default()
    assert choice.provider == "embedded"
    assert "no models" in choice.reason


async def test_configured_ollama_model_wins_over_the_first(
    home: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("llama3.2:latest")]
    settings = settings_for(home, ollama_host=fake_ollama.url, model_id="llama3.2")
    choice = await ModelRouter(settings).default()
    assert choice.model_id == "llama3.2:latest"


async def test_configured_embedded_skips_ollama(home: Path, fake_ollama: FakeOllama) -> None:
    settings = settings_for(home, ollama_host=fake_ollama.url, model_provider="embedded")
    assert (await ModelRouter(settings).default()).provider == "embedded"


async def test_probe_reports_capabilities(fake_ollama: FakeOllama) -> None:
    probe = await probe_ollama(fake_ollama.url)
    assert probe.answering
    assert [(m.name, m.tools) for m in probe.models] == [("qwen3:latest", True)]


async def test_probe_of_something_that_is_not_ollama(start_hub: StartHub, closed_port: int) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    probe = await probe_ollama(server.url)  # a hub answers 404 JSON on /api/tags
    assert not probe.answering


def test_headers_override_the_default() -> None:
    default = embedded_choice("test")
    assert choice_from_headers({}, default) is default
    choice = choice_from_headers(
        {
            "x-tiny-model-provider": "groq",
            "x-tiny-model-id": "llama-3.3-70b",
            "x-tiny-model-api-key": "gsk_x",
            "x-tiny-model-max-tokens": "300",
        },
        default,
    )
    assert (choice.provider, choice.model_id, choice.api_key, choice.max_tokens) == (
        "groq",
        "llama-3.3-70b",
        "gsk_x",
        300,
    )
    assert "gsk_x" not in repr(choice) and "gsk_x" not in str(choice.describe())


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"x-tiny-model-provider": "skynet"}, "unknown model provider"),
        ({"x-tiny-model-provider": "openai", "x-tiny-model-max-tokens": "lots"}, "whole number"),
        ({"x-tiny-model-provider": "openai", "x-tiny-model-additional-fields": "{"}, "not JSON"),
        ({"x-tiny-model-provider": "openai", "x-tiny-model-additional-fields": "[1]"}, "object"),
    ],
)
def test_bad_model_headers_are_clear_errors(headers: dict[str, str], problem: str) -> None:
    with pytest.raises(ModelUnavailable, match=problem):
        choice_from_headers(headers, embedded_choice("test"))


def test_openai_compatible_providers_get_their_base_url() -> None:
    choice = choice_from_headers(
        {
            "x-tiny-model-provider": "openrouter",
            "x-tiny-model-id": "m",
            "x-tiny-model-api-key": "k",
        },
        embedded_choice("test"),
    )
    model = build_cloud_model(choice)
    assert model.client_args["base_url"] == "https://openrouter.ai/api/v1"  # type: ignore[attr-defined]
    with pytest.raises(ModelUnavailable, match="base URL"):
        build_cloud_model(
            choice_from_headers(
                {"x-tiny-model-provider": "custom", "x-tiny-model-id": "m"}, embedded_choice("t")
            )
        )
    with pytest.raises(ModelUnavailable, match="model id"):
        build_cloud_model(
            choice_from_headers({"x-tiny-model-provider": "openai"}, embedded_choice("t"))
        )


async def test_health_reports_the_ollama_choice(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response,
    ):
        model = (await response.json())["model"]
    assert model == {
        "provider": "ollama",
        "id": "qwen3:latest",
        "toolsCapable": True,
        "reason": model["reason"],
    }


async def test_api_models_lists_ollamas_models_with_their_tool_capability(
    start_hub: StartHub, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))]
    server = await start_hub(ollama_host=fake_ollama.url)
    async with http.get(f"{server.url}/api/models", headers=owner_headers(server)) as response:
        assert response.status == 200
        listed = await response.json()
    assert listed["ollama"]["answering"] is True
    assert [(m["id"], m["tools"]) for m in listed["ollama"]["models"]] == [
        ("qwen3:latest", True),
        ("gemma:2b", False),
    ]
    assert listed["embedded"]["tools"] is False and "openai" in listed["cloud"]
    async with http.get(f"{server.url}/api/models") as response:
        assert response.status == 401


async def test_api_models_says_why_ollama_is_missing(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    async with http.get(f"{server.url}/api/models", headers=owner_headers(server)) as response:
        listed = await response.json()
    assert listed["ollama"]["answering"] is False and listed["ollama"]["models"] == []
    assert "Cannot connect" in listed["ollama"]["error"]


async def test_a_probe_that_timed_out_is_asked_again_at_the_next_turn(home: Path) -> None:
    """Ollama that answers late once (loading, a busy machine) is asked again at the next
    turn, not kept off for the re-probe interval."""
    asked: list[str] = []

    async def tags(request: web.Request) -> web.Response:
        asked.append(request.path)
        if len(asked) == 1:
            await asyncio.sleep(OLLAMA_PROBE_TIMEOUT_S + 5)
        return web.json_response({"models": []})

    app = web.Application()
    app.router.add_get("/api/tags", tags)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        router = ModelRouter(settings_for(home, ollama_host=f"http://127.0.0.1:{port}"))
        first = await router.default()
        assert first.provider == "embedded" and "no answer in time" in first.reason
        second = await router.default()
        assert len(asked) == 2
        await router.default()
        # Answered (with no models): the usual interval again; late again: asked again.
        assert len(asked) == (3 if "no answer in time" in second.reason else 2)
    finally:
        await runner.cleanup()
