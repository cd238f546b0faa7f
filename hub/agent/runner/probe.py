"""A short real decode in a fresh runner: what ``tiny-hub doctor`` runs to show the embedded
model works on this machine, and how fast."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from hub.agent.runner.process import Generation, RunnerError, RunnerExited, RunnerSpec
from hub.agent.runner.supervisor import RunnerSupervisor

# About 90 tokens: long enough that llama.cpp takes its batched matrix path (a one-token
# prompt runs even on a build whose batched kernels use instructions the CPU lacks).
PROBE_PROMPT = (
    "You are checking that a small language model runs on this computer. Read this short "
    "note and answer in one sentence. The note: the kitchen light is on, the front door is "
    "locked, the garden sensor reports dry soil, and the weather tomorrow is sunny with a "
    "light breeze from the west. Which of these needs attention first, and why?"
)
PROBE_TOKENS = 32


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str
    fix: str = ""
    tokens_per_s: float = 0.0
    prompt_tokens: int = 0
    first_token_ms: float = 0.0
    system_info: str = ""


async def decode_probe(spec: RunnerSpec, max_tokens: int = PROBE_TOKENS) -> ProbeResult:
    """Start a runner, decode once, stop it; a crash is a failed result, never an exception.
    The prompt cache is off: the prompt must be read, through llama.cpp's batched kernels."""
    runner = RunnerSupervisor(replace(spec, cache_mb=0, cache_dir=""), keep_alive_s=-1)
    usage = Generation()
    started = time.perf_counter()
    first = last = 0.0
    try:
        messages = [{"role": "user", "content": PROBE_PROMPT}]
        async for _ in runner.generate(messages, max_tokens, {"temperature": 0.0}, usage):
            last = time.perf_counter()
            first = first or last
    except RunnerExited as exc:
        return ProbeResult(False, exc.what, exc.fix)
    except RunnerError as exc:
        return ProbeResult(False, str(exc))
    finally:
        info = runner.system_info
        threads = runner.threads
        await runner.close()
    if usage.completion_tokens == 0:
        return ProbeResult(False, "the runner decoded nothing", system_info=info)
    rate = (usage.completion_tokens - 1) / (last - first) if last > first else 0.0
    return ProbeResult(
        True,
        f"{usage.completion_tokens} tokens at {rate:.1f} tok/s after a "
        f"{usage.prompt_tokens}-token prompt ({threads} thread(s)"
        + (", the idle cores)" if not spec.threads else ")"),
        tokens_per_s=rate,
        prompt_tokens=usage.prompt_tokens,
        first_token_ms=(first - started) * 1000,
        system_info=info,
    )
