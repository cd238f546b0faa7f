"""How well the offline agent uses the hub's real tools: 34 requests through ``POST /api/chat``.

Each request runs in a fresh conversation, as the owner, in a throwaway hub whose Flipper is the
byte-faithful emulator on a pty; the other devices (Nicla boards, webcam) are absent, so their
tools answer that they are not connected. Three facts are learned before the run, for the
questions that the memory pre-load (or ``recall``) answers. The set covers memory, the Flipper,
devices, tinys, chit-chat that needs no tool, and requests for tools the hub does not have; it
is kept out of the prompts the protocol was tuned on.

Scored per request, by these rules:

- **right tool**: the first tool called is one the case accepts, or nothing was called where
  the case accepts no call;
- **valid arguments**: of the calls made, the share whose input is valid for the called tool's
  JSON schema (as mounted in that hub);
- **no spurious call**: of the cases that need no tool, the share where none was called;
- **answer**: the final text is not empty, holds no raw call (``<tool_call>``, a JSON object),
  and, where the case names words, contains one of them (case-insensitive).

Runs on the embedded models (``qwen`` = Qwen2.5-Coder-1.5B, needs the agent-model extra, with
the call grammar; ``qwen_lenient``: the same model with ``embedded.call_grammar = off``, the
reply read leniently; ``smollm2`` with the protocol forced on) and on the fake Ollama as a
control (scripted with each case's right call, so it checks the scoring and the hub's tool loop,
not a model). Also: the decode rate of each embedded model (a fresh runner, 48 tokens) and the
seconds per turn.

The protocol (which tools are offered, their descriptions, the grammar, asking again for a call
described in words) was tuned on ``TUNING_CASES``, other requests with other seeded facts;
``TINY_HUB_EVAL_SET=tuning`` runs those instead of the evaluation set.

``python -m scripts.bench_agent_eval [runs] [qwen,qwen_lenient,smollm2,control]`` prints the
rows (``TINY_HUB_EVAL_MODELS`` chooses them for ``scripts/bench``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema

from harness.machine import drivers_with_machine_off
from scripts.bench_common import BenchmarkFailed, owner_headers, percentile, running_hub
from scripts.bench_llama_server import Recorded, recording, replay, threads_for_peer
from scripts.bench_rows import Row, run_alone

NONE = ""  # "no tool" in a case's accepted set
SEEDED_FACTS = (
    "The user's dog is called Rex.",
    "The user works as a nurse.",
    "The user's favourite colour is green.",
)
MAX_TOKENS = 160
SUMS = (NONE, "calculate")
WARM_UP_S: list[float] = []  # each eval hub's warm-up, as a started hub does it


@dataclass(frozen=True)
class Case:
    request: str
    accepted: tuple[str, ...]  # tool names; NONE for "no call"
    words: tuple[str, ...] = ()  # one of them in the answer (empty: any real answer)
    control_args: dict[str, Any] = field(default_factory=dict)  # the right call, for the control


CASES: tuple[Case, ...] = (
    Case("remember that my sister is called Ana", ("learn",), ("Ana",), {"fact": "Sister: Ana"}),
    Case("please note that I'm allergic to peanuts", ("learn",), ("peanut",), {"fact": "peanuts"}),
    Case(
        "keep in mind that my birthday is on March 3rd",
        ("learn",),
        ("March", "birthday"),
        {"fact": "Birthday: March 3rd"},
    ),
    Case(
        "I moved to Lisbon last month, remember that",
        ("learn",),
        ("Lisbon",),
        {"fact": "Lives in Lisbon"},
    ),
    Case(
        "from now on, know that I prefer tea over coffee",
        ("learn",),
        ("tea",),
        {"fact": "Prefers tea over coffee"},
    ),
    Case("what's my dog's name?", (NONE, "recall"), ("Rex",)),
    Case("what do I do for work?", (NONE, "recall"), ("nurse",)),
    Case("what's my favourite colour?", (NONE, "recall"), ("green",)),
    Case(
        "search your memory for anything about my job",
        ("recall",),
        ("nurse",),
        {"query": "job"},
    ),
    Case(
        "forget everything you know about me",
        ("unlearn",),
        ("forg", "delet", "remov", "clear", "confirm"),
        {"scope": "all"},
    ),
    Case("is my Flipper charged?", ("flipper_status",), ("87",)),
    Case("what firmware is my Flipper running?", ("flipper_status",), ("1.4.3",)),
    Case("what's the name of my Flipper?", ("flipper_status",), ("Unyana",)),
    Case(
        "list the files in /ext/infrared on my Flipper",
        ("flipper_files",),
        ("tv.ir",),
        {"action": "list", "path": "/ext/infrared"},
    ),
    Case("make my Flipper beep so I can find it", ("flipper_find",), ("beep", "blink", "vibrat")),
    Case(
        "listen for infrared signals with the Flipper for 2 seconds",
        ("flipper_listen",),
        ("decod", "infrared", "IR", "signal"),
        {"kind": "ir", "seconds": 2},
    ),
    Case("which of my devices are connected to you?", ("use_device",), ("device",)),
    Case("take a photo with my necklace camera", ("nicla_take_photo",), ("not", "connect")),
    Case("what's the battery of my Nicla Vision?", ("nicla_status",), ("not", "connect")),
    Case("what wake words did my voice recorder hear?", ("nicla_voice_wakes",)),
    Case("take a picture with the webcam", ("camera_photo",), ("camera", "webcam")),
    Case(
        "create a new tiny called Chef that helps with recipes",
        ("create_ai",),
        ("Chef",),
        {"name": "Chef", "systemPrompt": "You help with recipes."},
    ),
    Case("list the tinys I can talk to", ("list_tiny",), ("tiny",)),
    Case("show me the tiny named tiny", ("get_tiny",), ("tiny",), {"name": "tiny"}),
    Case("hello!", (NONE,)),
    Case("tell me a joke", (NONE,)),
    # Worked out by the calculator the hub offers, or answered directly: both right.
    Case("what is 12 times 7?", SUMS, ("84",)),
    Case("how are you today?", (NONE,)),
    Case("translate 'good morning' to Spanish", (NONE,), ("buenos",)),
    Case("write a haiku about rain", (NONE,)),
    Case("book me a flight to Paris", (NONE,)),
    Case("turn off the living room lights", (NONE,)),
    Case("send an email to my boss saying I'm late", (NONE,)),
    Case("order a pizza for me", (NONE,)),
)


# For tuning only: never scored in scripts/bench.
TUNING_FACTS = (
    "The user's cat is called Miso.",
    "The user lives in Porto.",
    "The user plays the cello.",
)
TUNING_CASES: tuple[Case, ...] = (
    Case("don't forget that my brother's name is Tom", ("learn",), ("Tom",)),
    Case("I'm vegetarian, store that about me", ("learn",), ("vegetarian",)),
    Case("jot down that my car is a blue Fiat", ("learn",), ("Fiat",)),
    Case("where do I live?", (NONE, "recall"), ("Porto",)),
    Case("look through what you know about my cat", ("recall",), ("Miso",)),
    Case("delete all my memories", ("unlearn",)),
    Case("wipe everything you've learned about me", ("unlearn",)),
    Case("how much battery does the Flipper have left?", ("flipper_status",), ("87",)),
    Case("show me what's in /ext/subghz on the Flipper", ("flipper_files",)),
    Case("I lost my flipper, help me find it", ("flipper_find",)),
    Case("scan for sub-ghz signals for 3 seconds with the flipper", ("flipper_listen",)),
    Case("snap a picture with the camera around my neck", ("nicla_take_photo",)),
    Case("record a short video with the Nicla Vision", ("nicla_take_video",)),
    Case("use this computer's camera to take a photo", ("camera_photo",)),
    Case("make a tiny named Coach that motivates me to run", ("create_ai",), ("Coach",)),
    Case("what tinys are on this hub?", ("list_tiny",)),
    Case("good morning", (NONE,)),
    Case("what's the capital of France?", (NONE,), ("Paris",)),
    Case("give me three tips for sleeping better", (NONE,)),
    Case("call my mom", (NONE,)),
    Case("set the thermostat to 21 degrees", (NONE,)),
    Case("what's 15% of 80?", SUMS, ("12",)),
    Case("unlock the front door", (NONE,)),
    Case("what's the weather like in Berlin right now?", (NONE,)),
)


def chosen_set() -> tuple[tuple[Case, ...], tuple[str, ...]]:
    """The requests and seeded facts to run: the evaluation set unless tuning is asked for."""
    if os.environ.get("TINY_HUB_EVAL_SET", "") == "tuning":
        return TUNING_CASES, TUNING_FACTS
    return CASES, SEEDED_FACTS


@dataclass
class Outcome:
    case: Case
    calls: list[tuple[str, dict[str, Any]]]
    text: str
    seconds: float
    errors: list[str]
    prompt_tokens: int = 0  # every generation's prompt, summed over the turn
    prompt_read: int = 0  # of those, the tokens the runner read (the rest it had kept)

    @property
    def right_tool(self) -> bool:
        first = self.calls[0][0] if self.calls else NONE
        return first in self.case.accepted

    @property
    def answer_ok(self) -> bool:
        text = self.text.strip()
        if not text or "<tool_call>" in text or text.startswith("{"):
            return False
        return not self.case.words or any(w.lower() in text.lower() for w in self.case.words)


async def chat(http: aiohttp.ClientSession, server: Any, case: Case) -> Outcome:
    """One request as a fresh conversation; the calls made, the final text, the wall time."""
    from hub import contracts as c

    body = {"messages": [{"role": "user", "content": case.request}]}
    transcript, seconds, _ = await post_chat(
        http, server.url, body, owner_headers(server), case.request
    )
    calls = [
        (str(e["toolCall"]["name"]), dict(e["toolCall"].get("input") or {}))
        for e in transcript.of_type(c.EV_BEFORE_TOOL)
    ]
    errors = [str(e["error"]) for e in transcript.of_type(c.EV_ERROR)]
    metadata = transcript.of_type(c.EV_METADATA)
    prompt = sum(int(e["usage"]["inputTokens"]) for e in metadata)
    read = sum(int(e["metrics"].get("promptTokensRead", 0)) for e in metadata)
    return Outcome(case, calls, final_text(transcript), seconds, errors, prompt, read)


async def post_chat(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    what: str,
    timed: bool = False,
) -> tuple[Any, float, float]:
    """One ``POST /api/chat``, checked to answer 200 and end with [DONE]: its transcript, its
    wall time and when it was sent (``perf_counter``); ``timed``: each event's arrival kept."""
    from harness.sse import read_sse, read_sse_timed

    started = time.perf_counter()
    async with http.post(f"{url}/api/chat", json=body, headers=headers) as response:
        if response.status != 200:
            raise BenchmarkFailed(f"{what!r}: HTTP {response.status} {await response.text()}")
        transcript = await (read_sse_timed if timed else read_sse)(response)
    seconds = time.perf_counter() - started
    if not transcript.done:
        raise BenchmarkFailed(f"{what!r}: the stream did not end with [DONE]")
    return transcript, seconds, started


def final_text(transcript: Any) -> str:
    """The text after the last tool result (the answer), or all of it when no tool ran."""
    from hub import contracts as c

    text, seen_tool = "", False
    for event in transcript.events:
        if event.get("type") == c.EV_AFTER_TOOL:
            text, seen_tool = "", True
        elif c.DELTA_TEXT in event:
            text += str(event[c.DELTA_TEXT])
    return text if seen_tool or text else transcript.text


def schemas(server: Any) -> dict[str, dict[str, Any]]:
    """The mounted tools' input schemas, as the owner's turn mounts them."""
    from hub.agent.tools import mount_tools
    from hub.agent.tools.context import ToolContext

    hub = server.hub
    mounted = mount_tools(ToolContext(hub, hub.owner, hub.tinys.get("tiny")))
    return {t.tool_name: dict(t.tool_spec["inputSchema"]["json"]) for t in mounted.tools}


@contextlib.asynccontextmanager
async def eval_hub(
    facts: Sequence[str] | None = None, state: Any = None, **overrides: Any
) -> AsyncIterator[Any]:
    """A throwaway hub with the emulated Flipper online and the seeded facts learned (``facts``;
    by default the chosen set's); ``state``: the emulator's ``FlipperState``, for a caller that
    changes what the device reports as it runs."""
    from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
    from hub.agent.warmup import get_ready, read_ahead

    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / "flipper"
        device = FlipperEmulator(state if state is not None else FlipperState(), link=link)
        device.start()
        try:
            async with running_hub(
                drivers=drivers_with_machine_off({"flipper": {"port": str(link)}}),
                embedded_warm_at_start=False,
                **overrides,
            ) as server:
                await flipper_online(server)
                for fact in chosen_set()[1] if facts is None else facts:
                    server.hub.memory.learn(server.hub.owner.id, fact)
                # As a started hub does (here once the facts are in, so the wait is measured):
                # ready, then the other families read in idle time beside the turns.
                started = time.perf_counter()
                await get_ready(server.hub)
                WARM_UP_S.append(time.perf_counter() - started)
                ahead = asyncio.create_task(read_ahead(server.hub))
                try:
                    yield server
                finally:
                    ahead.cancel()
        finally:
            device.stop()


async def flipper_online(server: Any, wait_s: float = 30.0) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if any(r["status"] == "online" for r in server.hub.drivers.records()):
            return
        await asyncio.sleep(0.05)
    raise BenchmarkFailed("the emulated Flipper did not come online")


async def run_cases(
    server: Any, cases: Sequence[Case], recorded: Recorded | None = None
) -> list[Outcome]:
    outcomes = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=900)) as http:
        for number, case in enumerate(cases):
            if recorded is not None:
                recorded.turn = number
            outcome = await chat(http, server, case)
            log_outcome(outcome)
            outcomes.append(outcome)
    return outcomes


def log_outcome(o: Outcome) -> None:
    calls = ", ".join(f"{name}{args}" for name, args in o.calls) or "-"
    marks = f"tool={'ok' if o.right_tool else 'NO'} answer={'ok' if o.answer_ok else 'NO'}"
    print(
        f"  {o.seconds:6.1f}s {o.prompt_read:5d}/{o.prompt_tokens:<5d} {marks} "
        f"{o.case.request!r} calls: {calls} -> {o.text[:120]!r}"
        + (f" errors: {o.errors}" if o.errors else ""),
        file=sys.stderr,
        flush=True,
    )


async def embedded_outcomes(
    key: str, grammar: str = "on", peer: bool = False
) -> tuple[list[Outcome], dict[str, dict[str, Any]], dict[int, float]]:
    """The cases on an embedded model; with ``peer``, also the seconds llama-cpp-python's own
    server takes for the same generations, replayed once the hub's runner has stopped."""
    with recording() as recorded:
        async with eval_hub(
            model_provider="embedded",
            embedded_model=key,
            embedded_tools="on",
            embedded_call_grammar=grammar,
            model_max_tokens=MAX_TOKENS,
        ) as server:
            outcomes = await run_cases(server, chosen_set()[0], recorded)
            tool_schemas = schemas(server)
            if not peer:
                return outcomes, tool_schemas, {}
            spec = server.hub.models.embedded_runner().spec
            await server.hub.models.close()  # the peer runs alone
            print("offline agent eval: the same generations on llama_cpp.server", file=sys.stderr)
            peer_s = await asyncio.to_thread(
                replay,
                recorded,
                spec.model_path,
                spec.context,
                threads_for_peer(spec.threads),
                spec.cache_mb << 20,
            )
            return outcomes, tool_schemas, peer_s


async def control_outcomes() -> tuple[list[Outcome], dict[str, dict[str, Any]]]:
    """The fake Ollama, scripted with each case's right call and an answer in its words."""
    from fakes.ollama import FakeOllama, Reply

    fake = FakeOllama()
    await fake.start()
    try:
        async with eval_hub(ollama_host=fake.url, model_max_tokens=MAX_TOKENS) as server:
            outcomes = []
            async with aiohttp.ClientSession() as http:
                for case in chosen_set()[0]:
                    answer = Reply(chunks=[f"Here you are: {' '.join(case.words) or 'done'}."])
                    tool = case.accepted[0]
                    if tool:
                        call = {"function": {"name": tool, "arguments": case.control_args}}
                        fake.script(Reply(chunks=[], tool_calls=[call]), answer)
                    else:
                        fake.script(answer)
                    outcomes.append(await chat(http, server, case))
            return outcomes, schemas(server)
    finally:
        await fake.stop()


def valid_share(outcomes: Sequence[Outcome], tool_schemas: dict[str, dict[str, Any]]) -> float:
    calls = [call for o in outcomes for call in o.calls]
    if not calls:
        return 1.0
    valid = 0
    for name, arguments in calls:
        schema = tool_schemas.get(name)
        if schema is not None and not list(
            jsonschema.Draft202012Validator(schema).iter_errors(arguments)
        ):
            valid += 1
    return valid / len(calls)


def score_rows(label: str, outcomes: Sequence[Outcome], tool_schemas: dict[str, Any]) -> list[Row]:
    suffix = "" if label == "qwen" else f"_{label}"
    chit_chat = [o for o in outcomes if o.case.accepted == (NONE,)]
    how = f"{len(outcomes)} requests through POST /api/chat ({label})"
    return [
        (f"offline_agent_right_tool{suffix}", share(o.right_tool for o in outcomes), "share", how),
        (f"offline_agent_valid_args{suffix}", valid_share(outcomes, tool_schemas), "share", how),
        (
            f"offline_agent_no_spurious_call{suffix}",
            share(not o.calls for o in chit_chat),
            "share",
            f"{len(chit_chat)} requests that need no tool ({label})",
        ),
        (f"offline_agent_answer_ok{suffix}", share(o.answer_ok for o in outcomes), "share", how),
        (
            f"offline_agent_turn_s{suffix}",
            statistics.median(o.seconds for o in outcomes),
            "s",
            f"median wall time of a turn, {label}",
        ),
        (
            f"offline_agent_turn_p90_s{suffix}",
            percentile([o.seconds for o in outcomes], 0.9),
            "s",
            f"90th percentile of a turn's wall time, {label}",
        ),
        (
            f"offline_agent_speaks_to_person{suffix}",
            share(speaks_to_person(o.text) for o in outcomes if o.text.strip()),
            "share",
            f"answers that do not speak of 'the user' or 'the tool' ({label})",
        ),
    ]


def prompt_rows(label: str, outcomes: Sequence[Outcome]) -> list[Row]:
    """What the runner read of each turn's prompts, beside their whole length."""
    suffix = "" if label == "qwen" else f"_{label}"
    return [
        (
            f"offline_agent_prompt_tokens_evaluated{suffix}",
            statistics.median(o.prompt_read for o in outcomes),
            "tokens",
            f"median per turn of the prompt tokens the runner read ({label})",
        ),
        (
            f"offline_agent_prompt_tokens{suffix}",
            statistics.median(o.prompt_tokens for o in outcomes),
            "tokens",
            f"median per turn of every generation's prompt, summed ({label})",
        ),
        (
            f"offline_agent_warm_up_s{suffix}",
            WARM_UP_S[-1],
            "s",
            f"start: the model loaded and the prompts' beginnings read ({label})",
        ),
    ]


def peer_rows(outcomes: Sequence[Outcome], peer_s: dict[int, float]) -> list[Row]:
    """The hub's turns against llama-cpp-python's server doing the same generations."""
    if len(peer_s) != len(outcomes):
        raise BenchmarkFailed(f"the peer replayed {len(peer_s)} of {len(outcomes)} turns")
    hub_total = sum(o.seconds for o in outcomes)
    peer_total = sum(peer_s.values())
    return [
        (
            "offline_agent_peer_turn_s",
            statistics.median(peer_s.values()),
            "s",
            "median per turn: llama_cpp.server (its RAM prompt cache) replaying the runner's "
            "requests for the same turns",
        ),
        (
            "offline_agent_vs_peer",
            hub_total / peer_total,
            "ratio",
            "the hub's whole turns (tools, memory and HTTP included) / the server's time for "
            "the same generations, summed over the turns",
        ),
    ]


def speaks_to_person(text: str) -> bool:
    lowered = text.lower()
    return "the user" not in lowered and not lowered.startswith("the tool")


def share(flags: Any) -> float:
    values = [bool(f) for f in flags]
    return sum(values) / len(values)


async def decode_rate(key: str) -> float:
    """A fresh runner's decode rate on this machine (the doctor's probe, 48 tokens)."""
    from hub.agent.models import embedded_spec
    from hub.agent.runner.probe import decode_probe
    from hub.config import load_settings

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(home=Path(tmp), environ={}, overrides={"embedded_model": key})
        result = await decode_probe(embedded_spec(settings), max_tokens=48)
    if not result.ok:
        raise BenchmarkFailed(f"decode probe on {key}: {result.detail}")
    return result.tokens_per_s


async def measure(runs: int, labels: Sequence[str]) -> list[Row]:
    keys = {
        "qwen": "qwen2.5-coder-1.5b",
        "qwen_lenient": "qwen2.5-coder-1.5b",
        "smollm2": "smollm2",
    }
    rows: list[Row] = []
    for label in labels:
        print(f"offline agent eval: {label}", file=sys.stderr, flush=True)
        if label == "control":
            outcomes, tool_schemas = await control_outcomes()
            rows += score_rows(label, outcomes, tool_schemas)
            continue
        rates = [await decode_rate(keys[label]) for _ in range(runs)]
        grammar = "off" if label.endswith("_lenient") else "on"
        peer = label == "qwen" and os.environ.get("TINY_HUB_EVAL_PEER", "on") != "off"
        outcomes, tool_schemas, peer_s = await embedded_outcomes(keys[label], grammar, peer)
        rows += score_rows(label, outcomes, tool_schemas) + prompt_rows(label, outcomes)
        if peer:
            rows += peer_rows(outcomes, peer_s)
        suffix = "" if label == "qwen" else f"_{label}"
        rows.append(
            (
                f"offline_agent_decode_tok_s{suffix}",
                statistics.median(rates),
                "tok/s",
                f"fresh runner, 48 tokens, median of {runs} ({label})",
            )
        )
    return rows


def runnable_labels(labels: Sequence[str] | None, variable: str, default: str) -> list[str]:
    """``labels``, or those the environment ``variable`` names (``default`` when unset), less
    qwen's when the agent-model extra is not installed."""
    from hub.agent import bundled_models

    if labels is None:
        labels = [label for label in os.environ.get(variable, default).split(",") if label]
    if not bundled_models.installed(bundled_models.QWEN_CODER_1_5B):
        print(f"{variable}: qwen skipped (the agent-model extra is not installed)")
        return [label for label in labels if not label.startswith("qwen")]
    return list(labels)


def bench(runs: int, labels: Sequence[str] | None = None) -> list[Row]:
    chosen = runnable_labels(labels, "TINY_HUB_EVAL_MODELS", "qwen,smollm2,control")
    return asyncio.run(measure(runs, chosen))


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = args[1].split(",") if len(args) > 1 else None
    raise SystemExit(run_alone(lambda runs: bench(runs, chosen), args[:1], 1))
