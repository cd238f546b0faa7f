"""The full chat-turn contract: tools, overflow recovery, cancellation, tinys, prompt, models."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeModel, FakeOllama, Reply
from hub import contracts as c
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.sse import SseTranscript, post_chat
from tests.test_tool_mounting import WEB_BUILTINS


def body(*texts: str) -> dict[str, Any]:
    """A conversation alternating user/assistant, ending with the user."""
    roles = ["user", "assistant"] * len(texts)
    messages = [{"role": roles[i], "content": t} for i, t in enumerate(texts)]
    assert messages[-1]["role"] == "user"
    return {"messages": messages}


async def chat(
    server: RunningServer, payload: Any, headers: dict[str, str] | None = None
) -> SseTranscript:
    return await post_chat(server.url, payload, headers)


def tool_call(tool: str, **arguments: Any) -> Reply:
    return Reply(chunks=[], tool_calls=[{"function": {"name": tool, "arguments": arguments}}])


@pytest.fixture
async def hub(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


async def test_tool_turn_streams_before_after_and_result_with_names_and_ids(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(
        tool_call("suggest_followups", suggestions=["Tell me more", "Thanks!"]),
        Reply(chunks=["Here ", "you go."]),
    )
    transcript = await chat(hub, body("suggest something"))
    kinds = [e["type"] for e in transcript.events]
    start = next(e["toolStart"] for e in transcript.of_type(c.EV_BLOCK_START) if "toolStart" in e)
    before = transcript.of_type(c.EV_BEFORE_TOOL)[0]["toolCall"]
    after = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    block = transcript.of_type(c.EV_TOOL_RESULT_BLOCK)[0]["toolResultBlock"]
    assert start["name"] == before["name"] == after["name"] == "suggest_followups"
    assert start["toolUseId"] == before["toolUseId"] == after["toolUseId"] == block["toolUseId"]
    assert before["input"] == {"suggestions": ["Tell me more", "Thanks!"]}
    assert after["status"] == block["status"] == "success"
    assert after["error"] is None
    assert {"json": {"suggestions": ["Tell me more", "Thanks!"]}} in after["content"]
    assert kinds.index(c.EV_BEFORE_TOOL) < kinds.index(c.EV_AFTER_TOOL)
    assert kinds.index(c.EV_AFTER_TOOL) < kinds.index(c.EV_TOOL_RESULT_BLOCK)
    assert transcript.text == "Here you go."
    assert [e["seq"] for e in transcript.events] == list(range(len(transcript.events)))
    assert transcript.events[-1]["type"] == c.EV_AGENT_RESULT and transcript.done
    # The model saw the tool result on its second call.
    second = fake_ollama.requests[1]["messages"]
    tool_messages = [m["content"] for m in second if m["role"] == "tool"]
    assert any("follow-up chips" in content for content in tool_messages)


async def test_failing_tool_reports_its_error(hub: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(tool_call("suggest_followups", suggestions=["only one"]), Reply())
    transcript = await chat(hub, body("go"))
    after = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["status"] == "error"
    assert "2 to 4" in after["error"]


async def test_anonymous_caller_gets_login_required(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(tool_call("create_ai", name="pirate", systemPrompt="Arr"), Reply())
    transcript = await chat(hub, body("make me a pirate tiny"))
    after = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert (after["status"], after["error"]) == ("error", c.LOGIN_REQUIRED)
    assert hub.hub.tinys.get("pirate") is None


async def test_signed_in_caller_can_create_a_tiny(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(tool_call("create_ai", name="pirate", systemPrompt="Arr"), Reply())
    transcript = await chat(hub, body("make me a pirate tiny"), owner_headers(hub))
    assert transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]["status"] == "success"
    pirate = hub.hub.tinys.get("pirate")
    assert pirate is not None and pirate.system_prompt == "Arr"


async def test_mid_stream_error_then_done(hub: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply(chunks=["a", "b", "c"], error_after=1, error="GPU fell off"))
    transcript = await chat(hub, body("hi"))
    assert transcript.text == "a"
    assert transcript.events[-1] == {
        "type": "error",
        "error": "model error: GPU fell off",
        "seq": len(transcript.events) - 1,
    }
    assert transcript.done


async def test_overflow_drops_the_older_half_once_and_retries(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply.overflow(), Reply(chunks=["fits now"]))
    transcript = await chat(hub, body("q1", "a1", "q2", "a2", "q3", "a3", "q4"))
    # Six history messages: the older half is three, and one more so the kept part starts
    # with the user, as providers require.
    compacted = transcript.of_type(c.EV_CONTEXT_COMPACTED)
    assert [(e["type"], e["dropped"]) for e in compacted] == [(c.EV_CONTEXT_COMPACTED, 4)]
    assert transcript.text == "fits now"
    first, retry = fake_ollama.requests
    assert [m["content"] for m in first["messages"][1:]] == [
        "q1",
        "a1",
        "q2",
        "a2",
        "q3",
        "a3",
        "q4",
    ]
    assert [m["content"] for m in retry["messages"][1:]] == ["q3", "a3", "q4"]
    assert not transcript.of_type(c.EV_ERROR)


async def test_overflow_is_retried_only_once(hub: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.overflow(), Reply.overflow())
    transcript = await chat(hub, body("q1", "a1", "q2", "a2", "q3"))
    assert len(transcript.of_type(c.EV_CONTEXT_COMPACTED)) == 1
    assert "too long" in transcript.of_type(c.EV_ERROR)[0]["error"]
    assert len(fake_ollama.requests) == 2


async def test_no_retry_with_fewer_than_four_history_messages(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply.overflow())
    transcript = await chat(hub, body("q1", "a1", "q2"))
    assert not transcript.of_type(c.EV_CONTEXT_COMPACTED)
    assert "too long" in transcript.of_type(c.EV_ERROR)[0]["error"]
    assert len(fake_ollama.requests) == 1
    assert transcript.done


@pytest.mark.parametrize("first_delay_s", [0.0, 30.0], ids=["mid-stream", "before-first-token"])
async def test_disconnect_closes_the_model_connection(
    hub: RunningServer, fake_ollama: FakeOllama, first_delay_s: float
) -> None:
    """The model stops generating: its connection is closed long before the scripted reply
    could have finished (2000 chunks, or a 30 s prompt evaluation). How fast is measured by
    ``scripts/bench`` (cancel_close_ms), not asserted here."""
    chunks = [f"w{i} " for i in range(2000)]
    fake_ollama.script(Reply(chunks=chunks, delay_s=0.01, first_delay_s=first_delay_s))
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{hub.url}/api/chat", json=body("tell me everything"))
        if first_delay_s:
            await asyncio.wait_for(fake_ollama.chat_seen.wait(), 10)
            await asyncio.sleep(0.2)  # the model is "evaluating the prompt": nothing sent yet
        else:
            async for line in response.content:
                if b"textDelta" in line:
                    break
        response.close()
    await asyncio.wait_for(fake_ollama.disconnected.wait(), 10)
    if first_delay_s:
        assert fake_ollama.chunks_sent == 0, "closed during the prompt evaluation"
    else:
        assert 0 < fake_ollama.chunks_sent < len(chunks), "closed mid-stream, not at the end"


async def test_unknown_tiny_is_404_before_any_stream(hub: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{hub.url}/api/chat", json=body("hi"), headers={c.H_NAME: "nobody"}) as response,
    ):
        assert response.status == 404
        assert response.content_type == "application/json"
        assert "no tiny named nobody" in (await response.json())["error"]


async def test_private_tiny_needs_its_key(hub: RunningServer, fake_ollama: FakeOllama) -> None:
    owner = hub.hub.owner
    _, key = hub.hub.tinys.create(
        owner, {"name": "diary", "systemPrompt": "Keep secrets.", "visibility": "private"}
    )
    assert key
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{hub.url}/api/chat", json=body("hi"), headers={c.H_NAME: "diary"}
        ) as response:
            assert response.status == 403
            assert "x-tiny-key" in (await response.json())["error"]
        async with http.post(
            f"{hub.url}/api/chat", json=body("hi"), headers={c.H_NAME: "diary", c.H_KEY: "wrong"}
        ) as response:
            assert response.status == 403
    transcript = await chat(hub, body("hi"), {c.H_NAME: "diary", c.H_KEY: key})
    assert transcript.text
    assert "Keep secrets." in fake_ollama.requests[-1]["messages"][0]["content"]
    transcript = await chat(hub, body("hi"), {c.H_NAME: "diary", **owner_headers(hub)})
    assert transcript.text, "the owner needs no key"


async def test_prompt_comes_from_the_tiny_override_and_metadata(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    hub.hub.tinys.create(
        hub.hub.owner,
        {
            "name": "chef",
            "systemPrompt": "You are a chef.",
            "systemKnowledge": "Basil is in season.",
        },
    )
    await chat(hub, body("hi"), {c.H_NAME: "chef", c.H_METADATA: "iPhone 15, Paris"})
    system = fake_ollama.requests[-1]["messages"][0]["content"]
    assert "You are a chef." in system and "Basil is in season." in system
    assert "iPhone 15, Paris" in system
    await chat(
        hub,
        body("hi"),
        {c.H_NAME: "chef", c.H_SYSTEM_PROMPT: "You are a poet.", c.H_IP_LEGACY: "203.0.113.9"},
    )
    system = fake_ollama.requests[-1]["messages"][0]["content"]
    assert "You are a poet." in system and "You are a chef." not in system
    assert "203.0.113.9" in system


@pytest.mark.parametrize(
    ("content_type", "payload", "status"),
    [
        ("text/plain", b"hello there", 415),
        ("multipart/form-data; boundary=x", b"--x--", 415),
        ("application/json", b"hello there", 400),
        # JSON labelled as a form or as text is what any web page may post without asking:
        # refused, never read as JSON (tests/test_cross_site.py)
        (
            "application/x-www-form-urlencoded",
            b'{"messages":[{"role":"user","content":"hi"}]}',
            415,
        ),
        ("text/plain", b'{"messages":[{"role":"user","content":"hi"}]}', 415),
        ("application/json", b'{"messages":[{"role":"user","content":"hi"}]}', 200),
    ],
)
async def test_content_types(
    hub: RunningServer, content_type: str, payload: bytes, status: int
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{hub.url}/api/chat", data=payload, headers={"content-type": content_type}
        ) as response,
    ):
        assert response.status == status
        if status != 200:
            assert "error" in await response.json()


async def test_tools_are_mounted_only_for_a_tool_capable_model(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("gemma:2b", ("completion",))]
    server = await start_hub(ollama_host=fake_ollama.url)
    await chat(server, body("hi"))
    names = [t["function"]["name"] for t in fake_ollama.requests[-1]["tools"]]
    assert set(names) == WEB_BUILTINS
    await chat(server, body("hi"), {c.H_MODEL_PROVIDER: "ollama", c.H_MODEL_ID: "gemma:2b"})
    assert fake_ollama.requests[-1]["model"] == "gemma:2b"
    assert not fake_ollama.requests[-1].get("tools")


async def test_model_choice_order_header_then_saved_then_default(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [FakeModel("qwen3:latest"), FakeModel("llama3.2:latest")]
    server = await start_hub(ollama_host=fake_ollama.url)
    auth = owner_headers(server)
    await chat(server, body("hi"), auth)
    assert fake_ollama.requests[-1]["model"] == "qwen3:latest"
    async with (
        aiohttp.ClientSession() as http,
        http.put(
            f"{server.url}/api/model",
            json={"provider": "ollama", "id": "llama3.2:latest"},
            headers=auth,
        ) as response,
    ):
        assert response.status == 200
    await chat(server, body("hi"), auth)
    assert fake_ollama.requests[-1]["model"] == "llama3.2:latest"
    await chat(
        server, body("hi"), {**auth, c.H_MODEL_PROVIDER: "ollama", c.H_MODEL_ID: "qwen3:latest"}
    )
    assert fake_ollama.requests[-1]["model"] == "qwen3:latest"
    await chat(server, body("hi"))  # anonymous: no saved choice
    assert fake_ollama.requests[-1]["model"] == "qwen3:latest"


async def test_header_api_key_is_never_logged_or_stored(
    start_hub: StartHub, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    # The header's base URL is on loopback: allowed by name, as an owner would allow a host.
    hub = await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=["127.0.0.1"])
    secret = "sk-test-DO-NOT-LEAK-123456"
    caplog.set_level(logging.DEBUG)
    transcript = await chat(
        hub,
        body("hi"),
        {
            c.H_MODEL_PROVIDER: "custom",
            c.H_MODEL_ID: "gpt-x",
            c.H_MODEL_BASE_URL: f"{fake_ollama.url}/v1",
            c.H_MODEL_API_KEY: secret,
        },
    )
    assert transcript.of_type(c.EV_ERROR), "the fake serves no OpenAI API: an error event"
    assert secret not in caplog.text
    assert secret not in str(transcript.events)
    hub.hub.db.conn.execute("PRAGMA wal_checkpoint(FULL)")
    for path in hub.hub.settings.home.iterdir():
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path.name


async def test_malformed_additional_fields_is_a_400(hub: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{hub.url}/api/chat",
            json=body("hi"),
            headers={
                c.H_MODEL_PROVIDER: "openai",
                c.H_MODEL_ID: "x",
                c.H_MODEL_ADDITIONAL_FIELDS: "{oops",
            },
        ) as response,
    ):
        assert response.status == 400
        assert "not JSON" in (await response.json())["error"]
