"""The runner's grammar check on the sampled token decodes exactly what llama.cpp's grammar on
every candidate decodes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hub.agent.embedded import bundled_gguf

pytestmark = pytest.mark.slow

# A call the model would not write on its own: the check refuses many of its tokens.
CALL = (
    'root ::= "{\\"name\\": \\"" ("learn" | "recall") "\\", \\"arguments\\": '
    '{\\"fact\\": \\"" [^"\\n]{1,40} "\\"}}"'
)
IN_WORDS = "root ::= [^<{\\[` \\t\\n\\r] [^\\x00]*"
MESSAGES = [
    {"role": "system", "content": "Answer with a tool call."},
    {"role": "user", "content": "remember that my sister is called Ana"},
]


@pytest.fixture(scope="module")
def models() -> Iterator[tuple[Any, Any]]:
    from llama_cpp import Llama

    from hub.agent.runner.kept_llama import KeptLlama

    gguf = bundled_gguf()
    assert gguf is not None
    args: dict[str, Any] = {"model_path": str(gguf), "n_ctx": 512, "n_threads": 1}
    yield Llama(**args, verbose=False), KeptLlama(**args, verbose=False)


def decode(llama: Any, grammar: str, temperature: float) -> str:
    from llama_cpp.llama_grammar import LlamaGrammar

    reply = llama.create_chat_completion(
        messages=MESSAGES,
        max_tokens=40,
        temperature=temperature,
        repeat_penalty=1.1,
        seed=7,
        grammar=LlamaGrammar.from_string(grammar, verbose=False),
    )
    return str(reply["choices"][0]["message"]["content"])


@pytest.mark.parametrize("grammar", [CALL, IN_WORDS])
@pytest.mark.parametrize("temperature", [0.0, 0.2])
def test_the_same_reply_as_the_grammar_on_every_candidate(
    models: tuple[Any, Any], grammar: str, temperature: float
) -> None:
    library, kept = models
    expected = decode(library, grammar, temperature)
    assert decode(kept, grammar, temperature) == expected
    if grammar == CALL:
        call = json.loads(expected)
        assert call["name"] in ("learn", "recall") and call["arguments"]["fact"]


def test_only_refused_tokens_pay_for_the_whole_vocabulary(models: tuple[Any, Any]) -> None:
    from hub.agent.runner.checked_grammar import CheckedGrammarSampler

    _, kept = models
    reply = decode(kept, CALL, 0.0)
    sampler = kept._sampler
    assert isinstance(sampler, CheckedGrammarSampler)
    assert 0 < sampler.refusals < sampler.samples, (sampler.refusals, sampler.samples, reply)
