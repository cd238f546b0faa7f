"""A model that cannot call tools, asked for what only a tool does, says so plainly (and how to
get a model that can) instead of inventing a reading or promising a job it never makes; asked
anything else, it answers as always."""

from __future__ import annotations

import pytest
from strands.types.tools import ToolSpec

from fakes.ollama import FakeModel, FakeOllama, Reply
from hub import contracts as c
from hub.agent import bundled_models
from hub.agent.embedded import cached_embed
from hub.agent.without_tools import unmet_request, ways_to_tools
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat


def spec(name: str, description: str) -> ToolSpec:
    schema = {"type": "object", "properties": {}, "required": []}
    return {"name": name, "description": description, "inputSchema": {"json": schema}}


DEVICE_TOOLS = [
    spec("flipper_status", "The Flipper Zero attached to this hub: battery, firmware, name."),
    spec("camera_photo", "Take a photo with the webcam of this machine."),
]
JOB_TOOLS = [spec("schedule", "Run a prompt later, once or on a schedule (a job).")]


@pytest.mark.parametrize(
    ("message", "unmet"),
    [
        ("what's the battery of my Flipper?", "reach your devices"),
        ("take a picture with the webcam", "reach your devices"),
        ("remember that my sister is called Ana", "save that to your memory"),
        ("don't forget that my brother is Tom", "save that to your memory"),
        ("forget everything you know about me", "change what your memory holds"),
        ("remind me every morning to drink water", "set up work for later"),
        ("hello!", None),
        ("what's my sister's name?", None),
        ("write a haiku about rain", None),
        ("what is 12 times 7?", None),
    ],
)
def test_what_only_a_tool_does_is_told_apart_from_what_the_model_can_answer(
    message: str, unmet: str | None
) -> None:
    found = unmet_request(message, DEVICE_TOOLS, JOB_TOOLS, cached_embed)
    if unmet is None:
        assert found is None
    else:
        assert found is not None and found.what.startswith(unmet)


@pytest.mark.slow
async def test_the_small_model_asked_for_a_device_says_it_cannot_and_names_both_ways(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    """SmolLM2 (no tools): a Flipper question gets the plain answer, never a made-up battery;
    small talk still reaches the model."""
    server = await start_hub(
        model_provider=c.PROVIDER_EMBEDDED, embedded_model="smollm2", embedded_tools="auto"
    )
    headers = owner_headers(server)
    asked = await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "what's the battery of my Flipper?"}]},
        headers,
    )
    assert asked.done and not asked.of_type(c.EV_ERROR)
    assert asked.text.startswith("I can't reach your devices right now")
    assert "SmolLM2" in asked.text and "won't guess" in asked.text
    if bundled_models.installed(bundled_models.QWEN_CODER_1_5B):
        assert "calls tools is installed" in asked.text and "embedded.model" in asked.text
    else:
        assert "agent-model" in asked.text and "ollama pull qwen3" in asked.text
    assert "%" not in asked.text and "mAh" not in asked.text
    hello = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "hello!"}]}, headers
    )
    assert hello.done and hello.text.strip()
    assert "can't" not in hello.text.split(".")[0], "small talk is the model's to answer"


async def test_an_ollama_model_without_tools_is_pointed_at_one_with_them(
    start_hub: StartHub,
) -> None:
    fake = FakeOllama(models=[FakeModel("gemma:2b", ("completion",))])
    await fake.start()
    try:
        server = await start_hub(ollama_host=fake.url)
        fake.script(Reply(chunks=["Sure, every morning!"]))
        said = await post_chat(
            server.url,
            {"messages": [{"role": "user", "content": "remind me every morning at 8 to stretch"}]},
            owner_headers(server),
        )
    finally:
        await fake.stop()
    assert said.done and said.text.startswith("I can't set up work for later")
    assert "gemma:2b" in said.text and "ollama pull qwen3" in said.text
    assert not fake.requests, "the model was not asked to promise what it cannot do"


def test_the_ways_to_tools_follow_what_is_installed() -> None:
    nothing = ways_to_tools(c.PROVIDER_EMBEDDED, tool_model_installed=False)
    assert "TINY_HUB_EXTRAS=agent-model ./scripts/hub" in nothing and "ollama pull qwen3" in nothing
    installed = ways_to_tools(c.PROVIDER_EMBEDDED, tool_model_installed=True)
    assert 'embedded.model = "auto"' in installed
    assert "ollama pull qwen3" in ways_to_tools(c.PROVIDER_OLLAMA, tool_model_installed=True)
