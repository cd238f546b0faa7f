"""Grammar-limited sampling that asks the grammar about one token, not all of them.

llama-cpp-python puts the grammar in its sampler chain, so at every token llama.cpp checks
each of the vocabulary's entries against it (151,936 for Qwen2.5: about 25 ms a token on this
project's 2-core machine, as long as decoding the token itself on one core takes 100 ms).
llama.cpp's own tools sample the other way round (``common_sampler_sample``): the chain picks a
token from all the logits, the grammar checks that one token, and only when it refuses is the
grammar applied to the whole vocabulary and the token picked again. The tokens are the same;
the cost is paid only on a refusal. This module does that through the C API that
llama-cpp-python exposes, for the runner's :class:`~hub.agent.runner.kept_llama.KeptLlama`.

Imported by the runner process only (it imports llama.cpp).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import llama_cpp
import numpy as np


class CheckedGrammarSampler:
    """Samples with ``chain`` (llama-cpp-python's sampler without the grammar) and keeps the
    result inside ``grammar``; the same ``sample``/``accept`` shape ``Llama`` calls."""

    def __init__(self, chain: Any, grammar: Any, n_vocab: int) -> None:
        self.chain = chain  # llama_cpp._internals.LlamaSampler, which frees its chain
        self.grammar = grammar  # a llama_sampler_p this object owns
        self.n_vocab = n_vocab
        self._candidates = (llama_cpp.llama_token_data * n_vocab)()
        self._view = np.ctypeslib.as_array(self._candidates)
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self.samples = 0
        self.refusals = 0

    @classmethod
    def build(cls, chain: Any, vocab: Any, grammar: Any, n_vocab: int) -> CheckedGrammarSampler:
        """From llama-cpp-python's ``LlamaGrammar`` (its GBNF text and root rule)."""
        sampler = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        return cls(chain, sampler, n_vocab)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        self.samples += 1
        token = self._pick(ctx, idx, with_grammar=False)
        if not self._allows(token):
            self.refusals += 1
            token = self._pick(ctx, idx, with_grammar=True)
        self.accept(token)
        return token

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self.grammar, token)
        llama_cpp.llama_sampler_accept(self.chain.sampler, token)

    def close(self) -> None:
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self) -> None:
        self.close()

    def _pick(self, ctx: Any, idx: int, *, with_grammar: bool) -> int:
        logits = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        view = self._view
        view["id"] = self._ids
        view["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        view["p"] = 0.0
        candidates = llama_cpp.llama_token_data_array(
            data=self._candidates, size=self.n_vocab, selected=-1, sorted=False
        )
        if with_grammar:
            llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))
        if candidates.selected < 0:
            raise RuntimeError("llama.cpp's sampler chose no token")
        return int(candidates.data[candidates.selected].id)

    def _allows(self, token: int) -> bool:
        one = llama_cpp.llama_token_data(token, 1.0, 0.0)
        single = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(one), size=1, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(single))
        return not math.isinf(one.logit)
