"""A request's sampling (temperature, top_p, a token limit, stop sequences) onto the strands
provider a turn uses.

Each provider keeps these under its own names: Ollama and Bedrock as config keys, the
OpenAI-compatible ones, Anthropic and Gemini in ``params`` with the names of their own APIs.
The embedded model takes the token limit only and keeps its own tuned sampling (a small model
calls tools reliably only at the temperature it is set to). The provider is told by its class
name, so an optional SDK is never imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strands.models import Model


@dataclass(frozen=True)
class Sampling:
    """What a request asks of the model's decoding; None (or no stops) leaves it as configured."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()

    def fields(self, names: tuple[str, str, str, str]) -> dict[str, Any]:
        """The fields that are set, under a provider's names for temperature, top_p, the
        token limit and the stop sequences, in that order ("": a field it takes elsewhere)."""
        values = (self.temperature, self.top_p, self.max_tokens, list(self.stop) or None)
        return {
            name: value
            for name, value in zip(names, values, strict=True)
            if name and value is not None
        }


def _as_config(names: tuple[str, str, str, str]) -> Callable[[Model, Sampling], None]:
    def apply(model: Model, sampling: Sampling) -> None:
        model.update_config(**sampling.fields(names))

    return apply


def _as_params(names: tuple[str, str, str, str]) -> Callable[[Model, Sampling], None]:
    def apply(model: Model, sampling: Sampling) -> None:
        params = dict(model.get_config().get("params") or {})  # type: ignore[attr-defined]
        model.update_config(params={**params, **sampling.fields(names)})

    return apply


def _embedded(model: Model, sampling: Sampling) -> None:
    if sampling.max_tokens is not None:
        model.update_config(max_tokens=sampling.max_tokens)


def _anthropic(model: Model, sampling: Sampling) -> None:
    _as_params(("temperature", "top_p", "", "stop_sequences"))(model, sampling)
    if sampling.max_tokens is not None:
        model.update_config(max_tokens=sampling.max_tokens)


_OLLAMA_NAMES = ("temperature", "top_p", "max_tokens", "stop_sequences")
BY_PROVIDER: dict[str, Callable[[Model, Sampling], None]] = {
    "OllamaModel": _as_config(_OLLAMA_NAMES),
    "BedrockModel": _as_config(_OLLAMA_NAMES),
    "OpenAIModel": _as_params(("temperature", "top_p", "max_tokens", "stop")),
    "GeminiModel": _as_params(("temperature", "top_p", "max_output_tokens", "stop_sequences")),
    "AnthropicModel": _anthropic,
    "EmbeddedModel": _embedded,
}


def apply_sampling(model: Model, sampling: Sampling) -> None:
    """Set what ``sampling`` asks on a freshly built ``model`` (each turn builds its own)."""
    if sampling == Sampling():
        return
    apply = BY_PROVIDER.get(type(model).__name__)
    if apply is not None:
        apply(model, sampling)
