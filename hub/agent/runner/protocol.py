"""The lines a model runner and the hub exchange: one JSON object per line, both ways.

The hub writes requests to the runner's stdin; the runner writes events to its stdout:

- ``{"op": "generate", "id", "messages", "max_tokens", "sampling"}`` — decode a chat reply;
  optional ``tools`` (OpenAI-style function list) are rendered by the model's own chat template,
  or, when the template has no place for them, ``tools_prompt`` (the hub's rendering) joins the
  system message; optional ``grammar`` (GBNF) limits what may be decoded; optional
  ``constrain`` (true) limits the reply to an answer or one well-formed call to an offered tool,
  and ``must_call`` (a tool's name) to a call to that tool (see ``call_grammar``);
- ``{"op": "warm", ...}`` — the fields of ``generate``: read the prompt and keep its state in
  the prompt cache, decode nothing (prompts sent later that begin the same are not read again);
- ``{"op": "cancel", "id"}`` — stop that generation now (a stale id is ignored);
- ``{"ev": "ready", "model", "load_s", "threads", "cache_bytes", "system_info"}`` — loaded,
  once; ``cache_bytes`` is the prompt cache's capacity;
- ``{"ev": "text", "id", "text", "n"}`` — ``n`` decoded tokens' text;
- ``{"ev": "done", "id", "stop", "prompt_tokens", "prompt_evaluated", "completion_tokens",
  "seconds", "cache"}`` — ``prompt_evaluated``: the prompt's tokens really read (the rest came
  from the cache); ``cache``: the prompt cache's entries, bytes used, hits and misses;
- ``{"ev": "error", "id", "kind", "message"}`` — ``kind`` is ``context_overflow`` or ``error``.

This module imports nothing heavy: the runner imports it before llama.cpp.
"""

from __future__ import annotations

import json
from typing import Any

OP_GENERATE = "generate"
OP_WARM = "warm"
OP_CANCEL = "cancel"

FIELD_TOOLS = "tools"
FIELD_TOOLS_PROMPT = "tools_prompt"
FIELD_GRAMMAR = "grammar"
FIELD_CONSTRAIN = "constrain"
FIELD_MUST_CALL = "must_call"

EV_READY = "ready"
EV_TEXT = "text"
EV_DONE = "done"
EV_ERROR = "error"

ERROR_CONTEXT_OVERFLOW = "context_overflow"
ERROR_OTHER = "error"

STOP_END = "end_turn"
STOP_MAX_TOKENS = "max_tokens"
STOP_CANCELLED = "cancelled"

# The runner's test-only fault hook: "<fault>" strikes at the first generation,
# "<fault>@start" before the model loads. Faults: illegal-instruction, segfault, abort.
FAULT_ENV = "TINY_HUB_RUNNER_FAULT"


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """One line → its object; a line that is not a JSON object raises ValueError."""
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value
