"""POST /api/chat through strands' real Ollama provider against the fake Ollama."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.api.server import RunningServer
from tests.conftest import StartHub
from tests.sse import post_chat

HELLO = {"messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
async def hub_on_ollama(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


async def test_reply_streams_as_numbered_frames_then_done(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["Hi", " there", "!"]))
    transcript = await post_chat(hub_on_ollama.url, HELLO)
    assert transcript.done
    assert transcript.text == "Hi there!"
    assert [e["seq"] for e in transcript.events] == list(range(len(transcript.events)))
    kinds = [e["type"] for e in transcript.events]
    assert kinds[0] == c.EV_MESSAGE_START
    assert kinds[-1] == c.EV_AGENT_RESULT
    assert set(kinds) <= set(c.SSE_EVENT_TYPES)
    assert transcript.of_type(c.EV_MESSAGE_STOP)[0]["stopReason"] == "end_turn"
    metadata = transcript.of_type(c.EV_METADATA)[0]
    assert metadata["modelId"] == "qwen3:latest"
    assert metadata["usage"]["outputTokens"] == 3
    assert not transcript.of_type(c.EV_ERROR)


async def test_history_and_system_prompt_reach_the_model(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    body = {
        "messages": [
            {"role": "system", "content": "The user is called Ada."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello Ada"}]},
            {"role": "user", "content": [{"type": "text", "text": "what is my name?"}]},
        ]
    }
    await post_chat(hub_on_ollama.url, body, {c.H_SYSTEM_PROMPT: "You are a pirate."})
    sent = fake_ollama.requests[-1]["messages"]
    assert sent[0]["role"] == "system"
    assert "You are a pirate." in sent[0]["content"]
    assert "The user is called Ada." in sent[0]["content"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "hi"),
        ("assistant", "hello Ada"),
        ("user", "what is my name?"),
    ]


async def test_empty_reply_is_an_error_event(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=[]))
    transcript = await post_chat(hub_on_ollama.url, HELLO)
    errors = transcript.of_type(c.EV_ERROR)
    assert len(errors) == 1
    assert "empty reply" in errors[0]["error"]
    assert transcript.done


async def test_mid_stream_model_error_is_an_error_event(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["Hel", "lo", "!"], error_after=2, error="out of memory"))
    transcript = await post_chat(hub_on_ollama.url, HELLO)
    assert transcript.text == "Hello"
    assert "out of memory" in transcript.of_type(c.EV_ERROR)[0]["error"]
    assert transcript.done


async def test_model_http_error_is_an_error_event(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(http_status=500, error="llama runner process has terminated"))
    transcript = await post_chat(hub_on_ollama.url, HELLO)
    assert "llama runner" in transcript.of_type(c.EV_ERROR)[0]["error"]


async def test_length_stop_is_reported_not_an_error(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["a", "b"], done_reason="length"))
    transcript = await post_chat(hub_on_ollama.url, HELLO)
    assert transcript.text == "ab"
    assert transcript.of_type(c.EV_AGENT_RESULT)[-1]["stopReason"] == "max_tokens"
    assert not transcript.of_type(c.EV_ERROR)


async def test_model_headers_choose_the_model(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    transcript = await post_chat(
        hub_on_ollama.url, HELLO, {c.H_MODEL_PROVIDER: "ollama", c.H_MODEL_ID: "mistral"}
    )
    assert fake_ollama.requests[-1]["model"] == "mistral"
    assert "not found" in transcript.of_type(c.EV_ERROR)[0]["error"]


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (b"[]", 400, "JSON object"),
        (b'{"messages": "hi"}', 400, "non-empty array"),
        (b'{"messages": []}', 400, "non-empty array"),
        (b'{"messages": [{"role": "robot", "content": "x"}]}', 400, "messages[0].role"),
        (b'{"messages": [{"role": "user", "content": 5}]}', 400, "messages[0].content"),
        (b'{"messages": [{"role": "user", "content": [{"text": 1}]}]}', 400, "content[0].text"),
        (b'{"messages": [{"role": "user", "content": "  "}]}', 400, "no text"),
        (b'{"messages": [{"role": "assistant", "content": "x"}]}', 400, "role user"),
        (
            b'{"messages": [{"role": "user", "content": "' + b"x" * (5 * 1024 * 1024) + b'"}]}',
            413,
            "too large",
        ),
    ],
)
async def test_bad_bodies_get_a_clear_error_and_the_hub_stays_up(
    hub_on_ollama: RunningServer, body: bytes, status: int, problem: str
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{hub_on_ollama.url}/api/chat", data=body, headers={"content-type": "application/json"}
        ) as response:
            assert response.status == status
            assert problem in (await response.json())["error"]
        async with http.get(f"{hub_on_ollama.url}/api/health") as response:
            assert response.status == 200


async def test_unknown_provider_header_is_a_400(hub_on_ollama: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{hub_on_ollama.url}/api/chat", json=HELLO, headers={c.H_MODEL_PROVIDER: "skynet"}
        ) as response,
    ):
        assert response.status == 400
        assert "unknown model provider" in (await response.json())["error"]


async def test_quiet_stream_gets_pings(start_hub: StartHub, fake_ollama: FakeOllama) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, ping_interval_s=0.05)
    fake_ollama.script(Reply(chunks=["slow", " reply"], delay_s=0.3))
    transcript = await post_chat(server.url, HELLO)
    assert ": ping" in transcript.comments
    assert transcript.text == "slow reply"


async def test_client_disconnect_closes_the_model_stream(
    hub_on_ollama: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=[f"w{i} " for i in range(400)], delay_s=0.02))
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{hub_on_ollama.url}/api/chat", json=HELLO)
        async for line in response.content:
            if b"textDelta" in line:
                break
        response.close()
    for _ in range(100):
        if fake_ollama.disconnects:
            break
        await asyncio.sleep(0.05)
    assert fake_ollama.disconnects == 1, "Ollama must see its stream closed"


async def test_deeply_nested_json_is_a_400(hub_on_ollama: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{hub_on_ollama.url}/api/chat",
            data=b"[" * 100_000,
            headers={"content-type": "application/json"},
        ) as response,
    ):
        assert response.status == 400
        assert "nested too deeply" in (await response.json())["error"]
