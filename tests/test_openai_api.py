"""``/v1`` checked by the official ``openai`` package against a live hub on the fake Ollama.

The package is the client here: it builds the requests, parses every answer into its own types
and raises its own errors, so whatever it accepts, the apps built on it (Open WebUI, Continue,
the ``llm`` command) read the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.agent.sampling import Sampling, apply_sampling
from hub.api.server import RunningServer
from hub.mcp_server.clients import McpClients
from hub.openai_compat.chunks import ChunkFrames, Completion
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat

HELLO: list[Any] = [{"role": "user", "content": "hello"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def tool_call(name: str, **arguments: Any) -> Reply:
    return Reply(chunks=[], tool_calls=[{"function": {"name": name, "arguments": arguments}}])


@pytest.fixture
async def hub(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url)


ANONYMOUS = None


async def _no_authorization(request: httpx.Request) -> None:
    del request.headers["Authorization"]


def client_for(server: RunningServer, token: str | None) -> openai.AsyncOpenAI:
    """The package as an app would set it up; no retries, so every answer is the hub's first.
    ANONYMOUS: the package insists on sending a key, so its HTTP client drops the header."""
    if token is ANONYMOUS:
        return openai.AsyncOpenAI(
            base_url=f"{server.url}/v1",
            api_key="unused",
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(
                event_hooks={"request": [_no_authorization]}
            ),
        )
    return openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0)


def owner_token(server: RunningServer) -> str:
    return owner_headers(server)["Authorization"].removeprefix("Bearer ")


@pytest.fixture
async def owner(hub: RunningServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with client_for(hub, owner_token(hub)) as client:
        yield client


def member_token(server: RunningServer, name: str) -> str:
    identity = server.hub.identity
    return identity.issue_token(identity.add_user(name), "openai test")


# --- models ------------------------------------------------------------------------------------


async def test_models_are_the_default_tiny_and_the_callers_own(
    hub: RunningServer, owner: openai.AsyncOpenAI
) -> None:
    assert [m.id for m in (await owner.models.list()).data] == ["tiny"]
    hub.hub.tinys.create(hub.hub.owner, {"name": "chef", "tagline": "cooks"})
    models = (await owner.models.list()).data
    assert [m.id for m in models] == ["tiny", "tiny/chef"]
    assert {m.object for m in models} == {"model"} and models[1].owned_by == hub.hub.owner.login
    assert (await owner.models.retrieve("tiny/chef")).id == "tiny/chef"


async def test_a_member_sees_only_their_own_tinys(hub: RunningServer) -> None:
    tinys = hub.hub.tinys
    tinys.create(hub.hub.owner, {"name": "owners-public", "visibility": "public"})
    tinys.create(hub.hub.owner, {"name": "owners-secret", "visibility": "private"})
    bea_token = member_token(hub, "bea")
    bea = hub.hub.identity.resolve(bea_token)
    assert bea is not None
    tinys.create(bea, {"name": "beas-bot", "visibility": "private"})
    async with client_for(hub, bea_token) as client:
        assert [m.id for m in (await client.models.list()).data] == ["tiny", "tiny/beas-bot"]
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await client.models.retrieve("tiny/owners-secret")
        assert "private" in refused.value.message
    async with client_for(hub, owner_token(hub)) as client:
        listed = [m.id for m in (await client.models.list()).data]
    assert listed == ["tiny", "tiny/owners-secret", "tiny/owners-public"]
    async with client_for(hub, ANONYMOUS) as anonymous:
        assert [m.id for m in (await anonymous.models.list()).data] == ["tiny"]


async def test_a_named_client_token_acts_for_the_owner_until_it_is_removed(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    """A token the owner issued to a named client (as for the MCP server) opens /v1 as the
    owner; removing the client revokes it."""
    clients = McpClients(hub.hub.db)
    token = clients.add("editor")
    hub.hub.tinys.create(hub.hub.owner, {"name": "owners-secret", "visibility": "private"})
    fake_ollama.script(Reply(chunks=["Hi from the hub."]))
    async with client_for(hub, token) as editor:
        assert "tiny/owners-secret" in [m.id for m in (await editor.models.list()).data]
        done = await editor.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}]
        )
        assert done.choices[0].message.content == "Hi from the hub."
        assert [c.name for c in clients.list()] == ["editor"]
        assert clients.list()[0].last_used_at is not None
        assert clients.remove("editor")
        with pytest.raises(openai.AuthenticationError):
            await editor.models.list()


# --- completions -------------------------------------------------------------------------------


async def test_a_completion_with_usage(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["Hi", " there", "!"]))
    done = await owner.chat.completions.create(model="tiny", messages=HELLO)
    assert done.object == "chat.completion" and done.model == "tiny"
    assert done.choices[0].message.role == "assistant"
    assert done.choices[0].message.content == "Hi there!"
    assert done.choices[0].finish_reason == "stop"
    assert done.choices[0].message.tool_calls is None
    assert done.usage is not None and done.usage.completion_tokens == 3
    assert done.usage.prompt_tokens == fake_ollama_prompt_tokens(fake_ollama.requests[-1])
    assert done.usage.total_tokens == done.usage.prompt_tokens + 3


def fake_ollama_prompt_tokens(request: dict[str, Any]) -> int:
    """What the fake Ollama reports as ``prompt_eval_count`` for ``request``."""
    return sum(len(str(m.get("content", ""))) for m in request["messages"]) // 4 + 1


async def test_a_streamed_completion_with_usage_last(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["Hi", " there", "!"]))
    stream = await owner.chat.completions.create(
        model="tiny", messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hi there!"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 3
    assert all(c.usage is None for c in chunks[:-1])


async def test_a_stream_without_include_usage_has_none(
    hub: RunningServer, owner: openai.AsyncOpenAI
) -> None:
    stream = await owner.chat.completions.create(model="tiny", messages=HELLO, stream=True)
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None and c.choices for c in chunks)


async def test_the_same_turn_as_api_chat_reaches_the_model(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    """History, the client's system text, the tiny's prompt and the hub's tools: the model is
    asked exactly as /api/chat asks it, but for the app tools an OpenAI client cannot run."""
    history = [
        {"role": "developer", "content": "The user is called Ada."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello Ada"}]},
        {"role": "user", "content": [{"type": "text", "text": "what is my name?"}]},
    ]
    await owner.chat.completions.create(model="tiny", messages=history)
    through_v1 = fake_ollama.requests[-1]
    native = [{**m, "role": "system"} if m["role"] == "developer" else m for m in history]
    await post_chat(hub.url, {"messages": native}, owner_headers(hub))
    through_api_chat = fake_ollama.requests[-1]
    assert through_v1["messages"] == through_api_chat["messages"]
    assert "The user is called Ada." in through_v1["messages"][0]["content"]
    v1_tools = {t["function"]["name"] for t in through_v1["tools"]}
    chat_tools = {t["function"]["name"] for t in through_api_chat["tools"]}
    assert {"learn", "recall"} <= v1_tools
    assert chat_tools - v1_tools >= {"set_theme", "suggest_followups", "vibrate"}
    assert not v1_tools - chat_tools


async def test_the_hub_runs_learn_and_the_fact_is_in_learnings(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fact = "The user's cat is called Miso."
    fake_ollama.script(tool_call("learn", fact=fact), Reply(chunks=["Noted", ": Miso."]))
    done = await owner.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "remember my cat is Miso"}]
    )
    message = done.choices[0].message
    assert message.content == "Noted: Miso."
    assert message.tool_calls is None and done.choices[0].finish_reason == "stop"
    tool_answers = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Saved to memory" in tool_answers[0]["content"]
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/learnings", headers=owner_headers(hub)) as response,
    ):
        learned = [item["fact"] for item in (await response.json())["learnings"]]
    assert learned == [fact]
    # usage counts both model calls of the turn
    assert done.usage is not None and done.usage.completion_tokens == 2


async def test_a_client_tool_comes_back_as_tool_calls_and_the_answer_goes_on(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(tool_call("get_weather", city="Paris"))
    asked = [{"role": "user", "content": "weather in Paris?"}]
    first = await owner.chat.completions.create(model="tiny", messages=asked, tools=[WEATHER])
    offered = {t["function"]["name"] for t in fake_ollama.requests[-1]["tools"]}
    assert {"get_weather", "learn"} <= offered  # the client's beside the hub's
    assert first.choices[0].finish_reason == "tool_calls"
    calls = first.choices[0].message.tool_calls
    assert calls is not None and len(calls) == 1
    call = calls[0]
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert len(fake_ollama.requests) == 1, "the hub must not ask the model again"

    fake_ollama.script(Reply(chunks=["Sunny", " in Paris."]))
    answered = [
        *asked,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    second = await owner.chat.completions.create(model="tiny", messages=answered, tools=[WEATHER])
    assert second.choices[0].message.content == "Sunny in Paris."
    assert second.choices[0].finish_reason == "stop"
    sent = fake_ollama.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    assert "sunny, 21 C" in sent[3]["content"]


async def test_a_history_where_a_hub_tool_ran_is_taken_as_calls_and_answers(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    """An OpenAI client that keeps the calls of the hub's own tools (recorded elsewhere, or
    written by hand) sends them as any tool_calls: they reach the model as calls and answers,
    and the turn goes on from the person's last words."""
    fake_ollama.script(Reply(chunks=["Still 81%."]))
    call = {
        "id": "tooluse_1",
        "type": "function",
        "function": {"name": "recall", "arguments": json.dumps({"query": "flipper"})},
    }
    history = [
        {"role": "user", "content": "how charged is my Flipper?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "tooluse_1", "content": "battery 81%"},
        {"role": "assistant", "content": "81%."},
        {"role": "user", "content": "and now?"},
    ]
    answer = await owner.chat.completions.create(model="tiny", messages=history)
    assert answer.choices[0].message.content == "Still 81%."
    sent = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] != "system"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[1]["tool_calls"][0]["function"] == {
        "name": "recall",
        "arguments": {"query": "flipper"},
    }
    assert sent[2]["content"] == "battery 81%"


async def test_a_streamed_client_tool_call(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(tool_call("get_weather", city="Oslo"))
    stream = await owner.chat.completions.create(
        model="tiny", messages=HELLO, tools=[WEATHER], stream=True
    )
    chunks = [chunk async for chunk in stream]
    deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or []]
    assert len(deltas) == 1 and deltas[0].index == 0 and deltas[0].id
    assert deltas[0].function is not None and deltas[0].function.name == "get_weather"
    assert json.loads(deltas[0].function.arguments or "") == {"city": "Oslo"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_a_client_tool_takes_the_place_of_a_hub_tool_of_its_name(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    recall = {"type": "function", "function": {"name": "recall", "description": "my notes"}}
    fake_ollama.script(tool_call("recall", query="cats"))
    done = await owner.chat.completions.create(model="tiny", messages=HELLO, tools=[recall])
    named = [t for t in fake_ollama.requests[-1]["tools"] if t["function"]["name"] == "recall"]
    assert [t["function"]["description"] for t in named] == ["my notes"]
    calls = done.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "recall"
    # strands holds "memory-graph" and "memory_graph" for one name: the client's still wins
    graph = {"type": "function", "function": {"name": "memory-graph", "description": "mine"}}
    await owner.chat.completions.create(model="tiny", messages=HELLO, tools=[graph])
    offered = {t["function"]["name"] for t in fake_ollama.requests[-1]["tools"]}
    assert "memory-graph" in offered and "memory_graph" not in offered


async def test_tool_choice_none_offers_no_client_tool(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    await owner.chat.completions.create(
        model="tiny", messages=HELLO, tools=[WEATHER], tool_choice="none"
    )
    offered = {t["function"]["name"] for t in fake_ollama.requests[-1]["tools"]}
    assert "get_weather" not in offered and "learn" in offered


async def test_closing_the_stream_closes_the_models(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=[f"w{i} " for i in range(400)], delay_s=0.02))
    stream = await owner.chat.completions.create(model="tiny", messages=HELLO, stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    await stream.close()
    await until(lambda: fake_ollama.disconnects == 1, what="the fake Ollama sees its stream closed")
    assert fake_ollama.chunks_sent < 400


async def test_leaving_a_request_that_is_not_streamed_closes_the_models(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(first_delay_s=60.0))  # a long prompt evaluation
    asked = asyncio.create_task(owner.chat.completions.create(model="tiny", messages=HELLO))
    await asyncio.wait_for(fake_ollama.chat_seen.wait(), 30)
    asked.cancel()
    await until(lambda: fake_ollama.disconnects == 1, what="the fake Ollama sees its stream closed")
    assert asked.cancelled()


async def test_sampling_fields_reach_the_model(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    await owner.chat.completions.create(
        model="tiny", messages=HELLO, temperature=0.3, top_p=0.5, max_tokens=7, stop=["END"]
    )
    options = fake_ollama.requests[-1]["options"]
    assert options == {"temperature": 0.3, "top_p": 0.5, "num_predict": 7, "stop": ["END"]}
    await owner.chat.completions.create(model="tiny", messages=HELLO, max_completion_tokens=9)
    assert fake_ollama.requests[-1]["options"]["num_predict"] == 9


async def test_a_reply_cut_at_the_token_limit_finishes_with_length(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["a", "b"], done_reason="length"))
    done = await owner.chat.completions.create(model="tiny", messages=HELLO, max_tokens=2)
    assert done.choices[0].message.content == "ab"
    assert done.choices[0].finish_reason == "length"


async def test_text_of_two_model_calls_is_two_paragraphs(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(
        Reply(
            chunks=["Let me note that."],
            tool_calls=[
                {"function": {"name": "learn", "arguments": {"fact": "The user likes tea."}}}
            ],
        ),
        Reply(chunks=["Done."]),
    )
    done = await owner.chat.completions.create(model="tiny", messages=HELLO)
    assert done.choices[0].message.content == "Let me note that.\n\nDone."


def test_reasoning_is_reasoning_content_in_deltas_and_in_the_message() -> None:
    completion = Completion("tiny", frozenset())
    frames = ChunkFrames(completion, include_usage=False)
    events = [
        {"type": c.EV_MESSAGE_START},
        {"type": c.EV_BLOCK_DELTA, c.DELTA_REASONING: "The user greets me."},
        {"type": c.EV_BLOCK_DELTA, c.DELTA_TEXT: "Hello!"},
    ]
    chunks = [json.loads(frame) for event in events for frame in frames.of(event)]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "The user greets me."},
        {"content": "Hello!"},
    ]
    message = completion.response()["choices"][0]["message"]
    assert message["reasoning_content"] == "The user greets me." and message["content"] == "Hello!"


def test_sampling_goes_where_each_provider_reads_it() -> None:
    from strands.models.openai import OpenAIModel

    sampling = Sampling(temperature=0.1, top_p=0.9, max_tokens=5, stop=("END",))
    cloud = OpenAIModel(client_args={"api_key": "unused"}, model_id="m", params={"seed": 1})
    apply_sampling(cloud, sampling)
    assert cloud.get_config()["params"] == {
        "seed": 1,
        "temperature": 0.1,
        "top_p": 0.9,
        "max_tokens": 5,
        "stop": ["END"],
    }
    untouched = OpenAIModel(client_args={"api_key": "unused"}, model_id="m", params={"seed": 1})
    apply_sampling(untouched, Sampling())
    assert untouched.get_config()["params"] == {"seed": 1}


# --- failures ----------------------------------------------------------------------------------


async def test_a_model_error_mid_stream_is_raised_by_the_package(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(chunks=["Hel", "lo", "!"], error_after=2, error="out of memory"))
    stream = await owner.chat.completions.create(model="tiny", messages=HELLO, stream=True)
    seen: list[str] = []
    with pytest.raises(openai.APIError) as failed:
        async for chunk in stream:
            seen.append(chunk.choices[0].delta.content or "")
    assert "".join(seen) == "Hello"
    assert "out of memory" in failed.value.message


async def test_a_model_error_without_stream_is_a_502(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(Reply(http_status=500, error="llama runner process has terminated"))
    with pytest.raises(openai.InternalServerError) as failed:
        await owner.chat.completions.create(model="tiny", messages=HELLO)
    assert failed.value.status_code == 502
    assert "llama runner" in failed.value.message


async def test_the_turns_time_limit_is_a_504_or_an_error_in_the_stream(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, turn_timeout_s=1.0)
    fake_ollama.script(*[Reply(chunks=["never"], first_delay_s=3600) for _ in range(2)])
    async with client_for(server, owner_token(server)) as client:
        with pytest.raises(openai.APIStatusError) as whole:
            await client.chat.completions.create(model="tiny", messages=HELLO)
        stream = await client.chat.completions.create(model="tiny", messages=HELLO, stream=True)
        with pytest.raises(openai.APIError) as streamed:
            async for _ in stream:
                pass
    assert whole.value.status_code == 504
    assert isinstance(whole.value.body, dict)
    assert whole.value.body["message"] == streamed.value.message == "turn took longer than 1 s"
    await until(lambda: fake_ollama.disconnects == 2, what="both model streams to be closed")


async def test_an_unknown_model_is_a_404_naming_the_ones_there_are(
    owner: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        await owner.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert missing.value.code == "model_not_found" and "tiny/<name>" in missing.value.message
    with pytest.raises(openai.NotFoundError) as no_tiny:
        await owner.chat.completions.create(model="tiny/nobody", messages=HELLO)
    assert "no tiny named nobody" in no_tiny.value.message


CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("body", "param", "problem"),
    [
        ({"messages": HELLO}, "model", "model must be a string"),
        ({"model": "tiny", "messages": []}, "messages", "non-empty array"),
        ({"model": "tiny", "messages": HELLO, "n": 2}, "n", "n must be 1"),
        ({"model": "tiny", "messages": HELLO, "temperature": 3}, "temperature", "0 to 2"),
        ({"model": "tiny", "messages": HELLO, "max_tokens": 0}, "max_tokens", "at least 1"),
        ({"model": "tiny", "messages": HELLO, "stop": ["a"] * 5}, "stop", "at most 4"),
        ({"model": "tiny", "messages": HELLO, "stream": "yes"}, "stream", "true or false"),
        ({"model": "tiny", "messages": HELLO, "tools": [{"type": "x"}]}, "tools[0]", "function"),
        (
            {"model": "tiny", "messages": HELLO, "tools": [WEATHER, WEATHER]},
            "tools",
            "get_weather more than once",
        ),
        (
            {
                "model": "tiny",
                "messages": HELLO,
                "tools": [
                    WEATHER,
                    {**WEATHER, "function": {**WEATHER["function"], "name": "get-weather"}},
                ],
            },
            "tools",
            "'-' and '_' count as one",
        ),
        (
            {"model": "tiny", "messages": [{"role": "robot", "content": "x"}]},
            "messages[0]",
            "role is one of",
        ),
        (
            {"model": "tiny", "messages": [{"role": "assistant", "content": "x"}]},
            "messages",
            "role user or tool",
        ),
        (
            {
                "model": "tiny",
                "messages": [*HELLO, {"role": "assistant", "tool_calls": [CALL]}, *HELLO],
            },
            "messages",
            "not answered: f (call_1)",
        ),
        (
            {
                "model": "tiny",
                "messages": [
                    *HELLO,
                    {"role": "assistant", "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_2", "content": "x"},
                ],
            },
            "messages[2].tool_call_id",
            "call_1",
        ),
        (
            {
                "model": "tiny",
                "messages": [
                    *HELLO,
                    {
                        "role": "assistant",
                        "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "{oops"}}],
                    },
                ],
            },
            "messages[1].tool_calls[0].function.arguments",
            "JSON object",
        ),
        ({"model": "tiny", "messages": HELLO, "n": True}, "n", "n must be 1"),
        *(
            (
                {
                    "model": "tiny",
                    "messages": [
                        *HELLO,
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {**CALL, "function": {"name": "f", "arguments": arguments}}
                            ],
                        },
                    ],
                },
                "messages[1].tool_calls[0].function.arguments",
                problem,
            )
            for arguments, problem in (
                ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                ('{"a": NaN}', "NaN is not a JSON number"),
                ('{"a": -Infinity}', "-Infinity is not a JSON number"),
                ('{"a": 1e999}', "too large"),
                ('{"a": "\\ud800"}', "lone UTF-16 surrogate"),
                ('{"a": ' + "1" * 5000 + "}", "digits"),
            )
        ),
    ],
)
async def test_bad_bodies_are_400s_naming_the_field(
    hub: RunningServer, body: dict[str, Any], param: str, problem: str
) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{hub.url}/v1/chat/completions", json=body) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param and problem in error["message"]


async def test_an_empty_system_prompt_or_reply_is_left_out(
    hub: RunningServer, owner: openai.AsyncOpenAI, fake_ollama: FakeOllama
) -> None:
    history: list[Any] = [
        {"role": "system", "content": ""},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "still there?"},
    ]
    await owner.chat.completions.create(model="tiny", messages=history)
    sent = fake_ollama.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "hi"),
        ("user", "still there?"),
    ]


async def test_a_body_that_is_not_json_is_an_openai_error(hub: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{hub.url}/v1/chat/completions",
            data=b"{nope",
            headers={"content-type": "application/json"},
        ) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
    assert "not valid JSON" in error["message"] and error["type"] == "invalid_request_error"


# --- who may call ------------------------------------------------------------------------------


async def test_a_token_that_names_nobody_is_a_401(hub: RunningServer) -> None:
    async with client_for(hub, "tok-not-a-real-one") as client:
        with pytest.raises(openai.AuthenticationError) as refused:
            await client.chat.completions.create(model="tiny", messages=HELLO)
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
    assert refused.value.status_code == 401 and "invalid token" in refused.value.message


async def test_anonymous_on_this_machine_chats_and_gets_login_required_tools(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(tool_call("learn", fact="The user likes tea."), Reply(chunks=["ok"]))
    async with client_for(hub, ANONYMOUS) as anonymous:
        done = await anonymous.chat.completions.create(model="tiny", messages=HELLO)
    assert done.choices[0].message.content == "ok"
    tool_answers = [m for m in fake_ollama.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Login required" in tool_answers[0]["content"]


async def test_a_member_may_not_chat_with_someone_elses_private_tiny(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    hub.hub.tinys.create(hub.hub.owner, {"name": "diary", "visibility": "private"})
    async with client_for(hub, member_token(hub, "bea")) as bea:
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await bea.chat.completions.create(model="tiny/diary", messages=HELLO)
    assert refused.value.status_code == 403 and refused.value.type == "permission_error"
    assert not fake_ollama.requests


async def test_the_daily_allowance_is_spent_as_on_api_chat(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, anonymous_daily_chats=1)
    async with client_for(server, ANONYMOUS) as anonymous:
        await anonymous.chat.completions.create(model="tiny", messages=HELLO)
        with pytest.raises(openai.RateLimitError) as over:
            await anonymous.chat.completions.create(model="tiny", messages=HELLO)
    assert int(over.value.response.headers["Retry-After"]) > 0
    assert over.value.type == "rate_limit_error"
    assert len(fake_ollama.requests) == 1


# --- another client: the ``llm`` command -------------------------------------------------------


async def test_the_llm_command_chats_with_the_tiny(
    hub: RunningServer, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    """``llm`` (installed with the hub, which takes its SmolLM2 from it) as docs/openai.md sets
    it up: an extra OpenAI model with the hub's base URL and a stored key."""
    home = tmp_path / "llm"
    home.mkdir()
    model = {"model_id": "tiny", "model_name": "tiny", "api_base": f"{hub.url}/v1"}
    (home / "extra-openai-models.yaml").write_text(
        json.dumps([{**model, "api_key_name": "tiny-hub"}])  # JSON is YAML
    )
    (home / "keys.json").write_text(json.dumps({"tiny-hub": owner_token(hub)}))
    fake_ollama.script(Reply(chunks=["Hello", " from", " your", " tiny."]))
    llm = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("llm")),
        *("-m", "tiny", "--no-log", "hello"),
        env={**os.environ, "LLM_USER_PATH": str(home)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await llm.communicate()
    assert llm.returncode == 0, err.decode()
    assert out.decode().strip() == "Hello from your tiny."
    assert fake_ollama.requests[-1]["messages"][-1] == {"role": "user", "content": "hello"}
